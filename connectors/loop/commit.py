"""Commit and rollback: the outputs checked, the checkpoint written, then the offsets it covers
committed (or sent in the transaction); a failed transaction or a batch refused as too large
rolls back to the last checkpoint, with a new producer when a call did not end."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from river_pa.connectors.errors import OutputTooLarge
from river_pa.connectors.kafka import errors
from river_pa.connectors.kafka.partitions import offsets_to_commit, tp_key
from river_pa.connectors.kafka.diagnostics import quiet_bootstrap
from river_pa.connectors.kafka.outputs import topic_limits
from river_pa.connectors.state import checkpoint

__all__ = ["Commits"]

FENCE_WAIT_S = 10.0  # how long an epoch bump under way is waited for (kafka.client.fenced)

log = logging.getLogger("river_pa.serve")


class Commits:
    """Checkpoints, commits, rollbacks and the producer they may replace."""

    def _before_write(self) -> None:
        """Called before every write of a model, report, checkpoint or commit, and before a
        new producer (the learner confirms its lease there)."""

    def _checkpoint_due(self) -> bool:
        """Due after `checkpoint_every` records, or after `checkpoint_seconds` if a record came
        or the group's offsets are behind this daemon's positions (`_commit_behind`)."""
        if 0 < self.cfg.checkpoint_every <= self.since_checkpoint:
            return True
        if time.monotonic() - self.last_checkpoint < self.cfg.checkpoint_seconds:
            return False
        return self.since_checkpoint > 0 or self._commit_behind()

    def _commit_behind(self) -> bool:
        """True when an assigned partition was processed past the group's committed offset.
        With no record to follow, nothing else commits it: a commit refused in a rebalance
        after a partition's last record (soak seed 486), or a partition processed to its end,
        revoked before the checkpoint and assigned back (seed 534), left the group's offsets
        behind for good."""
        positions = self._commit_positions()
        return any(positions.get(tp_key(tp), -1) > self.committed_upto.get(tp_key(tp), -1)
                   for tp in self.consumer.assignment())

    def checkpoint_and_commit(self, reopen: bool = True, group=None) -> None:
        """Flush outputs, write the checkpoint, then commit the offsets it covers.

        With exactly-once the offsets go into the open transaction (with the consumer `group`
        metadata), which is committed after the checkpoint is on disk (a new transaction is
        begun unless `reopen` is false).
        """
        offsets = offsets_to_commit(self._commit_positions(), self.consumer.assignment())
        if self.cfg.exactly_once:
            self.client.transact(self.producer, "send_offsets_to_transaction", offsets, group)
        self.outputs.check()  # raises before the checkpoint and the commit if a send failed
        self._persist()
        if self.cfg.exactly_once:
            self.client.transact(self.producer, "commit_transaction")
            self._committed(offsets)
            if reopen:
                self.producer.begin_transaction()
        elif offsets:
            self._commit(offsets)
        self.counts_at_commit = self.stats.counts.copy()  # what a predictor's rollback restores
        self._publish_committed()
        self.since_checkpoint = 0
        self.last_checkpoint = time.monotonic()

    def _commit_positions(self) -> dict[str, int]:
        """The next offsets, none below its partition's floor (see `_resume_offset`)."""
        positions = dict(self.next_offsets)
        for tp, floor in self.floors.items():
            if tp_key(tp) in positions:
                positions[tp_key(tp)] = max(positions[tp_key(tp)], floor)
        return positions

    def _persist(self) -> None:
        """Write the checkpoint (and its copy to the state topic); a daemon that keeps no
        state (the predictor) commits its offsets alone."""
        if not self.policy.keeps_state:
            return
        publisher = self.state_publisher
        checkpoint.save(self.cfg.checkpoint_path, self._state(), self.slot.model,
                        dict(self.next_offsets), self.key, publisher and publisher.next_stamp())
        if publisher:  # with exactly-once, in the transaction of the offsets
            publisher.publish(self.outputs.send, Path(self.cfg.checkpoint_path).read_bytes())
            self.outputs.check()

    def _commit(self, offsets: dict) -> None:
        """Commit offsets; a failure (a rebalance took the partitions, the broker is away) is
        not fatal: the checkpoint on disk covers them, and the commit is tried again at the
        next checkpoint, due also when no record follows (`_checkpoint_due`)."""
        try:
            self.consumer.commit(offsets)
        except errors.ClientError as exc:
            log.warning("offset commit failed (%s); the checkpoint still covers them", exc)
            return
        self._committed(offsets)

    def _committed(self, offsets: dict) -> None:
        self.committed_upto.update({tp_key(tp): meta.offset for tp, meta in offsets.items()})

    def _checkpoint_or_rollback(self) -> None:
        """Checkpoint and commit; with exactly-once, a failed transaction (a rebalance moved
        partitions meanwhile) is aborted and the state rolled back to the last checkpoint.
        A batch refused as too large (a topic's limit lowered while serving) rolls back in
        either mode, with a producer sized for the limits read again."""
        self._before_write()
        group = None
        if self.cfg.exactly_once:
            group = self.consumer.group_metadata()  # the broker fences it if a rebalance follows
            if self.rebalances.pending():  # a rebalance before it: see _step
                return self._rollback("partitions were revoked during the transaction")
        try:
            self.checkpoint_and_commit(group=group)
        except OutputTooLarge as exc:
            self._rollback(exc)
        except errors.ClientError as exc:
            if not self.cfg.exactly_once or isinstance(exc, errors.ProducerFenced):
                raise  # at least once: nothing committed past it; fenced: another owns our id
            if self.stopping and isinstance(exc, errors.ClientTimeout):
                # a stop does not wait for a new producer (its init_transactions waits as long
                # again): the next start serves again what the open transaction held (the
                # fault harness's seed 136: a predictor still running 60 s after SIGTERM)
                raise errors.ClientTimeout(f"stopped without a final checkpoint: {exc} (the "
                                        "records since the last one are served again at the "
                                        "next start)") from exc
            self._rollback(exc)

    def _rollback(self, why) -> None:
        """Abort the transaction (or replace the producer, see `_replace_producer`); restore
        the last checkpoint; seek to the committed offsets (at least once: the checkpoint's)."""
        log.warning("rolling back %s: %s", "the open transaction" if self.cfg.exactly_once
                    else "to the last checkpoint", why)
        if isinstance(why, (errors.ClientTimeout, OutputTooLarge)):  # a call did not end (so
            self._replace_producer(why)                          # would the abort), or limits
        elif self.cfg.exactly_once:
            try:
                self.client.transact(self.producer, "abort_transaction")
                self.outputs.forget_aborted()
            except errors.ClientError as exc:
                # did not end, or failed: a new producer ends the transaction at the
                # coordinator (soak seed 570: librdkafka made the broker's INVALID_TXN_STATE
                # answer to an abort fatal, and a predictor exited 1); fenced: another took
                # our transactional id, raised
                if self.client.fenced(exc, self.producer, FENCE_WAIT_S):
                    raise
                self._replace_producer(exc)
        if self.cfg.exactly_once:
            self.producer.begin_transaction()
        self.order.drop(list(self.order.buffers))
        self.buffered_upto.clear()
        events = self.stats.counts["events"]
        self.load()
        self._publish_rolled_back()
        self.events_this_run -= events - self.stats.counts["events"]  # served again
        resumed = {}
        for tp in self.consumer.assignment():
            offset = resumed[tp_key(tp)] = self._resume_offset(tp, self.consumer.committed(tp))
            self._seek(tp, offset)
        log.info("rolled back: resuming at %s (None: where auto_offset_reset says)", resumed)
        self.since_checkpoint = 0

    def _replace_producer(self, why) -> None:
        """Replace the producer by a new one sized for the output topics' limits read again.

        With exactly-once (a transactional call that did not end, see `kafka.client.transact`) it
        has the same transactional id: its `init_transactions` fences the old one and ends the
        open transaction at the coordinator (aborted, or committed if the commit had reached
        it; `load` then picks the checkpoint that matches the committed offsets). The old
        producer is closed on a thread of its own: its sends fail once it is fenced."""
        self._before_write()  # a new producer fences whoever holds the transactional id
        log.warning("replacing the producer: %s", why)
        old = self.producer
        limits = topic_limits(self.cfg, self.output_topics)
        with quiet_bootstrap():
            self.producer = self.client.make_producer(self.cfg, limits)
        self.outputs.replace(self.producer, limits)
        if self.cfg.exactly_once:
            self.producer.init_transactions()  # bounded by max_block_ms: errors.ClientTimeout
        threading.Thread(target=self.client.close_producer, args=(old,), name="river-pa-old-producer",
                         daemon=True).start()

    def _final_checkpoint(self) -> None:
        """On a requested stop: last report, checkpoint and commit (closing the transaction).

        Also when this run processed no record but has a model to publish or sent something
        (`since_checkpoint`): a learner that restored a state newer than the model topic's
        newest snapshot and was stopped before a checkpoint aborted the transaction holding
        that snapshot, and the predictors served an older model for ever (soak seed 489).
        Never while a version is pinned: the stop of a pinned learner published the live
        model, and the predictors served it, pin or not (models/pinning.py).
        """
        if self.policy.publishes and self.control["pinned"] is None:
            if self.stats.counts["learned"] > self.learned_at_publish:
                self._publish_model()
            else:  # those that learned since (models/publishing.py)
                self._publish_challengers()
        if self.processed_this_run or self.since_checkpoint or self._commit_behind():
            self._report()
            self._checkpoint_or_rollback()
        if self.cfg.exactly_once:
            # the empty one begun after the last commit
            self.client.transact(self.producer, "abort_transaction")
