"""The serving loop (loop/) and its positions on the fake client of fake_kafka.py: the daemon
of `--role both` and the learner run their real `run`/`_resume` against in-memory topics, in
milliseconds; tests/kafka runs the same against a broker."""

from __future__ import annotations

import dataclasses
import random

from kafka.errors import InvalidTxnStateError, RebalanceInProgressError
from river import evaluate, metrics

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.loop.daemon import Daemon
from river_pa.connectors.loop.ordering import EventTimeOrder
from river_pa.connectors.replay import records
from river_pa.connectors.roles.learner import Learner
from river_pa.linear_model import PAClassifier

from tests.connectors.fake_kafka import TP, FakeConsumer, serve_until_learned

N, DELAY = 300, 20


def _rows(n: int) -> list[tuple[dict, bool]]:
    rng = random.Random(7)
    rows = []
    for _ in range(n):
        x = {"a": rng.random(), "b": rng.random()}
        rows.append((x, x["a"] + 0.1 * rng.random() > x["b"]))
    return rows


def test_two_partition_pairs_are_served_learned_and_committed_to_their_end(fake_clients, tmp_path):
    rows = _rows(N)
    events, labels = fake_clients.topic("ev", 2), fake_clients.topic("lab", 2)
    fake_clients.send_all(records(rows, DELAY, start_ms=0), events, labels, partitions=2)
    cfg = ServeConfig(model="PAClassifier", events_topic=events, labels_topic=labels,
                      predictions_topic="preds", metrics_topic=None, report_path=None,
                      checkpoint_path=str(tmp_path / "ckpt"), checkpoint_every=50)
    daemon = Daemon(cfg, PAClassifier())
    serve_until_learned(daemon, N)
    figures = daemon.figures()
    assert figures["events"] == figures["labelled"] == figures["learned"] == N
    assert figures["pending"] == figures["orphan_labels"] == figures["dead_lettered"] == 0
    predicted = {p["id"]: p["prediction"] for p in fake_clients.values("preds")}
    assert sorted(predicted) == sorted(f"e{i}" for i in range(N))
    ends = {tp: len(log) for tp, log in fake_clients.logs.items() if tp.topic in (events, labels)}
    assert fake_clients.committed == ends  # the final checkpoint committed everything
    assert (tmp_path / "ckpt").exists()


def test_a_partition_pair_with_its_labels_in_time_matches_river(fake_clients, tmp_path):
    rows = _rows(N)
    events, labels = fake_clients.topic("ev"), fake_clients.topic("lab")
    fake_clients.send_all(records(rows, DELAY, start_ms=0), events, labels)
    cfg = ServeConfig(model="PAClassifier", events_topic=events, labels_topic=labels,
                      predictions_topic="preds", metrics_topic=None, report_path=None,
                      checkpoint_path=str(tmp_path / "ckpt"), max_poll_records=37)
    daemon = Daemon(cfg, PAClassifier())
    serve_until_learned(daemon, N)
    steps = evaluate.iter_progressive_val_score(rows, PAClassifier(), metrics.Accuracy(),
                                                delay=DELAY, step=N)
    assert daemon.figures()["metrics"]["Accuracy"] == list(steps)[-1]["Accuracy"].get()
    assert [p["id"] for p in fake_clients.values("preds")] == [f"e{i}" for i in range(N)]


def _assigned(daemon: Daemon, cluster) -> None:
    """What `run` sets up before the loop: a consumer (here assigned partition ev:0) and the
    event-time order."""
    daemon.consumer = FakeConsumer(cluster)
    daemon.consumer.assign([TP("ev", 0)])
    daemon.order = EventTimeOrder("ev", None, daemon._exhausted, TP)


def test_the_learner_relearns_from_its_state_without_sending_outputs_again(cluster):
    # its state stopped at offset 5 of a partition the group committed up to 8 (an older
    # snapshot restored): it resumes at 5, and commits never go below 8 meanwhile
    cluster.topic("ev")
    for i in range(10):
        cluster.append("ev", b"{}", timestamp=i)
    cluster.committed[TP("ev", 0)] = 8
    learner = Learner(ServeConfig(model="PAClassifier", role="learn", events_topic="ev"),
                      PAClassifier())
    _assigned(learner, cluster)
    learner.next_offsets = {"ev:0": 5}
    learner._resume()
    assert learner.consumer.seeks == [(TP("ev", 0), 5)]
    assert learner.floors == {TP("ev", 0): 8} and learner._commit_positions() == {"ev:0": 8}
    replayed = [learner._replayed(r) for r in cluster.logs[TP("ev", 0)]]
    assert replayed == [True] * 8 + [False] * 2


def test_a_rollback_makes_the_model_due_again_as_it_was_at_the_last_checkpoint(cluster,
                                                                              tmp_path):
    # soak seed 562: the learner's last snapshot (1,500 learned) went out in a transaction that
    # was then rolled back; the learner still took it as published and never sent it again
    cluster.topic("ev")
    learner = Learner(ServeConfig(model="PAClassifier", role="learn", events_topic="ev",
                                  checkpoint_path=str(tmp_path / "ckpt")), PAClassifier())
    _assigned(learner, cluster)
    learner.slot.manifest = {"term": 1, "version": 3}
    learner.learned_at_publish = learner.events_at_publish = 1188
    learner._publish_committed()  # as the last checkpoint left it
    learner.stats.counts.update(learned=1500, events=1500)
    learner.learned_at_publish = learner.events_at_publish = 1500  # sent, not committed
    learner.slot.manifest = {"term": 1, "version": 4}
    learner.load = lambda: learner.stats.counts.update(learned=1500, events=1500)  # its state
    learner._rollback("the transaction was aborted")
    # 312 events learned past the model topic's: sent again when due, or at the stop
    assert (learner.learned_at_publish, learner.slot.manifest) == (1188, {"term": 1, "version": 3})


def test_a_member_after_a_rebalance_resumes_where_the_group_committed(cluster):
    cluster.topic("ev")
    cluster.committed[TP("ev", 0)] = 8
    daemon = Daemon(ServeConfig(model="PAClassifier", events_topic="ev"), PAClassifier())
    _assigned(daemon, cluster)
    daemon.next_offsets = {"ev:0": 5}  # another member served 5..7 and learned them
    daemon._resume()
    assert daemon.consumer.seeks == [(TP("ev", 0), 8)]
    assert daemon.floors == {} and daemon.next_offsets == {"ev:0": 8}


def test_a_stream_of_strings_a_learner_refuses_is_dead_lettered_and_stops_nothing(
        fake_clients, tmp_path):
    """More events than MODEL_FAILURES_TO_STOP in a row carry a string PAClassifier refuses:
    each is a `feature_rejected` dead letter with the learner's own message, and the numeric
    events after them are served and learned."""
    from river_pa.connectors.loop.records import MODEL_FAILURES_TO_STOP

    n_strings = MODEL_FAILURES_TO_STOP + 20
    rows = [({**x, "country": "FR"}, y) for x, y in _rows(n_strings)] + _rows(N)
    events, labels = fake_clients.topic("ev"), fake_clients.topic("lab")
    fake_clients.send_all(records(rows, DELAY, start_ms=0), events, labels)
    cfg = ServeConfig(model="PAClassifier", events_topic=events, labels_topic=labels,
                      predictions_topic="preds", metrics_topic=None, report_path=None,
                      checkpoint_path=str(tmp_path / "ckpt"))
    daemon = Daemon(cfg, PAClassifier())
    serve_until_learned(daemon, N)
    letters = [dict(r.headers) for r in fake_clients.logs[TP("dead-letters", 0)]]
    assert len(letters) == n_strings
    assert {(h["reason"], h["detail"]) for h in letters} == {(
        b"feature_rejected", b"TypeError: feature 'country' has a non-numeric value 'FR' of "
        b"type str")}
    assert daemon.figures()["learned"] == N  # their labels are orphans; the rest is learned
    assert len(fake_clients.values("preds")) == N


def test_a_refused_offset_commit_is_tried_again_when_no_record_follows(fake_clients, tmp_path):
    """Soak seed 486: a member's offset commit was refused in a rebalance after the last record
    of its partition; as nothing followed, nothing committed again and the group stayed 449
    records behind for good. The refused commit is tried again when a checkpoint is due."""
    events, labels = fake_clients.topic("ev", 2), fake_clients.topic("lab", 2)
    fake_clients.send_all(records(_rows(N), DELAY, start_ms=0), events, labels, partitions=2)
    cfg = ServeConfig(model="PAClassifier", events_topic=events, labels_topic=labels,
                      predictions_topic="preds", metrics_topic=None, report_path=None,
                      checkpoint_path=str(tmp_path / "ckpt"), checkpoint_seconds=0)
    daemon, idle = Daemon(cfg, PAClassifier()), []
    step = daemon._step

    def step_refusing_commits_until_all_learned():
        if not daemon.processed_this_run:
            daemon.consumer.commit_error = RebalanceInProgressError("a rebalance")
        step()
        if daemon.stats.counts["learned"] == N:
            if daemon.consumer.commit_error is None:  # an idle step: nothing left to read
                idle.append(dict(fake_clients.committed))
            daemon.consumer.commit_error = None
        daemon.stopping = len(idle) == 2

    daemon._step = step_refusing_commits_until_all_learned
    assert daemon.run() == 0
    ends = {tp: len(log) for tp, log in fake_clients.logs.items() if tp.topic in (events, labels)}
    assert idle[0] == ends  # committed before the stop's final checkpoint


def test_a_partition_assigned_back_after_its_last_record_is_committed(fake_clients, tmp_path):
    """Soak seed 534: a member processed a partition to its end, lost it in a rebalance before
    its checkpoint and got it back; it resumed at its own position (ahead of the group's), no
    record followed, and the group stayed 482 records behind for good."""
    events, labels = fake_clients.topic("ev", 2), fake_clients.topic("lab", 2)
    fake_clients.send_all(records(_rows(N), DELAY, start_ms=0), events, labels, partitions=2)
    cfg = ServeConfig(model="PAClassifier", events_topic=events, labels_topic=labels,
                      predictions_topic="preds", metrics_topic=None, report_path=None,
                      checkpoint_path=str(tmp_path / "ckpt"), checkpoint_every=10**6,
                      checkpoint_seconds=3600)
    daemon, idle = Daemon(cfg, PAClassifier()), []
    step = daemon._step

    def step_then_rebalance_once_all_learned():
        step()
        if daemon.stats.counts["learned"] < N:
            return
        if not idle and daemon.cfg.checkpoint_seconds:  # a rebalance gives every partition back
            daemon.consumer.unsubscribe()
            daemon._checkpoint_or_rollback()  # due while nothing is assigned: commits nothing
            assert fake_clients.committed == {} and daemon.since_checkpoint == 0
            daemon.consumer.subscribe(daemon.topics, listener=daemon.rebalances)
            daemon.cfg = dataclasses.replace(daemon.cfg, checkpoint_seconds=0)
        else:
            idle.append(dict(fake_clients.committed))
        daemon.stopping = len(idle) == 3

    daemon._step = step_then_rebalance_once_all_learned
    assert daemon.run() == 0
    ends = {tp: len(log) for tp, log in fake_clients.logs.items() if tp.topic in (events, labels)}
    assert idle[-1] == ends  # committed before the stop's final checkpoint


def test_an_abort_the_broker_refuses_is_ended_by_a_new_producer(fake_clients, tmp_path):
    """Soak seed 570 (confluent, exactly-once): a rollback's abort_transaction failed
    (librdkafka made the broker's INVALID_TXN_STATE answer fatal) and the predictor exited 1.
    A failed abort that is not a fencing is left to a new producer, whose init_transactions
    ends the transaction at the coordinator; the daemon goes on to the end of the stream."""
    events, labels = fake_clients.topic("ev", 2), fake_clients.topic("lab", 2)
    fake_clients.send_all(records(_rows(N), DELAY, start_ms=0), events, labels, partitions=2)
    cfg = ServeConfig(model="PAClassifier", events_topic=events, labels_topic=labels,
                      predictions_topic="preds", metrics_topic=None, report_path=None,
                      checkpoint_path=str(tmp_path / "ckpt"), checkpoint_every=50,
                      exactly_once=True)
    daemon, aborts = Daemon(cfg, PAClassifier()), []

    def transact(producer, call, *args):
        if call == "abort_transaction" and not aborts:
            aborts.append(producer)
            raise InvalidTxnStateError("Failed to end transaction")

    daemon.client = dataclasses.replace(daemon.client, transact=transact,
                                        fenced=lambda exc, producer, wait_s: False)
    step = daemon._step

    def step_rolling_back_once():
        step()
        if daemon.stats.counts["learned"] >= N // 2 and not aborts:
            daemon._rollback("partitions were revoked during the transaction")
        daemon.stopping = daemon.stats.counts["learned"] >= N

    daemon._step = step_rolling_back_once
    assert daemon.run() == 0
    assert aborts and daemon.producer is not aborts[0]  # replaced, not raised
    assert daemon.figures()["learned"] == N
