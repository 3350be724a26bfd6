"""`serve --role learn` and `--role predict`: one learner publishes the model to a compacted topic,
stateless predictors in their own group restore it, hot-swap newer versions and predict."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter

import pytest

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from river_pa.connectors.replay import elec2, records, send_all
from tests.kafka.test_end_to_end import river_reference

N_EVENTS = 3_000
DELAY = 100


def predictor(kafka, events, preds, name, *extra):
    """A predictor in the group '<events>-predict', with the flags of `serve_stream`."""
    return kafka.serve_stream(events, None, preds, "--role", "predict", "--checkpoint-seconds",
                              "0.5", *extra, name=name, group=f"{events}-predict")


def covered(kafka, preds, committed_only) -> dict:
    """The id -> prediction records in `preds` (at least once: an id may come twice)."""
    out: dict = {}
    for record in kafka.read_all(preds, committed_only):
        value = json.loads(record.value)
        out.setdefault(value["id"], []).append(value)
    return out


def wait_covered(kafka, preds, ids, procs, committed_only, timeout_s=120):
    """Poll the predictions until every id in `ids` has one; return them."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = covered(kafka, preds, committed_only)
        if ids <= got.keys():
            return got
        for proc in procs:
            assert proc.poll() is None, kafka.exited(proc)
        assert time.monotonic() < deadline, f"{len(ids - got.keys())} events never predicted"
        time.sleep(0.5)


@pytest.mark.one_mode(False)
def test_one_learner_and_predictors_that_are_killed_and_replaced(kafka, elec2_path, exactly_once):
    rows = elec2(str(elec2_path), N_EVENTS)
    stream = list(records(rows, DELAY))
    cut = next(i for i, r in enumerate(stream) if r[0] == "event" and r[1] == f"e{N_EVENTS // 2}")
    events, labels, preds = kafka.topics("events", "labels", "preds", partitions=6)
    model_topic = f"{events}.model"
    labelled = sum(r[0] == "label" for r in stream[:cut])
    send_all(kafka.producer(), stream[:cut], events, labels)
    eo = ("--exactly-once",) if exactly_once else ()
    slot = ("--transactional-id", f"{events}-slot1")  # p1's replacement fences it
    p1 = predictor(kafka, events, preds, "p1", *eo, *slot)  # before the learner: waits
    kafka.wait_for_log("p1", "waiting for the first model snapshot", p1, 120)
    producer = kafka.producer()
    producer.send(model_topic, key=b"model/1/1", value=b"{not a manifest")
    producer.flush()
    kafka.wait_for_log("p1", "invalid snapshot record skipped", p1)  # and it keeps waiting
    learner = kafka.serve_stream(events, labels, f"{events}-unused", "--role", "learn",
                                 "--publish-every", "300", "--publish-seconds", "0.5",
                                 "--checkpoint-seconds", "0.5", *eo,
                                 "--session-timeout-ms", "30000",  # paused below: stay in
                                 name="learner")
    kafka.wait_for_report("learner.jsonl", lambda r: r["labelled"] == labelled, learner)
    p2 = predictor(kafka, events, preds, "p2", *eo)
    first = wait_covered(kafka, preds, {f"e{i}" for i in range(N_EVENTS // 2)}, [learner, p1, p2],
                         exactly_once)
    kafka.stop(p1, signal.SIGKILL)
    p3 = predictor(kafka, events, preds, "p3", *eo, *slot)  # a fresh node: model from Kafka
    kafka.wait_for_log("p3", "model version", p3, 120)
    # The learner merges its 12 partitions in event-time order from what the log holds: a
    # burst sent while it reads reaches the partitions at slightly different times, so it can
    # release a record before an older one not yet written on another partition (seen on a
    # loaded machine: the accuracy one event off). A live producer appends in time order;
    # here the learner is paused until the burst is in the log whole.
    learner.send_signal(signal.SIGSTOP)
    try:
        send_all(kafka.producer(), stream[cut:], events, labels)
    finally:
        learner.send_signal(signal.SIGCONT)
    got = wait_covered(kafka, preds, {f"e{i}" for i in range(N_EVENTS)}, [learner, p2, p3],
                       exactly_once)
    report = kafka.wait_for_report("learner.jsonl", lambda r: r["labelled"] == N_EVENTS, learner)
    # the learner emits no predictions: every one came from a predictor, none lost
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        assert f"{events}-unused" not in admin.list_topics()
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, model_topic)])
    finally:
        admin.close()
    assert configs["topic"][model_topic]["cleanup.policy"]["value"] == "compact"
    assert got.keys() == {f"e{i}" for i in range(N_EVENTS)}
    if exactly_once:  # for read-committed readers, exactly one prediction per event
        assert Counter(len(vs) for vs in got.values()) == {1: N_EVENTS}
    assert {v["daemon"] for vs in got.values() for v in vs} <= {"p1", "p2", "p3"}
    assert {v["daemon"] for i in range(N_EVENTS // 2, N_EVENTS) for v in got[f"e{i}"]} <= {"p2", "p3"}
    # the predictors' model advances: once the learner's last version reaches p3, the next
    # events (unlabelled, so the learner's metric stays that of `rows`) are predicted with it
    early = max(v["model_version"] for vs in first.values() for v in vs)
    final = kafka.wait_for_report("learner.jsonl", lambda r: r["model_learned"] == N_EVENTS,
                                  learner)["model_version"]
    staleness = kafka.wait_for_report("p3.jsonl", lambda r: r["model_version"] == final, p3)
    assert final > early >= 1 and staleness["model_age_s"] >= 0
    assert staleness["learned_since_model"] == 0 and staleness["stale_s"] == 0  # all learned
    assert staleness["model_learned"] == N_EVENTS
    extra = kafka.producer()
    for i, (x, _) in enumerate(rows[:50]):
        extra.send(events, key=f"x{i}".encode(), value=json.dumps({"id": f"x{i}", "x": x}).encode())
    extra.flush()
    later = wait_covered(kafka, preds, {f"x{i}" for i in range(50)}, [learner, p2, p3],
                         exactly_once)
    assert {v["model_version"] for i in range(50) for v in later[f"x{i}"]} == {final}
    for vs in got.values():
        assert all(v["n_learned"] <= N_EVENTS for v in vs)
    # the learner's metric is still the exact progressive one
    assert report["events"] == report["learned"] == N_EVENTS  # before the 50 unlabelled
    assert report["orphan_labels"] == report["pending"] == 0
    assert report["metrics"]["Accuracy"] == river_reference(rows, DELAY)
    for proc in (learner, p2, p3):
        assert kafka.stop(proc) == 0
