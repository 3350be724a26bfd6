"""What a restart restores: a state older than the committed offsets is caught up on (never
skipped), a learner with no state refuses to start empty unless told, a learner without a
labels topic learns events that carry `y`, and bounds and metrics given at a restart apply to
the restored state."""

from __future__ import annotations

import json
import pickle
import time
from collections import Counter

import pytest

from river_pa.connectors.replay import elec2, records, send_all
from tests.kafka.test_end_to_end import river_reference
from tests.kafka.test_learner_failover import DELAY, N_EVENTS, SLOW, learner, setup_stream


def test_a_learner_without_a_labels_topic_learns_events_that_carry_y(kafka, elec2_path):
    # AttributeError: 'NoneType' object has no attribute 'end_offsets' in _log_end, at
    # every start: the learner's end-offsets client was made only with a labels topic.
    rows = elec2(str(elec2_path), N_EVENTS)
    (events,) = kafka.topics("events", partitions=3)
    send_all(kafka.producer(), records(rows, None), events, None)
    proc = kafka.serve_stream(events, None, f"{events}-unused", "--role", "learn", name="a")
    report = kafka.wait_for_report("a.jsonl", lambda r: r["learned"] == N_EVENTS, proc, 240)
    assert kafka.stop(proc) == 0
    assert report["events"] == report["labelled"] == N_EVENTS
    assert report["metrics"]["Accuracy"] == river_reference(rows, None)

def unlabelled_events(rows, producer, topic: str, ids: range, end_ms: int) -> None:
    """Send events without y, one second apart, the last stamped `end_ms`."""
    for i in ids:
        ts = end_ms - (ids[-1] - i) * 1000
        value = {"id": f"e{i}", "x": rows[i][0], "ts": ts}
        producer.send(topic, key=f"e{i}".encode(), value=json.dumps(value).encode(), timestamp_ms=ts)
    producer.flush()

def test_bounds_and_metrics_given_at_a_restart_apply_to_the_restored_state(kafka, elec2_path):
    # --pending-max, --pending-max-bytes, --pending-ttl-ms and --metric given at a restart were
    # ignored for the restored state: the pickled store and metrics came back as they were.
    rows = elec2(str(elec2_path), 302)
    events, labels, preds = kafka.topics("events", "labels", "preds")
    producer = kafka.producer()
    unlabelled_events(rows, producer, events, range(300), int(time.time() * 1000))

    def first_report(*flags, name="a"):
        """Start the daemon with `flags` after the others' checkpoint; its first report."""
        (kafka.tmp_path / f"{name}.jsonl").unlink(missing_ok=True)
        proc = kafka.serve_stream(events, labels, preds, *flags, name=name)
        return proc, kafka.wait_for_report(f"{name}.jsonl", lambda r: True, proc)

    proc = kafka.serve_stream(events, labels, preds, name="a")
    kafka.wait_for_report("a.jsonl", lambda r: r["pending"] == 300, proc)
    assert kafka.stop(proc) == 0
    entries = list(kafka.checkpoint_state("a")["pending"]._items.values())
    newest_100 = sum(entry.nbytes for entry in entries[-100:])

    proc, report = first_report("--pending-max", "120")
    assert (report["pending"], report["expired"]) == (120, 180)
    assert kafka.stop(proc) == 0  # nothing processed: the checkpoint stays the first run's
    proc, report = first_report("--pending-max-bytes", str(newest_100))
    assert (report["pending"], report["expired"], report["pending_bytes"]) == (100, 200, newest_100)
    assert kafka.stop(proc) == 0

    proc, report = first_report("--pending-ttl-ms", "1")  # expired at the next event's time
    assert (report["pending"], report["expired"]) == (300, 0)
    unlabelled_events(rows, producer, events, range(300, 301), int(time.time() * 1000))
    report = kafka.wait_for_report("a.jsonl", lambda r: r["events"] == 301, proc)
    assert (report["pending"], report["expired"]) == (1, 300)
    assert kafka.stop(proc) == 0

    # A metric of probabilities where the pending prediction is a label: it restarts from
    # zero (one line), the old prediction is learned but not scored, the next one scored.
    proc, report = first_report("--metric", "LogLoss")
    assert list(report["metrics"]) == list(report["rolling"]) == ["LogLoss"]
    assert "restart from zero as ['LogLoss']" in kafka.log("a")
    label = {"id": "e300", "y": rows[300][1]}
    producer.send(labels, key=b"e300", value=json.dumps(label).encode())
    event = {"id": "e301", "x": rows[301][0], "y": rows[301][1]}
    producer.send(events, key=b"e301", value=json.dumps(event).encode())
    producer.flush()
    report = kafka.wait_for_report("a.jsonl", lambda r: r["learned"] == 2, proc)
    assert kafka.stop(proc) == 0
    assert (report["labelled"], report["pending"], report["expired"]) == (2, 0, 300)
    assert kafka.checkpoint_state("a")["stats"].metric[0]._mean.n == 1  # e301 only
