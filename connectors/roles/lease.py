"""Exactly one active learner (`river-pa serve --role learn`): election, standbys, fencing.

Every learner process joins the consumer group `<group_id>.lease` on the topic
`<events_topic>.lease` (`<group_id>.lease.<N>` on `<events_topic>.lease.<N>` with `--shards N`:
one partition per shard; created if missing, nothing is ever written to it). Kafka's group coordinator gives each partition to one member, at most one
to a member: the member given partition s is the active learner of shard s (partition 0 and
shard 0 without shards: the one learner), the others are standbys that say so once and keep
polling the lease consumer (keeping their membership).
The lease stays with its owner while standbys come and go (`LeaseAssignor`), and a member is
the active learner only under the member id it was elected with: a member whose session
expired (a SIGSTOP) rejoins under a new id, so its old term has lost the lease whatever the
next assignment says.

The active learner assigns itself every partition of the events and labels topics, of its
shard with --shards (connectors/shards/) (no
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
and model topics (connectors/state/snapshots.py), so a zombie's late snapshots are never newer than
the new learner's. Kafka has the election (a group) and the fencing (transactions) but no lease
on top of them, hence this module.

"""

from __future__ import annotations

import logging
import time

from river_pa.connectors.config import ServeConfig, lease_group, lease_topic
from river_pa.connectors.kafka.admin import ensure_topic
# the lease group runs on kafka-python under both clients: its assignor (kafka/assignor.py) is a
# client-side one, which librdkafka does not take from Python
from river_pa.connectors.kafka.client import (
    confirm_member, longest_call_ms, make_lease_consumer, member_stable, poll,
)
from river_pa.connectors.kafka.partitions import TopicPartition

__all__ = ["Lease", "rejoin_seconds"]

log = logging.getLogger("river_pa.serve")


def rejoin_seconds(session_s: float, settings: dict) -> float:
    """How long a lease consumer may stay outside its group before it is made anew (`Lease`'s
    `_renew`), in seconds: twice what a join can wait for the other members to rejoin (each
    may be inside its longest client call, `longest_call_ms` of the `[kafka]` `settings`, and
    answers within its session, `session_s`), and at least a minute."""
    return max(60.0, 2 * (session_s + longest_call_ms(settings) / 1000))


class Lease:
    """This process's membership of the lease group; `held` says whether it is the active one.

    The lease is this member's while the partition of the lease topic it was first given (one
    per shard, `--shards`; partition 0 without) is assigned to it under the member id it had
    then (`member`); `held` says what the consumer knows, `confirm` asks the coordinator.
    """

    def __init__(self, cfg: ServeConfig):
        self.topic, self.group = lease_topic(cfg), lease_group(cfg)
        ensure_topic(cfg, self.topic, partitions=cfg.shards if cfg.shards > 1 else None)
        self.cfg, self.tp = cfg, None  # the lease partition held: its number is the shard's
        self.consumer = make_lease_consumer(cfg, self.topic, self.group)
        session_s = self.consumer.config["session_timeout_ms"] / 1000  # [kafka] may set it
        self.rejoin_s = rejoin_seconds(session_s, cfg.kafka)
        self.confirm_s = max(2 * session_s, 5.0)  # how long a rebalance under way is waited for
        # a confirmation stands for a quarter of the session: the member heartbeats every
        # quarter, so the coordinator cannot expire it sooner; any stall makes it stale
        self.valid_s, self.confirmed_at = session_s / 4, -float("inf")
        self.member = None  # the member id this process was elected under

    def held(self, timeout_ms: int = 0) -> bool:
        """Poll the lease consumer (joining, heartbeats, rebalances); True while its lease
        partition is assigned to this member, under the member id it was elected with, as far
        as it knows."""
        poll(self.consumer, timeout_ms)
        return self._ours()

    @property
    def shard(self) -> int:
        """The shard this member leads (0 without --shards): its lease partition's number."""
        return self.tp.partition

    def _ours(self) -> bool:
        member = self.consumer.group_metadata().member_id
        assigned = self.consumer.assignment()
        if self.tp is None:
            if not assigned:
                return False
            self.tp, self.member = min(assigned), member  # elected now
        return self.tp in assigned and member == self.member

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
            accepted, exc = confirm_member(self.consumer, self.tp)
            if accepted:
                self.confirmed_at = start
                continue
            if accepted is False:
                log.warning("the coordinator refused the lease: %s", exc)
                return False  # expired, or another generation: not ours
            # a rebalance under way (a standby joining), the coordinator moving
            if time.monotonic() > deadline:
                log.warning("the lease could not be confirmed in %.0f s: %s", self.confirm_s, exc)
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
        member_since = health.beat  # when this member was last seen in the group (or started)
        while not stopping():
            if self.held(500):  # 500 ms per poll: no busy loop, heartbeats go on meanwhile
                return True
            health.beat = time.monotonic()
            if member_stable(self.consumer):
                member_since = health.beat
                if not said:
                    log.info("standby: the lease %s of group %s is another learner's; "
                             "waiting", self.topic, self.group)
                    said = True
                    health.ready, health.why = True, "standby: another learner holds the lease"
            elif health.beat - member_since > self.rejoin_s:
                self._renew()
                member_since = health.beat
        return False

    def _renew(self) -> None:
        """Close the lease consumer and make it anew: it has not been a member of the group for
        `rejoin_s` while its polls returned. The fault soak's seed 449: a learner's lease
        consumer (kafka-python 3.0.12) found no group coordinator in 300 s while the cluster
        served the other daemons; why is not known, a new client looks it up afresh."""
        log.warning("not a member of the lease group %s after %.0f s: its consumer is made "
                    "anew", self.group, self.rejoin_s)
        self.consumer.close(autocommit=False)
        self.consumer = make_lease_consumer(self.cfg, self.topic, self.group)

    def close(self) -> None:
        """Leave the group (a standby gets the lease at once) and close the consumer."""
        self.consumer.close(autocommit=False)
