"""The learner role (`river-pa serve --role learn`): one active term while the lease
(roles/lease.py: election, standbys, fencing) is held, a standby before and after."""

from __future__ import annotations

import logging
import signal
import time

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.errors import LeaseLost, OutputError
from river_pa.connectors.kafka import errors
from river_pa.connectors.kafka.partitions import TopicPartition
from river_pa.connectors.loop.commit import FENCE_WAIT_S
from river_pa.connectors.loop.daemon import Daemon, watch_stop
from river_pa.connectors.loop.policy import Policy
from river_pa.connectors.models.slot import MODEL_FIELDS
from river_pa.connectors.roles.lease import Lease
from river_pa.connectors.state.snapshots import Publisher

__all__ = ["Learner", "LeaseLost", "run_learner"]

log = logging.getLogger("river_pa.serve")



class Learner(Daemon):
    """The daemon of one active term: it learns while `lease` is held, raises LeaseLost after."""

    # emits nothing (the predictors do), publishes the model, learns the whole stream; the
    # group's state is the one in the state topic
    policy = Policy(emits=False, publishes=True, whole_stream=True, local_checkpoint_wins=False)

    lease: Lease  # set by `run_learner` before `run`

    def __init__(self, cfg: ServeConfig, model):
        super().__init__(cfg, model)
        self.state_name = f"{cfg.group_id}.learner"  # shared by every learner of the group
        self.partitions_checked = 0.0

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
        log.info("term %d of the group's learner", self.term)
        for name, challenger in self.challengers.items():  # their own snapshots, as the state
            if challenger.published_as != self._own_newest(name):  # says (a kill between the
                challenger.published = -1                         # sends: published again)
        if found is None:
            return
        self.slot.manifest, _, published = found
        counts = self.stats.counts
        if published["learned"] == counts["learned"]:  # this state's model, published
            self.learned_at_publish, self.events_at_publish = counts["learned"], counts["events"]

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
        wanted = {TopicPartition(t, p) for t in self.topics
                  for p in self.consumer.partitions_for_topic(t) or ()}
        if wanted != self.consumer.assignment():
            log.info("learning from %d partitions of %s", len(wanted), ", ".join(self.topics))
            self.consumer.assign(sorted(wanted))
            self.positions_unknown = True  # `_step` seeks every partition (`_resume`)

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

    while not stop:
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
            log.info("active learner: holds the lease %s of group %s; restoring the state "
                     "from %s", lease.topic, lease.group, cfg.state_topic)
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
