"""Elec2 replayed through the daemon with labels delayed by 100 events, against River."""

from __future__ import annotations

import json

import pytest
from river import evaluate, metrics

from river_pa.connectors.replay import elec2, records, send_all
from river_pa.registry import make_model

N_EVENTS = 45_312
DELAY = 100


def river_reference(rows, delay: int) -> float:
    """Accuracy of River's progressive validation with the same delay."""
    steps = evaluate.iter_progressive_val_score(
        rows, make_model("PAClassifier", {}), metrics.Accuracy(), delay=delay, step=len(rows))
    return list(steps)[-1]["Accuracy"].get()


def river_pa_evaluate(delay: int) -> float:
    """Accuracy from `river-pa evaluate --data elec2 --delay N` (its Python entry point)."""
    from river_pa.evaluate import datasets
    from river_pa.evaluate.job import evaluate as run

    result = run(datasets.load("elec2"), make_model("PAClassifier", {}), ["Accuracy"], delay=delay)
    return result.values["Accuracy"]


@pytest.mark.both_clients
def test_elec2_delayed_labels_matches_progressive_validation(kafka, elec2_path):
    rows = elec2(str(elec2_path), N_EVENTS)
    events, labels, preds = kafka.topics("events", "labels", "predictions")
    send_all(kafka.producer(), records(rows, DELAY), events, labels)
    proc = kafka.serve_stream(events, labels, preds)
    # the last report comes after the labels of the last 100 events are learned
    kafka.wait_for_report("d0.jsonl", lambda r: r["labelled"] == len(rows), proc, 240)
    assert kafka.stop(proc) == 0
    predictions = kafka.read_all(preds)
    report = kafka.last_report("d0.jsonl")
    ids = [json.loads(r.value)["id"] for r in predictions]
    assert ids == [f"e{i}" for i in range(len(rows))]
    assert report["events"] == report["labelled"] == report["learned"] == len(rows)
    assert report["pending"] == report["orphan_labels"] == report["dead_lettered"] == 0
    assert report["metrics"]["Accuracy"] == river_reference(rows, DELAY) == river_pa_evaluate(DELAY)
