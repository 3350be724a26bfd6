"""What a restart restores: a state older than the committed offsets is caught up on (never
skipped), a learner with no state refuses to start empty unless told, a learner without a
labels topic learns events that carry `y`, and bounds and metrics given at a restart apply to
the restored state."""

from __future__ import annotations

import json
import pickle
import signal
import time
from collections import Counter

import pytest

from river_pa.connectors.replay import elec2, records, send_all
from tests.kafka.test_end_to_end import river_reference
from tests.kafka.test_learner_failover import (
    DELAY, N_EVENTS, SLOW, learner, newest_snapshot, newest_state, setup_stream,
)


def restore_older(kafka, name: str, older: bytes) -> None:
    """Put an older copy of daemon `name`'s checkpoint in place (and start a new report)."""
    (kafka.tmp_path / f"{name}.ckpt").write_bytes(older)
    for suffix in (".ckpt.prev", ".jsonl"):
        (kafka.tmp_path / f"{name}{suffix}").unlink(missing_ok=True)


def run_with_older_state(kafka, start):
    """Run `start()` until a third of the labels are learned, keep a copy of its checkpoint,
    let it finish, stop it; return (the older copy, the final state: an uninterrupted run's)."""
    proc = start()
    kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] >= N_EVENTS // 3, proc, 240)
    older = (kafka.tmp_path / "a.ckpt").read_bytes()  # replaced atomically: always whole
    kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] == N_EVENTS, proc, 240)
    assert kafka.stop(proc) == 0
    return older, kafka.checkpoint_state("a")


def assert_same_model(state: dict, clean: dict) -> None:
    assert pickle.dumps(state["model"]) == pickle.dumps(clean["model"])
    assert state["stats"].metric.get() == clean["stats"].metric.get()
    assert state["stats"].counts == clean["stats"].counts  # events, labelled, learned: once each
    assert state["stats"].counts["learned"] == N_EVENTS


def test_a_learner_restored_from_an_older_state_relearns_what_follows_it(kafka, elec2_path):
    # The learner resumed at max(state offsets, committed offsets): restored from an older
    # state (here the state topic is gone and an older local checkpoint is all there is), it
    # skipped every record between the two, never learned (2,298 of 6,000 labels, seen).
    rows, events, labels = setup_stream(kafka, elec2_path)
    group = f"{events}-learn"
    older, clean = run_with_older_state(kafka, lambda: learner(kafka, events, labels, "a", group))
    restore_older(kafka, "a", older)
    proc = learner(kafka, events, labels, "a", group, "--state-topic", f"{events}.state-2")
    report = kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] == N_EVENTS, proc, 120)
    assert kafka.stop(proc) == 0
    assert 0 < report["events_this_run"] < N_EVENTS  # from the older state, not afresh
    assert_same_model(kafka.checkpoint_state("a"), clean)
    assert clean["stats"].metric.get() == [river_reference(rows, DELAY)]


def test_a_learner_stopped_before_any_record_publishes_the_model_it_restored(kafka, elec2_path):
    # Soak seed 489: a learner restored a state newer than the model topic's newest snapshot,
    # had nothing left to learn and was stopped before its first checkpoint; the transaction
    # holding its snapshot was aborted and the predictors served the older model for ever.
    _, events, labels = setup_stream(kafka, elec2_path)
    group = f"{events}-learn"
    never = ("--exactly-once", "--publish-every", "1000000", "--publish-seconds", "3600")
    a = learner(kafka, events, labels, "a", group, *never)
    kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] == N_EVENTS, a, 240)
    deadline = time.monotonic() + 60  # the transaction holding the state commits soon after
    while newest_state(kafka, events, group, True)["stats"].counts["learned"] < N_EVENTS:
        assert time.monotonic() < deadline, "the state of every label never committed"
        time.sleep(0.5)
    kafka.stop(a, signal.SIGKILL)  # no final checkpoint: no model in the model topic
    b = learner(kafka, events, labels, "b", group, *never)
    kafka.wait_for_log("b", "term 2 of the group's learner", b, 120)
    assert kafka.stop(b) == 0
    model = newest_snapshot(kafka, f"{events}.model", "model", True)
    assert model["learned"] == N_EVENTS


@pytest.mark.one_mode(True)
def test_role_both_restored_from_an_older_checkpoint_relearns_without_predicting_twice(
        kafka, elec2_path, exactly_once):
    # --role both with an older checkpoint file: 1,000 of 3,000 labels were never learned.
    # It now relearns them; their predictions were sent by the run that committed them, and
    # are not sent again (the records below the committed offsets are learned silently).
    rows = elec2(str(elec2_path), N_EVENTS)
    events, labels, preds = kafka.topics("events", "labels", "preds")
    send_all(kafka.producer(), records(rows, DELAY), events, labels)
    eo = ("--exactly-once",) if exactly_once else ()
    older, clean = run_with_older_state(
        kafka, lambda: kafka.serve_stream(events, labels, preds, *SLOW, *eo, name="a"))
    restore_older(kafka, "a", older)
    proc = kafka.serve_stream(events, labels, preds, *SLOW, *eo, name="a")
    report = kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] == N_EVENTS, proc, 120)
    assert kafka.stop(proc) == 0
    assert 0 < report["events_this_run"] < N_EVENTS
    assert_same_model(kafka.checkpoint_state("a"), clean)
    ids = Counter(json.loads(r.value)["id"] for r in kafka.read_all(preds, exactly_once))
    assert ids == Counter(f"e{i}" for i in range(N_EVENTS))  # each predicted once


def test_a_learner_without_state_refuses_a_group_with_committed_offsets(kafka, elec2_path):
    # The state topic deleted (or its key tombstoned) while the learner was down: it said
    # "starting afresh" and started at the committed offsets, learned 3,300 -> 0, nothing
    # relearned. It now refuses; with --allow-empty-state it relearns what the topics retain.
    rows, events, labels = setup_stream(kafka, elec2_path)
    group = f"{events}-learn"
    proc = learner(kafka, events, labels, "a", group, slow=False)
    kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] == N_EVENTS, proc, 240)
    assert kafka.stop(proc) == 0
    clean = kafka.checkpoint_state("a")
    for path in kafka.tmp_path.iterdir():
        if path.name.startswith("a.") and not path.name.endswith(".log"):
            path.unlink()
    gone = ("--state-topic", f"{events}.state-2")
    proc = learner(kafka, events, labels, "b", group, *gone)
    assert proc.wait(timeout=120) == 3
    refusals = [line for line in kafka.log("b").splitlines() if "river-pa serve:" in line]
    assert len(refusals) == 1 and "no state to restore" in refusals[0]
    assert f"group {group} has committed offsets" in refusals[0]
    assert "--allow-empty-state" in refusals[0]
    proc = learner(kafka, events, labels, "c", group, *gone, "--allow-empty-state", slow=False)
    report = kafka.wait_for_report("c.jsonl", lambda r: r["labelled"] == N_EVENTS, proc, 240)
    assert kafka.stop(proc) == 0
    assert report["events_this_run"] == N_EVENTS  # from the beginning, relearned
    assert_same_model(kafka.checkpoint_state("c"), clean)


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
