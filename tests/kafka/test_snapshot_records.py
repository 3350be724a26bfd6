"""Bad, forged and replayed records in the state and model topics (a real broker, the daemon's own
loaders): none runs code, with or without a key; the newest valid version wins; an older version
re-sent (or relabelled as a newer one) is refused; a new learner term publishes nothing new;
a forged progress record is not believed; a reader keeps only the chunks it may still load."""

from __future__ import annotations

import json
import os
import time

import pytest

from kafka import KafkaConsumer

from river_pa.connectors.state import checkpoint, snapshots
from river_pa.connectors.replay import elec2, records, send_all
from river_pa.linear_model import PAClassifier

N_EVENTS = 600
INVALID = "invalid snapshot record skipped"


class Forged:
    """A pickle that runs `func(*args)` when loaded by the standard unpickler."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def learner(kafka, events, name, *extra):
    """A learner of the group '<events>-learn'; its labels topic '<events>-labels' stays
    empty (each event carries its label), but a learner needs one."""
    return kafka.serve_stream(events, f"{events}-labels", f"{events}-unused", "--role", "learn",
                              "--publish-every", "100", "--publish-seconds", "0.5",
                              "--checkpoint-seconds", "0.5", *extra, name=name,
                              group=f"{events}-learn")


def predictor(kafka, events, name, *extra):
    return kafka.serve_stream(events, None, f"{events}-preds", "--role", "predict", *extra,
                              name=name, group=f"{events}-predict")


def newest(kafka, topic, name) -> dict:
    """The manifest of the newest version of `name` in `topic` whose chunks are all there."""
    consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap, group_id=None,
                             enable_auto_commit=False)
    try:
        return snapshots.restore(consumer, topic, name)[0]
    finally:
        consumer.close()


def forge(kafka, topic, name, after: dict, marker) -> None:
    """Write two versions after `after`, unsigned: a manifest that is not JSON, then a
    well-formed snapshot (manifest, digest, header) whose pickle runs `touch marker`."""
    producer = kafka.producer(max_request_size=2**21)
    term, version = after["term"], after["version"]
    producer.send(topic, key=f"{name}/{term}/{version + 1}".encode(), value=b"{not a manifest")
    state = {"model": Forged(os.system, f"touch {marker}"), "learned": 1, "events": 1,
             "published_at_ms": 1}
    model = PAClassifier()
    payload = checkpoint.dumps(state, model, {}, None, {"term": term, "version": version + 2})
    snapshots.Publisher(topic, name, term, version + 1, []).publish(
        lambda t, value, key: producer.send(t, key=key, value=value), payload)
    producer.flush()


def test_forged_and_bad_versions_run_nothing_and_the_newest_valid_one_wins(kafka, elec2_path):
    # With no key, a pickle in the model topic ran in every predictor at once, and one in the
    # state topic in the next learner; a manifest that was not JSON stopped every learner start
    # (exit 3) and left a predictor started afterwards with no model.
    rows = elec2(str(elec2_path), N_EVENTS)
    stream = list(records(rows, None))
    events, _ = kafka.topics("events", "events-labels")
    marker = kafka.tmp_path / "ran"
    send_all(kafka.producer(), stream[:N_EVENTS // 2], events, None)
    first = learner(kafka, events, "l1")
    kafka.wait_for_report("l1.jsonl", lambda r: r["model_learned"] == N_EVENTS // 2, first)
    assert kafka.stop(first) == 0
    model = newest(kafka, f"{events}.model", "model")
    state = newest(kafka, f"{events}.state", f"{events}-learn.learner")
    forge(kafka, f"{events}.model", "model", model, marker)
    forge(kafka, f"{events}.state", f"{events}-learn.learner", state, marker)

    p = predictor(kafka, events, "p")
    report = kafka.wait_for_report("p.jsonl", lambda r: r["model_version"] is not None, p)
    assert report["model_version"] == model["version"] and report["invalid_snapshots"] == 2
    assert report["model_learned"] == N_EVENTS // 2
    assert "refusing to unpickle posix.system" in kafka.log("p")
    send_all(kafka.producer(), stream[N_EVENTS // 2:], events, None)
    second = learner(kafka, events, "l2")
    report = kafka.wait_for_report("l2.jsonl", lambda r: r["learned"] == N_EVENTS, second)
    # it restored the valid state (half the events) and learned the rest only
    assert report["events_this_run"] == N_EVENTS // 2
    assert report["invalid_snapshots"] == 4  # two in each topic
    assert f"restored version {state['term']}/{state['version']}" in kafka.log("l2")
    assert kafka.log("l2").count(INVALID) == 4 and kafka.log("p").count(INVALID) == 2
    for proc in (p, second):
        assert kafka.stop(proc) == 0
    assert not marker.exists()


def test_replayed_versions_are_refused_and_a_new_term_publishes_nothing_new(kafka, elec2_path):
    # An older signed snapshot re-sent moved every predictor back to it; a new learner term
    # republished the unchanged model as a new version.
    key = ("--checkpoint-key", "the key")
    rows = elec2(str(elec2_path), N_EVENTS)
    events, _ = kafka.topics("events", "events-labels")
    model_topic = f"{events}.model"
    send_all(kafka.producer(), records(rows, None), events, None)
    first = learner(kafka, events, "l1", *key)
    kafka.wait_for_report("l1.jsonl", lambda r: r["model_learned"] == N_EVENTS, first)
    assert kafka.stop(first) == 0
    final = newest(kafka, model_topic, "model")
    p = predictor(kafka, events, "p", *key)
    kafka.wait_for_report("p.jsonl", lambda r: r["model_version"] == final["version"], p)

    written = kafka.read_all(model_topic)
    old = json.loads(next(r.value for r in written if r.key == b"model/1/1"))
    chunks = [r.value for r in written if r.key.startswith(b"model/1/1/") and r.value]
    producer = kafka.producer(max_request_size=2**21)
    for version in (1, final["version"] + 5):  # as it was, and relabelled as a newer version
        prefix = f"model/1/{version}"
        for i, chunk in enumerate(chunks):
            producer.send(model_topic, key=f"{prefix}/{i}".encode(), value=chunk)
        producer.send(model_topic, key=prefix.encode(),
                      value=json.dumps({**old, "version": version}).encode())
    producer.flush()
    report = kafka.wait_for_report("p.jsonl", lambda r: r["invalid_snapshots"] == 2, p)
    assert report["model_version"] == final["version"]
    log = kafka.log("p")
    assert "version 1/1 is not newer than the one held" in log
    assert f"its manifest says version {final['version'] + 5}, the signed header 1" in log

    # a forged progress record claimed 1e15 events learned since the model: not believed
    now_ms = int(time.time() * 1000)
    for learned, expected in ((10**15, None), (N_EVENTS + 5, 5)):
        progress = {"learned": learned, "events": learned, "time_ms": now_ms,
                    "term": final["term"], "version": final["version"]}
        producer.send(model_topic, key=b"model.progress", value=json.dumps(progress).encode())
        producer.flush()
        kafka.wait_for_report("p.jsonl", lambda r: r["learned_since_model"] == expected, p)

    second = learner(kafka, events, "l2", *key)
    kafka.wait_for_log("l2", "term 2 of the group's learner", second)
    kafka.wait_for_report("l2.jsonl", lambda r: r["learned"] == N_EVENTS
                          and r["uptime_s"] > 1, second)
    for proc in (p, second):
        assert kafka.stop(proc) == 0
    terms = {json.loads(r.value)["term"] for r in kafka.read_all(model_topic)
             if r.value and r.key.count(b"/") == 2}
    assert terms == {1}  # the new term found its model published: no version of its own


def test_a_reader_keeps_only_the_chunks_it_may_still_load(kafka):
    # 100 MB of chunks of versions nobody published stayed in every predictor's memory
    (topic,) = kafka.topics("models")
    producer = kafka.producer(max_request_size=2**21)

    def send(t, value, key):
        producer.send(t, key=key, value=value)

    def junk(term, version, n):
        for i in range(n):
            send(topic, os.urandom(snapshots.CHUNK_BYTES), f"m/{term}/{version}/{i}".encode())

    publisher = snapshots.Publisher(topic, "m", 1, 0, [])
    v1 = publisher.publish(send, b"one" * 1000)
    junk(1, 2, 6)  # never published (3 MiB, under the bound): the bound drops them later (a
    # newer manifest no longer does: a forged one dropped the chunks of a version in writing)
    publisher.version = 2
    v3 = publisher.publish(send, b"three" * 1000)
    junk(7, 1, 20)  # above every manifest: bounded by max_pending_bytes
    for version in range(100, 110):  # one small chunk each: bounded by MAX_PENDING_VERSIONS
        send(topic, b"x", f"m/9/{version}/0".encode())
    producer.flush()
    reasons = []
    reader = snapshots.Reader(KafkaConsumer(bootstrap_servers=kafka.bootstrap, group_id=None,
                                            enable_auto_commit=False),
                              topic, "m", reasons.append, max_pending_bytes=4 * 2**20)
    try:
        reader.read_to_end(60)
        # 1/2's 6 chunks, then 20 of 512 KiB: 1/2 dropped first, then the others twice, 2
        # left; then the oldest of 11 versions with no manifest beyond 4
        assert reader.nbytes == v1["bytes"] + v3["bytes"] + 4
        assert len(reasons) == 10 and all("with no manifest, beyond" in r for r in reasons)
        assert [m["version"] for m, _ in reader.candidates()] == [3, 1]
        reader.accept(v3)
        assert reader.nbytes == 4 and list(reader.candidates()) == []
    finally:
        reader.close()


@pytest.mark.both_clients
def test_a_reader_of_committed_records_gets_past_an_aborted_tail(kafka):
    """A topic whose only records are an aborted transaction's (a learner fenced right after
    sending its first snapshot) is read to its end by a read_committed reader, on both
    clients (confluent-kafka's position counted delivered records only: every reader of the
    model topic waited 120 s and exited 3, in a loop, soak seed 204)."""
    from kafka import KafkaProducer

    from river_pa.connectors.config import ServeConfig
    from river_pa.connectors.kafka import adapter

    [topic] = kafka.topics("model")
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap,
                             transactional_id=f"{topic}-aborted")
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(3):
        producer.send(topic, key=f"model/1/1/{i}".encode(), value=b"chunk")
    producer.flush()
    producer.abort_transaction()
    producer.close()
    cfg = ServeConfig(bootstrap_servers=kafka.bootstrap, exactly_once=True,
                      kafka_client=kafka.client)
    reader = snapshots.Reader(adapter(kafka.client).make_offsets_client(cfg), topic, "model",
                              lambda reason: None)
    try:
        reader.read_to_end(30)  # raised SnapshotError after 30 s on confluent-kafka
        assert reader.newest == (0, 0) and not list(reader.candidates())
    finally:
        reader.close()
