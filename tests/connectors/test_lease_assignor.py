"""The lease group's assignor: the lease goes to the newest claim and never moves while its
owner is in the group. The members' subscriptions go through the wire encoding, as the group
leader reads them."""

from __future__ import annotations

from types import SimpleNamespace

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment
from kafka.structs import TopicPartition

from river_pa.connectors.kafka.assignor import LeaseAssignor

TOPIC = "events.lease"
LEASE = TopicPartition(TOPIC, 0)


class Cluster:
    """The one thing an assignor asks the cluster: a topic's partitions."""

    def partitions_for_topic(self, topic):
        return {0} if topic == TOPIC else None


def member(member_id, owned=(), generation=-1):
    """A member as the leader sees it: its id and its decoded subscription."""
    assignor = LeaseAssignor()
    if owned:
        assignor.on_assignment(ConsumerProtocolAssignment(1, [(TOPIC, sorted(owned))], b""),
                               generation)
    raw = assignor.metadata({TOPIC}).encode()
    return SimpleNamespace(member_id=member_id,
                           metadata=type(assignor.metadata({TOPIC})).decode(raw))


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
