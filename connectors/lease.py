"""Exactly one active learner (`river-pa serve --role learn`): election, standbys, fencing.

Every learner process joins the consumer group `<group_id>.lease` on the one-partition topic
`<events_topic>.lease` (created if missing; nothing is ever written to it). Kafka's group
coordinator gives partition 0 to one member: that one is the active learner, the others are
standbys that say so once and keep polling the lease consumer (keeping their membership).
The lease stays with its owner while standbys come and go (`LeaseAssignor`), and a member is
the active learner only under the member id it was elected with: a member whose session
expired (a SIGSTOP) rejoins under a new id, so its old term has lost the lease whatever the
next assignment says.

The active learner assigns itself every partition of the events and labels topics (no
group rebalances; partitions added later are followed), restores the whole state of the
group's learner (model, pending, early labels, metrics, offsets) from the state topic under
the name `<group_id>.learner`, commits offsets under `<group_id>`, and checks the lease at
every batch, and before every write (model snapshot, report, checkpoint, commit) it has the
coordinator confirm it: an offset commit of the lease partition, which the coordinator refuses
from a member whose session expired (a SIGSTOP, a paused VM: its consumer cannot know yet) or
of an older generation. It steps down, writing nothing more, when the lease is gone or not
confirmed, and when its producer is fenced: with `--exactly-once` every learner of the group
uses the transactional id `<group_id>.learner`, so a new active learner's `init_transactions`
aborts the old one's open transaction and the old producer's later writes are refused
(`ProducerFencedError`). A learner that stepped down closes its clients and becomes a standby
again, in the same process. Each active term is numbered above every term found in the state
and model topics (connectors/snapshots.py), so a zombie's late snapshots are never newer than
the new learner's. Kafka has the election (a group) and the fencing (transactions) but no lease
on top of them, hence this module.

"""

from __future__ import annotations

import logging
import signal
import time

from kafka import KafkaConsumer
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.errors import (
    CommitFailedError, IllegalStateError, InvalidProducerEpochError, KafkaError,
    ProducerFencedError, RebalanceInProgressError,
)
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment, ConsumerProtocolSubscription,
)
from kafka.structs import MemberState, OffsetAndMetadata, TopicPartition

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.daemon import (
    MODEL_FIELDS, Daemon, close_producer, ensure_topic, watch_stop,
)
from river_pa.connectors.kafka_io import (
    CLIENT_DEFAULTS, OutputError, client_settings, fenced_by_state, poll,
)
from river_pa.connectors.snapshots import Publisher

__all__ = ["Lease", "LeaseAssignor", "LeaseLost", "Learner", "run_learner"]

log = logging.getLogger("river_pa.serve")

FENCED = (ProducerFencedError, InvalidProducerEpochError)
FENCE_WAIT_S = 10.0  # how long an epoch bump under way is waited for (see fenced_by_state)


class LeaseLost(RuntimeError):
    """The active learner no longer holds the lease: it must write nothing more."""


class LeaseAssignor(CooperativeStickyAssignor):
    """Cooperative sticky, with stale claims refused: every member advertises the partitions
    it owns with the generation it got them in (subscription v2, as Kafka's Java client does),
    and a partition claimed by several members goes to the newest claim. kafka-python 3.0.12's
    assignor advertises its last assignment even after the member's session expired, without
    a generation, and the leader kept whichever claim it read last: a SIGCONTed zombie's
    rejoin moved the lease back from the learner elected meanwhile (seen 1 in 3 runs of
    test_a_zombie_learner_steps_down_and_writes_nothing). A partition never moves while its
    owner is in the group; unclaimed ones go to the members holding fewest. The name stays
    "cooperative-sticky" so learners of the previous release share a protocol with these
    during a rolling update.
    """

    def metadata(self, topics):
        owned = super().metadata(topics).owned_partitions
        return ConsumerProtocolSubscription(version=2, topics=sorted(topics), user_data=b"",
                                            owned_partitions=owned, generation_id=self.generation)

    def assign(self, cluster, members):
        claims, held = {}, {m.member_id: [] for m in members}  # partition: (generation, member)
        for member in members:
            meta = self.parse_member_metadata(member.metadata)
            for tp in meta.partitions:
                claims[tp] = max(claims.get(tp, (-2, "")), (meta.generation, member.member_id))
        for member in members:
            meta = self.parse_member_metadata(member.metadata)
            for topic in sorted(meta.subscription):
                for p in sorted(cluster.partitions_for_topic(topic) or ()):
                    tp = TopicPartition(topic, p)
                    if tp not in claims:  # to the subscribers holding fewest, in id order
                        fewest = min(sorted(held), key=lambda m: len(held[m]))
                        claims[tp] = (StickyPartitionAssignor.DEFAULT_GENERATION_ID, fewest)
        for tp, (_, member) in claims.items():
            if member in held:
                held[member].append(tp)
        return {member: ConsumerProtocolAssignment(self.version, _by_topic(tps), b"")
                for member, tps in held.items()}


def _by_topic(tps) -> list:
    """[(topic, [partition, ...]), ...] sorted: the assignment's wire shape."""
    topics = {}
    for tp in sorted(tps):
        topics.setdefault(tp.topic, []).append(tp.partition)
    return sorted(topics.items())


class Lease:
    """This process's membership of the lease group; `held` says whether it is the active one.

    The lease is this member's while partition 0 of the lease topic is assigned to it under
    the member id it had when it first held it (`member`); `held` says what the consumer
    knows, `confirm` asks the coordinator.
    """

    def __init__(self, cfg: ServeConfig):
        self.topic, self.group = f"{cfg.events_topic}.lease", f"{cfg.group_id}.lease"
        ensure_topic(cfg, self.topic)
        self.tp = TopicPartition(self.topic, 0)
        self.consumer = KafkaConsumer(**{
            "bootstrap_servers": cfg.bootstrap_servers,
            "group_id": self.group,
            "client_id": f"{cfg.client_id}-lease",
            "enable_auto_commit": False,
            "session_timeout_ms": cfg.session_timeout_ms,
            "heartbeat_interval_ms": max(cfg.session_timeout_ms // 4, 100),
            "partition_assignment_strategy": (LeaseAssignor,),
            **CLIENT_DEFAULTS,
            **client_settings(cfg.kafka, KafkaConsumer),
        })
        self.consumer.subscribe([self.topic])
        session_s = self.consumer.config["session_timeout_ms"] / 1000  # [kafka] may set it
        self.confirm_s = max(2 * session_s, 5.0)  # how long a rebalance under way is waited for
        # a confirmation stands for a quarter of the session: the member heartbeats every
        # quarter, so the coordinator cannot expire it sooner; any stall makes it stale
        self.valid_s, self.confirmed_at = session_s / 4, -float("inf")
        self.member = None  # the member id this process was elected under

    def held(self, timeout_ms: int = 0) -> bool:
        """Poll the lease consumer (joining, heartbeats, rebalances); True while partition 0
        is assigned to this member, under the member id it was elected with, as far as it
        knows."""
        poll(self.consumer, timeout_ms)
        return self._ours()

    def _ours(self) -> bool:
        member = self.consumer.group_metadata().member_id
        if self.tp not in self.consumer.assignment():
            return False
        if self.member is None:  # elected now
            self.member = member
        return member == self.member

    def confirm(self) -> bool:
        """True when the coordinator accepts an offset commit of the lease partition from this
        member (its session has not expired and its generation is the group's), asked at most
        once per `valid_s`; then the consumer is polled. The commit comes first: a member that
        was expired (a SIGSTOP) is refused before a poll could rejoin it with its stale claim
        on the partition, which moved the lease away from the new owner. A rebalance under
        way (a standby joining) is waited for, up to `confirm_s`."""
        start = time.monotonic()
        deadline = start + self.confirm_s
        while self._ours():
            if start - self.confirmed_at < self.valid_s:
                return self.held()
            try:
                self.consumer.commit({self.tp: OffsetAndMetadata(0, "", -1)}, timeout_ms=1000)
                self.confirmed_at = start
                continue
            except KafkaError as exc:
                rebalancing = any(isinstance(a, RebalanceInProgressError) for a in exc.args)
                if isinstance(exc, CommitFailedError) and not rebalancing:
                    log.warning("the coordinator refused the lease: %s", exc)
                    return False  # expired, or another generation: not ours
                # a rebalance under way (a standby joining), the coordinator moving
                if time.monotonic() > deadline:
                    log.warning("the lease could not be confirmed in %.0f s: %s",
                                self.confirm_s, exc)
                    return False
                self.held(100)
        return False

    def wait(self, stopping, health) -> bool:
        """Wait as a standby until this member holds the lease (True) or `stopping()` (False).
        `health` (the endpoints') beats at each poll and is ready once this member is in the
        group: a standby does its job, and a rolling update must not wait for it to lead.
        The beat starts now: a first poll that never returns (kafka-python 3.0.12 can wait for
        ever in it, docs/serving/operations.md) turns /livez 503."""
        said, health.beat = False, time.monotonic()
        while not stopping():
            if self.held(500):  # 500 ms per poll: no busy loop, heartbeats go on meanwhile
                return True
            health.beat = time.monotonic()
            if not said and self.consumer.group_metadata().state == MemberState.STABLE:
                log.info("standby: the lease %s of group %s is another learner's; waiting",
                         self.topic, self.group)
                said = True
                health.ready, health.why = True, "standby: another learner holds the lease"
        return False

    def close(self) -> None:
        """Leave the group (a standby gets the lease at once) and close the consumer."""
        self.consumer.close(autocommit=False)


class Learner(Daemon):
    """The daemon of one active term: it learns while `lease` is held, raises LeaseLost after."""

    local_checkpoint_wins = False  # the group's state is the one in the state topic

    lease: Lease  # set by `run_learner` before `run`

    def __init__(self, cfg: ServeConfig, model):
        super().__init__(cfg, model)
        self.state_name = f"{cfg.group_id}.learner"  # shared by every learner of the group
        self.partitions_checked = 0.0

    def _start(self) -> None:
        """Restore the group's state, then read the model topic: this term is numbered above
        every term in both topics, its versions above every version there, and the model
        already published is not published again (a new term used to republish it)."""
        super()._start()
        reader = self._snapshot_reader(self.cfg.model_topic, "model")
        try:
            self.term = max(self.term, reader.newest[0] + 1)
            if self.state_publisher is not None:
                self.state_publisher.term = self.term
            self.model_publisher = Publisher(self.cfg.model_topic, "model", self.term,
                                             reader.newest[1], reader.manifests())
            found = self._newest_valid(reader, self.cfg.model_topic, MODEL_FIELDS)
        finally:
            reader.consumer.close()
        log.info("term %d of the group's learner", self.term)
        if found is None:
            return
        self.model_manifest, _, published = found
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
            except KafkaError as exc:
                log.warning("partitions of %s not checked (%s)", ", ".join(self.topics), exc)

    def _confirm(self) -> None:
        """Raise LeaseLost unless the lease is held and confirmed by the coordinator; the
        producer's unsent records (e.g. a model snapshot) are dropped first, so nothing more
        reaches the broker."""
        if not self.lease.confirm():
            close_producer(self.producer, 0)  # unsent records are dropped
            raise LeaseLost(f"the lease {self.lease.topic} of group {self.lease.group} is lost")

    def _publish(self) -> None:
        self._confirm()  # called after every batch: the lease consumer is polled there
        super()._publish()

    def _publish_model(self) -> None:
        self._confirm()
        super()._publish_model()

    def _report(self) -> dict:
        self._confirm()
        return super()._report()

    def _checkpoint_or_rollback(self) -> None:
        self._confirm()
        super()._checkpoint_or_rollback()

    def _replace_producer(self, why) -> None:
        self._confirm()  # a new producer fences whoever holds the transactional id: not ours
        super()._replace_producer(why)  # if the lease moved meanwhile


def fenced(exc: BaseException) -> bool:
    """True when `exc` (or what caused it) says another producer took our transactional id."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, FENCED) or any(isinstance(a, FENCED) for a in exc.args):
            return True
        if any(cls.__name__ in str(exc) for cls in FENCED):  # kafka-python formats some
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _taken_over(cfg: ServeConfig, term: Learner, exc: BaseException) -> bool:
    """Whether the error that ended `term` says another learner took over (this one steps
    down and waits as a standby) rather than a failure (raised: exit 1)."""
    if isinstance(exc, LeaseLost) or fenced(exc):
        return True
    # IllegalStateError ("Cannot call send in state READY"): kafka-python 3.0.12 after another
    # producer's init_transactions ended our transaction under us
    return cfg.exactly_once and (isinstance(exc, IllegalStateError) or fenced_by_state(
        getattr(term, "producer", None), FENCE_WAIT_S))


def run_learner(cfg: ServeConfig, model, observers=()) -> int:
    """Run `--role learn`: standby until elected, active until the lease is lost or the
    producer fenced, then standby again; 0 after SIGTERM/SIGINT. Other errors propagate.
    The `observers` (connectors/metrics.py's endpoints and watchdog) watch the daemon of the
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
            except (LeaseLost, KafkaError, OutputError) as exc:
                if not _taken_over(cfg, term, exc):
                    raise
                log.warning("stepping down, writing nothing more: %s", exc)
                continue
            if term.stopping:
                break
        finally:
            lease.close()
    return 0
