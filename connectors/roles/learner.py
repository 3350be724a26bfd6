"""The learner role (`river-pa serve --role learn`): one active term while the lease
(roles/lease.py: election, standbys, fencing) is held, a standby before and after; with
`--shards N`, the active learner of the shard its lease partition names (connectors/shards/)."""

from __future__ import annotations

import dataclasses
import logging
import signal
import time

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.errors import LeaseLost, OutputError, SettingsConflict
from river_pa.connectors.kafka import errors
from river_pa.connectors.kafka.partitions import TopicPartition
from river_pa.connectors.loop.commit import FENCE_WAIT_S
from river_pa.connectors.loop.daemon import Daemon, watch_stop
from river_pa.connectors.loop.policy import Policy
from river_pa.connectors.models.slot import MODEL_FIELDS
from river_pa.connectors.roles.lease import Lease
from river_pa.connectors.shards.rounds import ShardRounds, fresh_mixing
from river_pa.connectors.state.snapshots import Publisher

__all__ = ["Learner", "LeaseLost", "run_learner"]

log = logging.getLogger("river_pa.serve")


class Learner(ShardRounds, Daemon):
    """The daemon of one active term: it learns while `lease` is held, raises LeaseLost after."""

    # emits nothing (the predictors do), publishes the model, learns the whole stream; the
    # group's state is the one in the state topic
    policy = Policy(emits=False, publishes=True, whole_stream=True, local_checkpoint_wins=False)

    lease: Lease  # set by `run_learner` before `run`

    def __init__(self, cfg: ServeConfig, model):
        super().__init__(cfg, model)
        self.state_name = f"{cfg.group_id}.learner"  # shared by every learner of the group
        self.partitions_checked = 0.0
        self.copartitioned = self.said_missing = False  # `_copartitioned`
        # shards/rounds.py: the newest mix, the round shard 0 published last, when the round
        # began, the records of the last batch
        self.mixed_model, self.published_round, self.round_began = None, 0, time.monotonic()
        self.last_batch = 0

    def lead(self, shard: int) -> None:
        """Lead `shard` (elected to its lease partition): with --shards its own state, its own
        checkpoint file and its own transactional id (shards/rounds.py)."""
        self.shard = shard
        if self.sharded:
            cfg = self.cfg
            self.cfg = dataclasses.replace(
                cfg, checkpoint_path=f"{cfg.checkpoint_path}.shard{shard}",
                transactional_id=f"{cfg.transactional_id}.shard{shard}")
            self.state_name = f"{cfg.group_id}.learner.shard{shard}"
            self.mixing = fresh_mixing(shard, cfg.shards)

    def _start(self) -> None:
        """Restore the group's state, then read the model topic: this term is numbered above
        every term in both topics, its versions above every version there (the challengers'
        own snapshots too: a version names one model), and the model already published is
        not published again (a new term used to republish it)."""
        super()._start()
        reader = self._snapshot_reader(self.cfg.model_topic, self.slot.snapshot, others=True,
                                       wanted={self.slot.name, *self.challengers})
        try:
            newest = max(reader.newest, reader.others_newest)
            self.term = max(self.term, newest[0] + 1)
            if self.state_publisher is not None:
                self.state_publisher.term = self.term
            self.model_version = newest[1]
            self.slot.publisher = Publisher(self.cfg.model_topic, self.slot.snapshot, self.term,
                                             newest[1], reader.manifests(),
                                             self.cfg.keep_versions)
            self.model_publishers, self.model_others = {}, reader.other_manifests()
            found = self._newest_valid(reader, self.cfg.model_topic, MODEL_FIELDS)
            self.slot.publisher.verified(found and found[0])
        finally:
            reader.close()
        log.info("term %d of the group's learner%s", self.term,
                 f" of shard {self.shard}" if self.sharded else "")
        self._start_mixing()
        for name, challenger in self.challengers.items():  # their own snapshots, as the state
            if challenger.published_as != self._own_newest(name):  # says (a kill between the
                challenger.published = -1                         # sends: published again)
        if found is None:
            return
        self.slot.manifest, _, published = found
        counts = self.stats.counts
        if published["learned"] == counts["learned"]:  # this state's model, published
            self.learned_at_publish, self.events_at_publish = counts["learned"], counts["events"]
        if self.sharded and published["learned"] == self.mixing["mixed_learned"]:
            self.published_round = self.mixing["round"]  # the last mix is published

    def _reset_state(self) -> None:
        super()._reset_state()
        self.mixing = fresh_mixing(self.shard, self.cfg.shards)

    def _state(self) -> dict:
        return {**super()._state(), "mixing": dict(self.mixing)}

    def _restore(self, state: dict) -> None:
        super()._restore(state)
        self.mixing = self._check_mixing(state.get("mixing"))
        if getattr(self, "mix_topic", None) is not None:  # a rollback, not the start
            self._read_mix_topic()
        if self.sharded and self.stats.counts["learned"] == self.mixing["learned_at_mix"] \
                and self.mixing["round"] > 1 and not self.mixing["sent"]:
            self.mixed_model = self.slot.model  # the last mix, nothing learned since

    def _step(self) -> None:
        """With --shards, a round that is due ends before another record is processed."""
        if self.sharded and self._round_due():
            return self._mix_round()
        super()._step()

    def _process_ready(self, deadline: float) -> int:
        self.last_batch = super()._process_ready(deadline)
        return self.last_batch

    def _publish(self) -> None:
        """With --shards, shard 0 publishes the mixes (shards/rounds.py), no shard its own;
        the lease is confirmed after every batch all the same (its consumer polled: shards
        with nothing to learn lost their leases every 21 s)."""
        if not self.sharded:
            return super()._publish()
        self._before_write()
        if self.shard == 0:
            self._publish_mix()

    def _publish_model(self) -> None:
        if not self.sharded:
            return super()._publish_model()
        if self.shard == 0:
            self._publish_mix()

    def _publish_challengers(self) -> None:
        if not self.sharded:  # shards have none (and leave other snapshots be)
            super()._publish_challengers()

    def figures(self) -> dict:
        figures = super().figures()
        if self.sharded:
            figures["shard"] = {k: self.mixing[k] for k in ("shard", "shards", "round", "sent")}
        return figures

    def _subscribe(self) -> None:
        """Assign every partition of the input topics to this consumer (no group join)."""
        self._follow_partitions()
        self.partitions_checked = time.monotonic()

    def _follow_partitions(self) -> None:
        """Assign the partitions the input topics have now; new ones start at their committed
        offset (or `auto_offset_reset`), the others where processing stopped."""
        for client in (self.consumer, self.offsets_client):  # a metadata request each: the
            if client is not None:                          # partitions added since are known
                client.topics()
        counts = {t: len(self.consumer.partitions_for_topic(t) or ()) for t in self.topics}
        if self.sharded:
            counts = dict.fromkeys(counts, self._copartitioned(counts))
        wanted = {TopicPartition(t, p) for t in self.topics for p in range(counts[t])
                  if p % self.cfg.shards == self.shard}
        if wanted != self.consumer.assignment():
            log.info("learning from %d partitions of %s", len(wanted), ", ".join(self.topics))
            self.consumer.assign(sorted(wanted))
            self.positions_unknown = True  # `_step` seeks every partition (`_resume`)

    def _copartitioned(self, counts: dict) -> int:
        """The partitions to follow of each input topic: their common count. An event and its
        label must reach the same shard: at the start, SettingsConflict unless every topic has
        the same count, at least one per shard; a topic that does not exist yet is waited
        for (nothing followed); later, while partitions are being added to one topic and not
        yet to the other, only the partitions both have (one line)."""
        common, found = min(counts.values()), ", ".join(f"{t} has {n}" for t, n in counts.items())
        if common == 0:
            if not self.said_missing:
                log.warning("shard %d waits for the input topics (%s partitions)", self.shard,
                            found)
            self.said_missing = True
        elif not self.copartitioned and (len(set(counts.values())) > 1
                                         or common < self.cfg.shards):
            raise SettingsConflict(
                f"river-pa serve: shards={self.cfg.shards} needs the events and labels topics "
                f"co-partitioned (the same partition count, at least one per shard, and an "
                f"event's key on its label): {found} partitions")
        elif len(set(counts.values())) > 1:
            log.warning("the input topics are not co-partitioned now (%s partitions): only the "
                        "first %d of each are followed", found, common)
        else:
            self.copartitioned = True
        return common

    def _check_membership(self, assigned) -> None:
        """Follow partitions added to the input topics (checked every 10 s; a metadata
        request that fails, a broker restarting, is tried again at the next check: kafka-python
        3.0.12 raised KafkaConnectionError from `topics()` and the learner exited 1)."""
        if time.monotonic() - self.partitions_checked >= 10:
            self.partitions_checked = time.monotonic()
            try:
                self._follow_partitions()
            except errors.ClientError as exc:
                log.warning("partitions of %s not checked (%s)", ", ".join(self.topics), exc)

    def _before_write(self) -> None:
        """Raise LeaseLost unless the lease is held and confirmed by the coordinator; the
        producer's unsent records (e.g. a model snapshot) are dropped first, so nothing more
        reaches the broker."""
        if not self.lease.confirm():
            self.client.close_producer(self.producer, 0)  # unsent records are dropped
            raise LeaseLost(f"the lease {self.lease.topic} of group {self.lease.group} is lost")


def _taken_over(cfg: ServeConfig, term: Learner, exc: BaseException) -> bool:
    """Whether the error that ended `term` says another learner took over (this one steps
    down and waits as a standby) rather than a failure (raised: exit 1)."""
    # IllegalState ("Cannot call send in state READY"): kafka-python 3.0.12 after another
    # producer's init_transactions ended our transaction under us
    if isinstance(exc, LeaseLost) or (cfg.exactly_once and isinstance(exc, errors.IllegalState)):
        return True
    producer = getattr(term, "producer", None) if cfg.exactly_once else None
    return term.client.fenced(exc, producer, FENCE_WAIT_S)


def run_learner(cfg: ServeConfig, model, observers=()) -> int:
    """Run `--role learn`: standby until elected, active until the lease is lost or the
    producer fenced, then standby again; 0 after SIGTERM/SIGINT. Other errors propagate.
    The `observers` (connectors/observe/metrics.py's endpoints and watchdog) watch the daemon of the
    current term (a standby: live, ready once in the lease group, nothing counted yet)."""
    stop, term = [], None

    def on_signal(signum, frame):
        log.info("signal %d: leaving the lease group", signum)
        if not stop:  # leaving waits for the broker: not for ever when it is gone
            watch_stop(cfg)
        stop.append(signum)
        if term is not None:  # elected as the signal came, before its run took the signals
            term.stopping = True

    # a signal between a term's end and its handler's replacement here goes to that term's
    # handler (`Daemon._on_signal`): its `stopping` ends the loop too (a new user's SIGTERM
    # while a learner stepped down was lost: it was elected again and served on)
    while not stop and not (term is not None and term.stopping):
        for sig in (signal.SIGTERM, signal.SIGINT):  # a term installs its own, restored here
            signal.signal(sig, on_signal)
        term = Learner(cfg, model)  # a standby's endpoints show it: nothing served yet
        for observer in observers:
            observer.daemon = term
        term.lease = lease = Lease(cfg)
        try:
            # a standby stopped just as the lease came to it leaves instead of leading (the
            # fault harness's seed 5: it restored the state and served on for 60 s)
            if not lease.wait(lambda: bool(stop), term.health) or stop:
                break
            # restoring is starting (live, not ready): the loop beats again from its start
            health = term.health
            health.beat, health.ready, health.why = None, False, "restoring the state"
            term.lead(lease.shard)
            log.info("active learner: holds the lease %s of group %s%s; restoring the state "
                     "from %s", lease.topic, lease.group,
                     f" (shard {lease.shard} of {cfg.shards})" if cfg.shards > 1 else "",
                     cfg.state_topic)
            try:
                term.run()
            except (LeaseLost, errors.ClientError, OutputError) as exc:
                if not _taken_over(cfg, term, exc):
                    raise
                log.warning("stepping down, writing nothing more: %s", exc)
            # the term's own handler took the signal (`Daemon.run`): a term that lost the lease
            # in its final checkpoint was elected again and served on (a CI run under load)
            if term.stopping:
                break
        finally:
            lease.close()
    return 0
