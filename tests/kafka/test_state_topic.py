"""The daemon's state in a compacted Kafka topic: a new node (every local file gone) restores it,
and a snapshot of any size (32 MiB here) is chunked under the record limits and read back."""

from __future__ import annotations

import json
import pickle

import pytest
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.admin import ConfigResource, ConfigResourceType

from river_pa.connectors.state import snapshots
from river_pa.connectors.replay import elec2, records, send_all
from river_pa.linear_model import PAClassifier

N_EVENTS = 3_000
DELAY = 100


def serve_until(kafka, topics, name, predicate, *extra):
    """Serve until the report satisfies `predicate`, stop cleanly, return the last report."""
    events, labels, preds = topics
    proc = kafka.serve_stream(events, labels, preds, *extra, name=name, group=f"{events}-{name}")
    report = kafka.wait_for_report(f"{name}.jsonl", predicate, proc, 240)
    assert kafka.stop(proc) == 0
    return report


@pytest.mark.one_mode(True)
def test_a_new_node_restores_the_state_from_kafka(kafka, elec2_path, exactly_once):
    # Between the two runs of "node" every local file is deleted. Without the state topic it
    # started with an empty model at the committed offsets and orphaned the pending labels.
    stream = list(records(elec2(str(elec2_path), N_EVENTS), DELAY))
    cut = next(i for i, r in enumerate(stream) if r[0] == "event" and r[1] == f"e{N_EVENTS // 2}")
    events, labels, preds, preds_clean = kafka.topics("events", "labels", "preds", "preds-clean")
    state = f"{events}-state"
    extra = ("--state-topic", state, *(("--exactly-once",) if exactly_once else ()))
    labelled = sum(r[0] == "label" for r in stream[:cut])
    send_all(kafka.producer(), stream[:cut], events, labels)
    serve_until(kafka, (events, labels, preds), "node",
                lambda r: r["events"] == N_EVENTS // 2 and r["labelled"] == labelled, *extra)
    for path in list(kafka.tmp_path.iterdir()):
        if path.name.startswith("node") and not path.name.endswith(".log"):
            path.unlink()
    send_all(kafka.producer(), stream[cut:], events, labels)
    report = serve_until(kafka, (events, labels, preds), "node",
                         lambda r: r["labelled"] == N_EVENTS, *extra)
    assert "restored version" in kafka.log("node")
    assert report["learned"] == N_EVENTS and report["orphan_labels"] == 0
    assert report["events_this_run"] == N_EVENTS // 2
    serve_until(kafka, (events, labels, preds_clean), "clean", lambda r: r["labelled"] == N_EVENTS)
    restored, clean = kafka.checkpoint_state("node"), kafka.checkpoint_state("clean")
    assert pickle.dumps(restored["model"]) == pickle.dumps(clean["model"])
    assert restored["stats"].metric.get() == clean["stats"].metric.get()
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, state)])
    finally:
        admin.close()
    assert configs["topic"][state]["cleanup.policy"]["value"] == "compact"


def test_a_32_mib_model_is_published_in_chunks_and_restored(kafka):
    model = PAClassifier(n_features=2**22)
    model.learn_one({"a": 1.0, "b": -2.0}, True)
    payload = pickle.dumps(model)
    assert len(payload) >= 32 * 2**20
    (topic,) = kafka.topics("models")
    producer = kafka.producer(max_request_size=1_048_576)

    def send(topic, value, key):
        producer.send(topic, key=key, value=value)

    publisher = snapshots.Publisher(topic, "m", 1, 0, [])
    for older in (b"an older, smaller snapshot", b"another"):
        publisher.publish(send, older)
    second = publisher.publish(send, payload)
    producer.flush()
    assert second["chunks"] == -(-len(payload) // snapshots.CHUNK_BYTES) == 65
    assert (second["term"], second["version"]) == (1, 3)
    reader = KafkaConsumer(bootstrap_servers=kafka.bootstrap, group_id=None,
                           enable_auto_commit=False, max_partition_fetch_bytes=4 * 2**20)
    try:
        manifest, restored = snapshots.restore(reader, topic, "m")
        assert snapshots.restore(reader, topic, "other") is None
    finally:
        reader.close()
    assert manifest == second and restored == payload
    assert pickle.loads(restored).predict_proba_one({"a": 1.0}) == model.predict_proba_one({"a": 1.0})
    tombstones = [r for r in kafka.read_all(topic) if r.value is None]
    # the oldest version's chunk and manifest: the two newest versions stay
    assert [r.key for r in tombstones] == [b"m/1/1/0", b"m/1/1"]
