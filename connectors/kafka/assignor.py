"""The lease group's partition assignor (roles/lease.py): cooperative sticky, newest claim wins."""

from __future__ import annotations

from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment, ConsumerProtocolSubscription,
)
from kafka.structs import TopicPartition

__all__ = ["LeaseAssignor"]


class LeaseAssignor(CooperativeStickyAssignor):
    """Cooperative sticky, with stale claims refused: every member advertises the partitions
    it owns with the generation it got them in (subscription v2, as Kafka's Java client does),
    and a partition claimed by several members goes to the newest claim. kafka-python 3.0.12's
    assignor advertises its last assignment even after the member's session expired, without
    a generation, and the leader kept whichever claim it read last: a SIGCONTed zombie's
    rejoin moved the lease back from the learner elected meanwhile (seen 1 in 3 runs of
    test_a_zombie_learner_steps_down_and_writes_nothing). A partition never moves while its
    owner is in the group; each member holds at most one (one lease partition per shard,
    `--shards`: a member leads one shard), so unclaimed ones go to their topic's subscribers
    holding none, in member id order, and stay unassigned while every subscriber holds one.
    The name stays "cooperative-sticky" so learners of the previous release share a protocol
    with these during a rolling update.
    """

    def metadata(self, topics):
        owned = super().metadata(topics).owned_partitions
        return ConsumerProtocolSubscription(version=2, topics=sorted(topics), user_data=b"",
                                            owned_partitions=owned, generation_id=self.generation)

    def assign(self, cluster, members):
        metas = {m.member_id: self.parse_member_metadata(m.metadata) for m in members}
        claims, held = {}, {m: [] for m in metas}  # partition: (generation, member)
        subscribers: dict[str, list] = {}  # topic: its subscribers, in member id order
        for member, meta in sorted(metas.items()):
            for tp in meta.partitions:
                claims[tp] = max(claims.get(tp, (-2, "")), (meta.generation, member))
            for topic in meta.subscription:
                subscribers.setdefault(topic, []).append(member)
        for tp, (_, member) in sorted(claims.items()):  # one lease (one shard) per member
            if member in held and not held[member] and tp.topic in metas[member].subscription:
                held[member].append(tp)
        for topic in sorted(subscribers):
            for p in sorted(cluster.partitions_for_topic(topic) or ()):
                tp = TopicPartition(topic, p)
                free = [m for m in subscribers[topic] if not held[m]]
                if free and not any(tp in tps for tps in held.values()):
                    held[free[0]].append(tp)  # to its first subscriber in id order with none
        return {member: ConsumerProtocolAssignment(self.version, _by_topic(tps), b"")
                for member, tps in held.items()}


def _by_topic(tps) -> list:
    """[(topic, [partition, ...]), ...] sorted: the assignment's wire shape."""
    topics = {}
    for tp in sorted(tps):
        topics.setdefault(tp.topic, []).append(tp.partition)
    return sorted(topics.items())
