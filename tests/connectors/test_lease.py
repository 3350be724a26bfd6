"""The learner's lease (roles/lease.py) on the fake client: the lease is held under the member
id it was won with, and only while the coordinator accepts the member's commits."""

from __future__ import annotations

from kafka.errors import CommitFailedError

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.roles import lease as lease_module

from tests.connectors.fake_kafka import TP, FakeConsumer

LEASE = TP("ev.lease", 0)


def _lease(cluster, monkeypatch) -> lease_module.Lease:
    cluster.topic(LEASE.topic)
    monkeypatch.setattr(lease_module, "ensure_topic", lambda cfg, topic: None)
    monkeypatch.setattr(lease_module, "make_lease_consumer",
                        lambda cfg, topic, group: FakeConsumer(cluster))
    return lease_module.Lease(ServeConfig(model="PAClassifier", role="learn", events_topic="ev"))


def test_a_member_that_rejoined_under_a_new_id_has_lost_the_lease(cluster, monkeypatch):
    lease = _lease(cluster, monkeypatch)
    assert not lease.held()  # the partition is another member's
    lease.consumer.assign([LEASE])
    assert lease.held() and lease.member == "member-1"
    # its session expired (a SIGSTOP) and it rejoined under a new id: a stale assignment that
    # still lists the partition must not make its old term the active learner again
    lease.consumer.member_id = "member-2"
    assert not lease.held() and not lease.confirm()


def test_the_lease_stands_while_the_coordinator_accepts_its_commits(cluster, monkeypatch):
    lease = _lease(cluster, monkeypatch)
    lease.consumer.assign([LEASE])
    assert lease.confirm()
    assert cluster.committed == {LEASE: 0}  # the confirmation is an offset commit
    lease.confirmed_at = -float("inf")  # stale: asked again
    lease.consumer.commit_error = CommitFailedError("the member's generation is not the group's")
    assert not lease.confirm()
