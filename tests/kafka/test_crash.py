"""SIGKILL the daemon at random points of a delayed-label replay and restart it each time."""

from __future__ import annotations

import json
import pickle
import random
import signal

import pytest

from river_pa.connectors.replay import elec2, records, send_all

N_EVENTS = 4_000
DELAY = 100
SLOW = ("--max-poll-records", "25", "--checkpoint-every", "150")


def run_to_end(kafka, topics, name, *extra, kills=()):
    """Serve the stream, SIGKILL it after each count of predictions in `kills`, finish cleanly."""
    events, labels, preds = topics
    for count in kills:
        proc = kafka.serve_stream(events, labels, preds, *SLOW, *extra, name=name)
        kafka.wait_for(preds, count, proc=proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    proc = kafka.serve_stream(events, labels, preds, *SLOW, *extra, name=name)
    kafka.wait_for_report(f"{name}.jsonl", lambda r: r["labelled"] == N_EVENTS, proc, 240)
    assert kafka.stop(proc) == 0
    return kafka.checkpoint_state(name)


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once"])
def test_sigkill_three_times_changes_nothing(kafka, elec2_path, exactly_once):
    rng = random.Random()
    kills = sorted(rng.sample(range(300, N_EVENTS - 300), 3))
    print("SIGKILL after", kills, "predictions")
    events, labels, preds_a, preds_b = kafka.topics("events", "labels", "preds-a", "preds-b")
    send_all(kafka.producer(), records(elec2(str(elec2_path), N_EVENTS), DELAY), events, labels)
    extra = ("--exactly-once",) if exactly_once else ()
    clean = run_to_end(kafka, (events, labels, preds_a), "clean", *extra)
    crashed = run_to_end(kafka, (events, labels, preds_b), "crashed", *extra, kills=kills)

    assert pickle.dumps(crashed["model"]) == pickle.dumps(clean["model"])
    assert crashed["stats"].metric.get() == clean["stats"].metric.get()
    assert crashed["stats"].counts["learned"] == clean["stats"].counts["learned"] == N_EVENTS

    first = {}
    ids = []
    for record in kafka.read_all(preds_b, committed_only=exactly_once):
        value = json.loads(record.value)
        ids.append(value["id"])
        first.setdefault(value["id"], value)
        # a replayed prediction is the same prediction
        assert value["prediction"] == first[value["id"]]["prediction"]
        assert value["proba"] == first[value["id"]]["proba"]
    assert set(ids) == {f"e{i}" for i in range(N_EVENTS)}
    if exactly_once:
        assert len(ids) == N_EVENTS
    clean_preds = {json.loads(r.value)["id"]: json.loads(r.value)["prediction"]
                   for r in kafka.read_all(preds_a)}
    assert {k: v["prediction"] for k, v in first.items()} == clean_preds
