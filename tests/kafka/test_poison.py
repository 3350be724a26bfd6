"""Bad records of every kind, interleaved with good ones, go to the dead-letter topic."""

from __future__ import annotations

import inspect
import json

import pytest

import river_pa
from river_pa.connectors.replay import elec2, records

N_EVENTS = 300
DELAY = 10
GOOD_X = {"a": 1.0}
BAD_EVENTS = {
    "undecodable": b"\xff\xfe\xfa not utf-8",
    "invalid_json": b'{"id": "p1", "x": {',
    "not_an_object": b"[1, 2, 3]",
    "missing_id": json.dumps({"x": GOOD_X}).encode(),
    "missing_x": json.dumps({"id": "p2"}).encode(),
    "bad_x": json.dumps({"id": "p3", "x": [1, 2]}).encode(),
    # a string reaches the model, which refuses it (PAClassifier has no categorical features)
    "feature_rejected": json.dumps({"id": "p4", "x": {"a": "12"}}).encode(),
    "bad_value": json.dumps({"id": "p9", "x": {"a": {"b": 2}}}).encode(),
    "non_finite": b'{"id": "p5", "x": {"a": NaN}}',
    "bad_label": json.dumps({"id": "p6", "x": GOOD_X, "y": "maybe"}).encode(),
    "oversize": json.dumps({"id": "p7", "x": {f"f{i}": 1.0 for i in range(400)}}).encode(),
    # beyond int64: it crashed the daemon when echoed in the prediction, again on every restart
    "bad_ts": json.dumps({"id": "p8", "x": GOOD_X, "ts": 1e300}).encode(),
}
BAD_LABELS = {
    "bad_label": json.dumps({"id": "e3"}).encode(),  # no y
    "invalid_json": b"}{",
}
MAX_BYTES = 2_000


def test_every_bad_record_is_dead_lettered_and_good_ones_served(kafka, elec2_path, capsys):
    events, labels, preds = kafka.topics("events", "labels", "preds")
    dlq = f"{events}-dlq"  # the name serve_stream gives the daemon
    producer = kafka.producer()
    bad = iter(list(BAD_EVENTS.items()))
    bad_labels = iter(list(BAD_LABELS.items()))
    for kind, rid, value, ts in records(elec2(str(elec2_path), N_EVENTS), DELAY):
        topic = events if kind == "event" else labels
        producer.send(topic, key=rid.encode(), value=json.dumps(value).encode(), timestamp_ms=ts)
        poison = next(bad if kind == "event" else bad_labels, None)
        if poison:  # right after a good record, with its timestamp
            producer.send(topic, key=b"poison", value=poison[1], timestamp_ms=ts,
                          headers=[("expect", poison[0].encode())])
    producer.send(events, key=b"tombstone", value=None)
    producer.send(labels, key=b"nobody", value=b'{"id": "nobody", "y": true}')  # no event (yet)
    producer.flush()

    proc = kafka.serve_stream(events, labels, preds, "--max-record-bytes", str(MAX_BYTES),
                              group=f"{events}-g")
    report = kafka.wait_for_report("d0.jsonl", lambda r: r["labelled"] == N_EVENTS, proc)
    assert kafka.stop(proc) == 0

    sources = {(r.topic, r.partition, r.offset): r
               for t in (events, labels) for r in kafka.read_all(t) if r.key in (b"poison", b"tombstone")}
    dead = kafka.read_all(dlq)
    assert len(dead) == len(sources) == len(BAD_EVENTS) + len(BAD_LABELS) + 1
    for record in dead:
        headers = {k: v.decode() for k, v in record.headers}
        source = sources[(headers["source_topic"], int(headers["source_partition"]),
                          int(headers["source_offset"]))]
        assert record.value == source.value  # the original bytes
        expected = dict(source.headers).get("expect", b"undecodable").decode()
        assert headers["reason"] == expected, headers
        if expected == "feature_rejected":  # the model's own message, as evaluate gives it
            assert headers["detail"] == "TypeError: " + evaluated(kafka.tmp_path, record.value,
                                                                  capsys)
    ids = [json.loads(r.value)["id"] for r in kafka.read_all(preds)]
    assert ids == [f"e{i}" for i in range(N_EVENTS)]
    assert report["learned"] == N_EVENTS
    # the event the model refused is an event (decoded), like one it raised on (model_error)
    assert report["events"] == N_EVENTS + 1
    assert report["dead_lettered"] == len(dead)
    assert report["dead_letter_reasons"]["bad_label"] == 2
    # kept until its event comes, bounded like pending events (--pending-max, --pending-ttl-ms)
    assert report["early_labels"] == 1 and report["orphan_labels"] == report["pending"] == 0


def evaluated(folder, value: bytes, capsys) -> str:
    """`river-pa evaluate`'s message for the record as the one line of a JSONL file."""
    from river_pa import cli

    path = folder / "rejected.jsonl"
    path.write_text(json.dumps({**json.loads(value), "y": True}) + "\n")
    capsys.readouterr()
    assert cli.main(["evaluate", str(path), "--model", "PAClassifier", "--quiet"]) == 2
    return capsys.readouterr().err.removeprefix(f"river-pa evaluate: {path}:1: ").rstrip("\n")


@pytest.mark.skipif("max_classes" not in inspect.signature(river_pa.PAMultiClassifier).parameters,
                    reason="the learners' max_classes bound is not merged yet")
def test_labels_past_the_class_bound_are_dead_lettered(kafka):
    # 9,000 distinct labels gave PAMultiClassifier a 2 GiB margin matrix, 20,000 killed it:
    # whoever writes the labels topic controlled the daemon's memory
    events, preds = kafka.topics("events", "preds")
    producer = kafka.producer()
    labels = ["a", "b", "c", "a", "d", "b", "e", "c"]
    for i, y in enumerate(labels):
        producer.send(events, json.dumps({"id": f"e{i}", "x": {"f": i}, "y": y}).encode())
    producer.flush()
    proc = kafka.serve_stream(events, None, preds, "--model", "PAMultiClassifier",
                              "--model-params", '{"max_classes": 3}')
    report = kafka.wait_for_report("d0.jsonl", lambda r: r["events"] == len(labels), proc)
    assert kafka.stop(proc) == 0
    report = kafka.last_report("d0.jsonl")
    assert report["dead_letter_reasons"] == {"too_many_classes": 2}
    assert report["learned"] == len(labels) - 2
    dead = kafka.read_all(f"{events}-dlq")
    assert [json.loads(r.value)["y"] for r in dead] == ["d", "e"]
    assert all(dict(r.headers)["reason"] == b"too_many_classes" for r in dead)


def test_events_past_the_vocabulary_bound_are_dead_lettered(kafka):
    # events carrying y and tens of thousands of fresh keys each grew the model without limit
    # (RSS 277 -> 648 MB, all counted as learned); the bound is Vocabulary.max_keys (2**20)
    from river_pa._core.features import Vocabulary

    width, full = 60_000, Vocabulary.max_keys // 60_000  # 17 events fill 1,020,000 keys
    events, preds = kafka.topics("events", "preds")
    producer = kafka.producer(max_request_size=2**20)
    def send(i, keys):
        value = {"id": f"e{i}", "x": {k: 1.0 for k in keys}, "y": i % 2 == 0}
        producer.send(events, json.dumps(value, separators=(",", ":")).encode())
    for i in range(full + 1):
        send(i, (f"k{i * width + j}" for j in range(width)))
    send(full + 1, ("k0", "k1"))  # known keys: learned
    room = Vocabulary.max_keys - full * width
    send(full + 2, (f"n{j}" for j in range(room)))  # exactly fills the vocabulary: learned
    producer.flush()
    proc = kafka.serve_stream(events, None, preds, "--max-record-bytes", str(2**20))
    report = kafka.wait_for_report("d0.jsonl", lambda r: r["events"] == full + 3, proc, 300)
    assert kafka.stop(proc) == 0
    report = kafka.last_report("d0.jsonl")
    assert report["dead_letter_reasons"] == {"too_many_features": 1}
    assert report["learned"] == full + 2
    dead = kafka.read_all(f"{events}-dlq")
    assert [json.loads(r.value)["id"] for r in dead] == [f"e{full}"]
    assert dict(dead[0].headers)["detail"].decode() == (
        f"{width} new feature keys would take the vocabulary past max_keys={Vocabulary.max_keys} "
        f"(it holds {full * width})")
    model = kafka.checkpoint_state("d0")["model"]
    assert model._index.size == Vocabulary.max_keys + 1  # the sink and every key that fitted


def test_a_model_that_raises_dead_letters_the_record_then_stops_if_it_always_does(kafka):
    # a learner that raised on one event crashed the daemon with a traceback, on every restart;
    # MultinomialNB passes the start check, learns the count -1, then divides by zero in every
    # prediction
    from river_pa.connectors.loop.records import MODEL_FAILURES_TO_STOP

    events, preds = kafka.topics("events", "preds")
    producer = kafka.producer()
    def send(i, x, **y):
        producer.send(events, json.dumps({"id": f"e{i}", "x": x, **y}).encode())
    send(0, {"a": -1.0}, y=True)
    for i in range(1, 6):
        send(i, {"a": 1.0})
    producer.flush()
    proc = kafka.serve_stream(events, None, preds, "--model", "river.naive_bayes:MultinomialNB")
    report = kafka.wait_for_report("d0.jsonl", lambda r: r["events"] == 6, proc)
    assert report["dead_letter_reasons"] == {"model_error": 5} and report["learned"] == 1
    dead = kafka.read_all(f"{events}-dlq")
    assert {dict(r.headers)["detail"] for r in dead} == {b"ZeroDivisionError: float division by zero"}
    assert proc.poll() is None  # still serving
    for i in range(6, 6 + MODEL_FAILURES_TO_STOP):
        send(i, {"a": 1.0})
    producer.flush()
    assert proc.wait(timeout=120) == 2
    assert kafka.log("d0").strip().splitlines()[-1] == (
        f"river-pa serve: model MultinomialNB failed on {MODEL_FAILURES_TO_STOP} records in a "
        "row (last: ZeroDivisionError: float division by zero); stopped without a checkpoint: the records "
        "since the last one are served again at the next start")
