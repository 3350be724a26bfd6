"""SIGKILL the daemon at seeded random points of a delayed-label replay and restart it each
time."""

from __future__ import annotations

import json
import os
import pickle
import random
import resource
import signal

import pytest

from river_pa.connectors.state import checkpoint
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


@pytest.mark.one_mode(True)
def test_sigkill_three_times_changes_nothing(kafka, elec2_path, exactly_once):
    # seeded (RIVER_PA_CRASH_SEED, 0 by default): a failure is the same kill points again; the
    # fault harness (tests/faults) explores random schedules
    seed = int(os.environ.get("RIVER_PA_CRASH_SEED", "0"))
    kills = sorted(random.Random(seed).sample(range(300, N_EVENTS - 300), 3))
    print(f"seed {seed}: SIGKILL after", kills, "predictions")
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


def test_a_full_disk_at_a_checkpoint_stops_the_daemon_with_one_line(kafka, elec2_path):
    # ENOSPC at a checkpoint was a traceback, left a stale .tmp, and each restart re-emitted
    # every prediction since the last checkpoint before dying again
    events, preds = kafka.topics("events", "preds")
    send_all(kafka.producer(), records(elec2(str(elec2_path), 200), None), events, None)
    proc = kafka.serve_stream(events, None, preds, "--checkpoint-every", "100")
    path = kafka.tmp_path / "d0.ckpt"
    kafka.wait_for_report("d0.jsonl", lambda r: r["events"] == 200 and path.exists()
                          and checkpoint.read_header(path)["offsets"] == {f"{events}:0": 200}, proc)
    size = path.stat().st_size
    resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (size // 2, size // 2))  # "the disk is full"
    send_all(kafka.producer(), records(elec2(str(elec2_path), 200), None, id_prefix="f"), events, None)
    assert proc.wait(timeout=120) == 3
    log = kafka.log("d0")
    assert "Traceback" not in log
    assert "cannot write a checkpoint there" in log.strip().splitlines()[-1]
    left = {p.name for p in kafka.tmp_path.iterdir() if "ckpt" in p.name}
    assert left <= {"d0.ckpt", "d0.ckpt.prev"}  # no stale .tmp
    assert checkpoint.read_header(path)["offsets"] == {f"{events}:0": 200}  # the last good one
