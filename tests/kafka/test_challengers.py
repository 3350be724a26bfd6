"""Challengers on a real broker (connectors/models/challengers.py): a learner learns one
beside its model, and a learner of the same group started with the challenger's model (a new
node: its state from the state topic) promotes it, both models continuing exactly."""

from __future__ import annotations

from river import evaluate, metrics

from river_pa.linear_model import PAClassifier
from tests.kafka.test_end_to_end import river_reference
from tests.kafka.test_learner_failover import (
    DELAY, N_EVENTS, learner, newest_snapshot, setup_stream,
)


def test_a_new_learner_with_the_challengers_model_promotes_it(kafka, elec2_path):
    rows, events, labels = setup_stream(kafka, elec2_path)
    group = f"{events}-learn"
    a = learner(kafka, events, labels, "a", group, "--challenger", 'c01=PAClassifier{"C": 0.01}')
    kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] >= N_EVENTS // 3, a, 240)
    assert kafka.stop(a) == 0
    # a new node (no local checkpoint): the group's state from the state topic
    b = learner(kafka, events, labels, "b", group, "--model-params", '{"C": 0.01}',
                "--challenger", "old=PAClassifier")
    report = kafka.wait_for_report("b.jsonl", lambda r: r["labelled"] == N_EVENTS, b, 240)
    assert kafka.stop(b) == 0
    log = kafka.log("b")
    assert "challenger c01 promoted: it is the served model from now on" in log
    assert "challenger old continues the former served model of the restored state" in log
    assert 0 < report["events_this_run"] < N_EVENTS  # b went on from a's state
    promoted = evaluate.progressive_val_score(rows, PAClassifier(C=0.01), metrics.Accuracy(),
                                              delay=DELAY).get()
    assert report["metrics"] == {"Accuracy": promoted}
    assert report["challengers"]["old"]["metrics"] == {"Accuracy": river_reference(rows, DELAY)}
    assert report["learned"] == report["challengers"]["old"]["learned"] == N_EVENTS
    snapshot = newest_snapshot(kafka, f"{events}.model", "model", False)
    assert snapshot["learned"] == N_EVENTS and snapshot["model"].C == 0.01
