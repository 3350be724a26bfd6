"""The learner's lease (roles/lease.py) on the fake client: the lease is held under the member
id it was won with, and only while the coordinator accepts the member's commits; a stop
signal ends the learner also when its last term lost the lease."""

from __future__ import annotations

from types import SimpleNamespace

from kafka.errors import CommitFailedError

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.roles import lease as lease_module

from tests.connectors.fake_kafka import TP, FakeConsumer

LEASE = TP("ev.lease", 0)


def _lease(cluster, monkeypatch) -> lease_module.Lease:
    cluster.topic(LEASE.topic)
    monkeypatch.setattr(lease_module, "ensure_topic", lambda cfg, topic, partitions=None: None)
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


class _Health:
    beat, ready, why = None, False, ""


def _wait(lease, polls: int) -> bool:
    """`lease.wait` stopped after `polls` polls of the lease consumer."""
    left = iter(range(polls, -1, -1))
    return lease.wait(lambda: next(left) == 0, _Health())


def test_a_lease_consumer_outside_the_group_for_rejoin_s_is_made_anew(cluster, monkeypatch,
                                                                        caplog):
    lease = _lease(cluster, monkeypatch)
    monkeypatch.setattr(lease_module, "member_stable", lambda consumer: False)  # never joins
    first, lease.rejoin_s = lease.consumer, 0.0
    assert not _wait(lease, 1)
    assert first.closed and lease.consumer is not first and not lease.consumer.closed
    assert "not a member of the lease group river-pa.lease after 0 s" in caplog.text
    # made anew, it is a candidate like any: given the partition, it holds the lease
    lease.consumer.assign([LEASE])
    assert _wait(lease, 1) and lease.member == "member-1"


def test_a_standby_in_the_group_keeps_its_lease_consumer(cluster, monkeypatch):
    lease = _lease(cluster, monkeypatch)
    monkeypatch.setattr(lease_module, "member_stable", lambda consumer: True)
    first, lease.rejoin_s = lease.consumer, 0.0
    assert not _wait(lease, 5)
    assert lease.consumer is first and not first.closed


def test_rejoin_s_covers_a_join_that_waits_for_every_member():
    """A join waits for the other members to rejoin: each may be inside its longest client
    call (30 s by default) and has a session (10 s) to answer."""
    assert lease_module.rejoin_seconds(10.0, {}) == 80.0
    assert lease_module.rejoin_seconds(10.0, {"request_timeout_ms": 5000,
                                              "max_block_ms": 5000}) == 60.0


def _terms_run(monkeypatch, signal_in: str) -> list:
    """The terms `run_learner` runs when a stop signal reaches the one elected term's own
    handler (it sets `stopping`) `signal_in` its run (which then loses the lease) or its
    lease's close; each term run after the first fails the test."""
    from river_pa.connectors.errors import LeaseLost
    from river_pa.connectors.roles import learner as learner_module

    terms = []

    class Term:
        def __init__(self, cfg, model):
            self.stopping, self.health = False, SimpleNamespace(beat=None, ready=False, why="")
            terms.append(self)

        def lead(self, shard):
            assert shard == 0

        def run(self):
            assert len(terms) == 1, "elected again after a stop signal"
            self.stopping = signal_in == "run"  # what `Daemon._on_signal` does
            raise LeaseLost("the lease ev.lease of group g.lease is lost")

    class HeldLease:
        topic, group, shard = "ev.lease", "g.lease", 0

        def __init__(self, cfg):
            pass

        def wait(self, stopping, health):
            return True

        def close(self):
            terms[-1].stopping |= signal_in == "close"

    monkeypatch.setattr(learner_module, "Learner", Term)
    monkeypatch.setattr(learner_module, "Lease", HeldLease)
    cfg = SimpleNamespace(state_topic="ev.state", exactly_once=False, shards=1)
    assert learner_module.run_learner(cfg, model=None) == 0
    return terms


def test_a_learner_stopped_as_it_loses_the_lease_exits_instead_of_standing_again(monkeypatch):
    # SIGTERM reaches the active term (its own handler sets `stopping`), and its final
    # checkpoint finds the lease lost (the session expired under load): it used to step down
    # and wait for the lease again, was elected and served on until killed 60 s later.
    assert len(_terms_run(monkeypatch, "run")) == 1


def test_a_stop_signal_while_a_term_steps_down_ends_the_learner(monkeypatch):
    # the term lost the lease, and SIGTERM came while its lease was being closed: the term's
    # own handler still took it (a new user's try: it was elected again and served on)
    assert len(_terms_run(monkeypatch, "close")) == 1


def test_a_shard_confirms_its_lease_after_every_batch_even_with_nothing_to_publish():
    # a shard that learned nothing never checkpoints, and publishes nothing (shard 0 publishes
    # only mixes): its lease consumer was polled nowhere, and the leases of shards waiting for
    # their topics changed hands every 21 s (a new user's try)
    from river_pa.connectors.roles.learner import Learner
    from river_pa.registry import make_model

    cfg = ServeConfig(model="PAClassifier", role="learn", events_topic="ev", shards=2)
    for shard in (0, 1):
        term = Learner(cfg, make_model("PAClassifier", {}))
        term.lead(shard)
        confirmed = []
        term.lease = SimpleNamespace(confirm=lambda: confirmed.append(1) or True)
        term._publish()
        assert confirmed == [1]
        assert term.state_name == f"river-pa.learner.shard{shard}"
        assert term.cfg.checkpoint_path == f"river-pa-checkpoint.bin.shard{shard}"
