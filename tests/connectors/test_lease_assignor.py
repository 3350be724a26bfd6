"""The lease group's assignor: the lease goes to the newest claim and never moves while its
owner is in the group. The members' subscriptions go through the wire encoding, as the group
leader reads them."""

from __future__ import annotations

from types import SimpleNamespace

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment
from kafka.structs import TopicPartition

from river_pa.connectors.kafka.assignor import LeaseAssignor

TOPIC = "events.lease"
OTHER = "events.lease.3"  # a member of another shard count, in the same group by mistake
LEASE = TopicPartition(TOPIC, 0)


class Cluster:
    """The one thing an assignor asks the cluster: a topic's partitions (one per shard)."""

    def __init__(self, shards: int = 1):
        self.shards = shards

    def partitions_for_topic(self, topic):
        return set(range(self.shards)) if topic == TOPIC else {0, 1, 2} if topic == OTHER else None


def member(member_id, owned=(), generation=-1, topic=TOPIC):
    """A member as the leader sees it: its id and its decoded subscription."""
    assignor = LeaseAssignor()
    if owned:
        assignor.on_assignment(ConsumerProtocolAssignment(1, [(topic, sorted(owned))], b""),
                               generation)
    raw = assignor.metadata({topic}).encode()
    return SimpleNamespace(member_id=member_id,
                           metadata=type(assignor.metadata({topic})).decode(raw))


def assignment(members, shards: int) -> dict:
    """{member: [lease partitions]} the leader gives out."""
    out = LeaseAssignor().assign(Cluster(shards), members)
    return {m: [tp.partition for tp in a.partitions()] for m, a in out.items()}


def lease_holders(members) -> list:
    out = LeaseAssignor().assign(Cluster(), members)
    assert set(out) == {m.member_id for m in members}
    return [m for m, a in out.items() if LEASE in a.partitions()]


def test_a_zombies_stale_claim_loses_to_the_owner_elected_after_it():
    # a (expired at generation 3, SIGCONTed) still advertises the lease; b got it at 5
    for order in ([("a", 3), ("b", 5)], [("b", 5), ("a", 3)]):
        members = [member(m, {0}, g) for m, g in order]
        assert lease_holders(members) == ["b"]


def test_the_lease_stays_with_its_owner_when_standbys_join():
    for newcomer in ("0-first-in-id-order", "z-last"):
        assert lease_holders([member(newcomer), member("owner", {0}, 7)]) == ["owner"]


def test_an_unclaimed_lease_goes_to_exactly_one_member():
    assert lease_holders([member("m2"), member("m1"), member("m3")]) == ["m1"]


def test_the_subscription_carries_the_generation_of_the_claim():
    meta = member("b", {0}, 5).metadata
    assert (meta.version, meta.generation_id) == (2, 5)
    assert [(tp.topic, tp.partitions) for tp in meta.owned_partitions] == [(TOPIC, [0])]


def test_each_member_leads_at_most_one_shard_and_the_others_stand_by():
    got = assignment([member(m) for m in ("m3", "m1", "m4", "m2")], shards=3)
    assert got == {"m1": [0], "m2": [1], "m3": [2], "m4": []}
    assert assignment([member("m2"), member("m1")], shards=3) == {"m1": [0], "m2": [1]}


def test_a_shard_stays_with_its_owner_and_a_lost_one_goes_to_a_standby():
    owners = [member("b", {0}, 4), member("a", {1}, 4)]
    assert assignment([member("0-new"), *owners], shards=2) == {"b": [0], "a": [1], "0-new": []}
    # b left: its shard goes to the standby, a keeps its own
    assert assignment([member("s"), member("a", {1}, 4)], shards=2) == {"a": [1], "s": [0]}
    # a stale claim on two shards (never given out) keeps one; the other goes to a member
    assert assignment([member("z", {0, 1}, 4), member("y")], shards=2) == {"z": [0], "y": [1]}


def test_a_partition_goes_only_to_a_subscriber_of_its_topic():
    got = assignment([member("a", {0}, 4), member("b", {1}, 4), member("c"),
                      member("d", topic=OTHER)], shards=2)
    assert got == {"a": [0], "b": [1], "c": [], "d": [0]}  # d's is of its own topic
    out = LeaseAssignor().assign(Cluster(2), [member("c"), member("d", topic=OTHER)])
    assert [tp.topic for tp in out["c"].partitions()] == [TOPIC]
    assert [tp.topic for tp in out["d"].partitions()] == [OTHER]
