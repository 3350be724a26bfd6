"""Positions and flow control: where each partition resumes after a rebalance, a rollback or
a start; the records buffered for the event-time order and the end offsets that release them;
membership, health beats and lag."""

from __future__ import annotations

import logging
import time

from river_pa.connectors.kafka import errors
from river_pa.connectors.kafka.admin import group_size
from river_pa.connectors.kafka.partitions import TopicPartition, tp_key

__all__ = ["Positions"]

log = logging.getLogger("river_pa.serve")


class Positions:
    """The consumer's positions: seeks, buffers, end offsets, rejoins."""

    def _resume(self) -> None:
        """After a rebalance (and at start), seek every partition this member owns to where
        its processing stopped (`_resume_offset`).

        Buffered records are dropped and fetched again: kafka-python keeps the fetch position
        of a partition the member keeps, past those records, which were lost for good.
        """
        self.order.drop(list(self.order.buffers))
        self.buffered_upto.clear()
        self.positions_unknown = False
        committed = {}
        for tp in self.consumer.assignment():
            try:
                committed[tp] = self.consumer.committed(tp)
            except errors.ClientError as exc:  # the coordinator is away: try again after the next poll
                log.warning("committed offset of %s unknown (%s)", tp, exc)
                self.positions_unknown = True
                return
        self._check_state(committed)
        self.committed_upto = {tp_key(tp): o for tp, o in committed.items() if o is not None}
        for tp, offset in committed.items():
            self._seek(tp, self._resume_offset(tp, offset))

    def _resume_offset(self, tp: TopicPartition, committed: int | None) -> int | None:
        """Where `tp` resumes given the group's `committed` offset (None: where
        `auto_offset_reset` says).

        A model learned from this daemon's own state resumes where that state stopped, also
        when it is older than `committed` (an older snapshot or checkpoint restored): the
        learner always, `--role both` for a partition not positioned since its state was
        restored at start (`from_state`). The records in between are learned again; their
        outputs (predictions, dead letters) were sent before and are not sent again, and the
        offsets committed never go below `committed` meanwhile (`floors`), so a crash during
        the catch-up does not forget where they end. A partition the state has no offset for
        starts, for the learner, where `auto_offset_reset` says (the state never learned it),
        for a member of a group at `committed`. Otherwise (a predictor, a member after a
        rebalance) a partition another member moved further than this one's position resumes
        at `committed`: that member served and learned them, and committing the older offset
        would move the group's backwards.
        """
        key, learner = tp_key(tp), self.policy.whole_stream
        mine, floor = self.next_offsets.get(key), self.floors.pop(tp, None)
        if committed is None or (mine is not None and mine >= committed):
            return mine
        relearn = learner or key in self.from_state or committed == floor  # (our own floor)
        self.from_state.discard(key)
        if not relearn or (mine is None and not learner):
            self.next_offsets[key] = committed
            return committed
        self.floors[tp] = committed
        return mine

    def _replayed(self, record) -> bool:
        """True for a record below the floor of its partition (relearned, its outputs sent)."""
        floor = self.floors.get(TopicPartition(record.topic, record.partition))
        return floor is not None and record.offset < floor

    def _seek(self, tp: TopicPartition, offset: int | None) -> None:
        """Seek to `offset`, or where `auto_offset_reset` says when it is None.

        A partition revoked meanwhile is skipped (the rebalance runs on the client's IO thread,
        so it can land between two calls of this loop; the seek raised ValueError and the
        daemon died): the `_resume` after the next poll sets the positions of the new
        assignment.
        """
        try:
            if offset is not None:
                self.consumer.seek(tp, offset)
            elif self.cfg.auto_offset_reset == "latest":
                self.consumer.seek_to_end(tp)
            else:
                self.consumer.seek_to_beginning(tp)
        except (ValueError, errors.IllegalState):
            log.info("%s was revoked before it could be sought", tp)

    def _beat(self, assigned) -> None:
        """Tell the health endpoints that the loop steps, whether it is ready and, once a
        second, each partition's lag: the high watermark of its last fetch minus the next
        offset to process (both known locally: no request)."""
        health = self.health
        health.beat = time.monotonic()
        health.ready, health.why = self._readiness(assigned)
        if health.beat - health.lag_at < 1.0:
            return
        health.lag_at, lag = health.beat, {}
        for tp in assigned:
            high, done = self.consumer.highwater(tp), self.next_offsets.get(tp_key(tp))
            if high is not None and done is not None:
                lag[(tp.topic, tp.partition)] = max(high - done, 0)
        health.lag = lag

    def _readiness(self, assigned) -> tuple[bool, str]:
        """(ready, why not): a member is ready once it has partitions."""
        return (True, "ok") if assigned else (False, "no partition assigned")

    def _check_membership(self, assigned) -> None:
        """Rejoin when no partition came for a while although the topics have more partitions
        than the group has members (seen after starting before the topics existed: the
        member sat with nothing for minutes, without a word)."""
        if assigned:
            self.unassigned_since = None
            return
        now = time.monotonic()
        if self.unassigned_since is None:
            self.unassigned_since = now
        wait_s = max(10.0, 3 * self.cfg.session_timeout_ms / 1000)
        if now - self.unassigned_since < wait_s:
            return
        self.unassigned_since = now
        try:  # a metadata request (kafka-python 3.0.12 raises if its broker is away)
            partitions = len(self.consumer.partitions_for_topic(self.cfg.events_topic) or ())
        except errors.ClientError as exc:
            log.warning("partitions of %s unknown (%s)", self.cfg.events_topic, exc)
            return
        members = group_size(self.cfg)
        # also with no member at all: a first join that never completed (seen under load:
        # with the rejoin skipped for that case, daemons sat for 2 minutes with nothing)
        if partitions > members:
            log.warning("no partition assigned for %.0f s although %s has %d partitions and the "
                        "group %d members: rejoining", wait_s,
                        self.cfg.events_topic, partitions, members)
            self.consumer.unsubscribe()
            self.consumer.subscribe(self.topics, listener=self.rebalances)

    def _buffer(self, tp: TopicPartition, records: list) -> None:
        """Buffer records not processed yet; records below our position are replays."""
        start = max(self.next_offsets.get(tp_key(tp), 0), self.buffered_upto.get(tp, 0))
        fresh = [r for r in records if r.offset >= start]
        if fresh:
            self.order.add(tp, fresh)
            self.buffered_upto[tp] = fresh[-1].offset + 1
        elif records and records[-1].offset + 1 < start:
            self._seek(tp, start)

    def _exhausted(self, tp: TopicPartition) -> bool:
        """True when every record of `tp` up to the broker's end offset has been buffered."""
        try:  # errors.IllegalState: revoked meanwhile (see _seek)
            highwater = self.consumer.highwater(tp)
            known = self.buffered_upto.get(tp, self.next_offsets.get(tp_key(tp)))
            if known is None:
                known = self.consumer.position(tp, timeout_ms=1000)
        except errors.IllegalState:
            return True
        except errors.BrokerAway:  # no broker (kafka-python's lookup of the group
            return False              # coordinator, see kafka.client.poll): hold the other back
        if known is None or (highwater is not None and known < highwater):
            return False
        # The high watermark is the one of the last fetch of `tp`, which can be far behind
        # while the other partition keeps being fetched: with a live producer, labels were
        # released before their events (orphans, lost once committed). It stays unknown for
        # a partition that never had a record (labels waited for ever). Ask the broker.
        return known >= self._log_end(tp)

    def _log_end(self, tp: TopicPartition) -> int:
        """The broker's end offset of `tp`, asked at most once per poll (2**63: unknown).

        The first question of a poll asks for every assigned partition in one request: one
        round trip per partition took an eighth of the learner's time on 2 x 6 partitions.
        """
        if tp not in self.log_ends:
            wanted = {tp, *self.consumer.assignment()}.difference(self.log_ends)
            try:
                self.log_ends.update(self.offsets_client.end_offsets(list(wanted)))
            # the broker is away: hold the other side back. KeyError: kafka-python 3.0.12's
            # end_offsets when a partition got no answer (its leader restarting; it indexes
            # the answers by every partition asked: the learner died in a rolling restart)
            except (errors.ClientError, KeyError) as exc:
                log.warning("end offset of %s unknown (%s: %s)", tp, type(exc).__name__, exc)
                self.log_ends[tp] = 2**63
        return self.log_ends[tp]

    def _flow_control(self) -> None:
        """Bound the merge buffers: drop the newest records beyond the limit and seek back
        to them, so they are fetched again once the other side has caught up (pause/resume
        left a partition unfetched for good with kafka-python 3.0.12)."""
        for tp in list(self.buffered_upto):
            first_dropped = self.order.truncate(tp, self.cfg.max_buffered)
            if first_dropped is not None:
                self.buffered_upto[tp] = first_dropped
                self._seek(tp, first_dropped)
