"""The broker stops and restarts in the middle of a stream; the daemon resumes without loss."""

from __future__ import annotations

import json

from river_pa.connectors.replay import elec2, records, send_all

from river import evaluate, metrics
from river_pa.registry import make_model

N_EVENTS = 3_000
DELAY = 100


def test_broker_restart_mid_stream(private, elec2_path, restart_broker):
    kafka = private  # a broker of its own: stopping the shared one would fail other workers'
    rows = elec2(str(elec2_path), N_EVENTS)
    events, labels, preds = kafka.topics("events", "labels", "preds")
    send_all(kafka.producer(), records(rows, DELAY), events, labels)
    proc = kafka.serve_stream(events, labels, preds, "--max-poll-records", "20",
                              "--checkpoint-every", "200")
    seen = kafka.wait_for(preds, 800, proc=proc)
    restart_broker()
    report = kafka.wait_for_report("d0.jsonl", lambda r: r["labelled"] == N_EVENTS, proc, 180)
    assert kafka.stop(proc) == 0
    assert seen < N_EVENTS  # the restart happened mid-stream
    ids = {json.loads(r.value)["id"] for r in kafka.read_all(preds)}
    assert ids == {f"e{i}" for i in range(N_EVENTS)}
    assert report["learned"] == N_EVENTS
    steps = evaluate.iter_progressive_val_score(
        rows, make_model("PAClassifier", {}), metrics.Accuracy(), delay=DELAY, step=N_EVENTS)
    assert report["metrics"]["Accuracy"] == list(steps)[-1]["Accuracy"].get()
