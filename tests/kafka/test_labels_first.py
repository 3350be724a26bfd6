"""Labels produced before their events, and what a run reports about itself."""

from __future__ import annotations

import json

from river_pa.connectors.replay import elec2, records, send_all

N_EVENTS = 500


def test_labels_before_any_event_are_kept_until_their_event_comes(kafka, elec2_path):
    # All labels are on the broker before any event: the events partition counted as read to
    # its end, so every label was released, found no pending event and became an orphan.
    # Also: a consumer-only client setting (max_poll_interval_ms) and a producer-only one
    # (linger_ms) are taken (they were refused as unknown Kafka client settings), and
    # events_this_run counts events, not records (it counted the labels too).
    stream = list(records(elec2(str(elec2_path), N_EVENTS), delay=10))
    events, labels, preds = kafka.topics("events", "labels", "preds")
    send_all(kafka.producer(), [r for r in stream if r[0] == "label"], events, labels)
    settings = json.dumps({"max_poll_interval_ms": 60_000, "linger_ms": 5})
    proc = kafka.serve_stream(events, labels, preds, "--kafka", settings)
    kafka.wait_for_report("d0.jsonl", lambda r: r["early_labels"] == N_EVENTS, proc)
    send_all(kafka.producer(), [r for r in stream if r[0] == "event"], events, labels)
    report = kafka.wait_for_report("d0.jsonl", lambda r: r["events"] == N_EVENTS, proc)
    assert kafka.stop(proc) == 0
    assert (report["labelled"], report["learned"], report["events_this_run"]) == (N_EVENTS,) * 3
    assert (report["orphan_labels"], report["early_labels"], report["pending"]) == (0, 0, 0)
    assert len(kafka.read_all(preds)) == N_EVENTS
