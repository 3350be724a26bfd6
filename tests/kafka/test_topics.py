"""`river-pa topics create` against a real broker: the topics' settings read back from Kafka."""

from __future__ import annotations

import pytest
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from river_pa.cli import main


def settings(bootstrap: str, names: list[str]) -> dict[str, tuple]:
    """{topic: (partitions, replicas, cleanup.policy, min.insync.replicas)} as the broker says."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        described = [t for t in admin.describe_topics(names) if t["error_code"] == 0]
        configs = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, t["name"]) for t in described],
            config_filter="all")["topic"] if described else {}
    finally:
        admin.close()
    return {t["name"]: (len(t["partitions"]), len(t["partitions"][0]["replica_nodes"]),
                        configs[t["name"]]["cleanup.policy"]["value"],
                        configs[t["name"]]["min.insync.replicas"]["value"]) for t in described}


def create(bootstrap: str, prefix: str, *extra: str) -> int:
    return main(["topics", "create", "--bootstrap-servers", bootstrap,
                 "--events-topic", f"{prefix}-events", "--labels-topic", f"{prefix}-labels",
                 "--predictions-topic", f"{prefix}-preds", "--metrics-topic", f"{prefix}-metrics",
                 "--dead-letter-topic", f"{prefix}-dlq", *extra])


def names(prefix: str) -> list[str]:
    return [f"{prefix}-{n}" for n in ("events", "labels", "preds", "metrics", "dlq",
                                      "events.model", "events.state", "events.lease",
                                      "events.control")]


def test_creates_every_topic_serve_uses_and_leaves_them_as_they_are(kafka, capsys):
    p = kafka.prefix
    assert create(kafka.bootstrap, p, "--partitions", "4") == 0
    created = settings(kafka.bootstrap, names(p))
    assert created == {
        **{f"{p}-{n}": (4, 1, "delete", "1") for n in ("events", "labels", "preds", "metrics",
                                                       "dlq")},
        **{f"{p}-events.{n}": (1, 1, "compact", "1") for n in ("model", "state", "lease",
                                                                       "control")}}
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == ["created"] * 9
    assert out[0] == f"created {p}-events (events topic): 4 partitions, replication 1"
    # again, without --partitions: the existing topics' count; nothing changes
    assert create(kafka.bootstrap, p) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["exists"] * 9
    assert settings(kafka.bootstrap, names(p)) == created


def test_events_and_labels_not_co_partitioned_is_one_line_and_creates_nothing(kafka, capsys):
    events, labels = kafka.topics("events", partitions=3)[0], kafka.topics("labels",
                                                                           partitions=2)[0]
    assert create(kafka.bootstrap, kafka.prefix) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"river-pa topics: events topic {events!r} has 3 partitions and labels topic "
        f"{labels!r} 2: they must be co-partitioned (the same count), or a label lands on "
        "another partition than its event\n")
    assert set(settings(kafka.bootstrap, names(kafka.prefix))) == {events, labels}


def test_a_model_topic_that_is_not_compacted_is_named_with_its_setting(kafka, capsys):
    model = kafka.topics("events.model")[0]  # cleanup.policy=delete: snapshots would expire
    assert create(kafka.bootstrap, kafka.prefix) == 1
    assert capsys.readouterr().err == (f"river-pa topics: model topic {model!r} has "
                                       "cleanup.policy=delete, not compact\n")
    assert set(settings(kafka.bootstrap, names(kafka.prefix))) == {model}


@pytest.mark.parametrize("extra, why", [
    (["--partitions", "0"], "argument --partitions: must be > 0, got '0'"),
    (["--events-topic", "a b"], "events_topic must be a Kafka topic name"),
])
def test_bad_flags_are_one_line(kafka, capsys, extra, why):
    assert create(kafka.bootstrap, kafka.prefix, *extra) in (1, 2)
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1


def test_on_three_brokers_every_topic_has_three_replicas_two_in_sync(cluster, capsys):
    p = cluster.prefix
    assert create(cluster.bootstrap, p, "--partitions", "2") == 0
    assert {n: s[1:] for n, s in settings(cluster.bootstrap, names(p)).items()} == {
        **{f"{p}-{n}": (3, "delete", "2") for n in ("events", "labels", "preds", "metrics",
                                                    "dlq")},
        **{f"{p}-events.{n}": (3, "compact", "2") for n in ("model", "state", "lease",
                                                                       "control")}}


def test_shards_get_a_lease_partition_each_and_a_mix_topic_and_no_fewer_partitions(kafka,
                                                                                   capsys):
    p = kafka.prefix
    assert create(kafka.bootstrap, p, "--partitions", "1", "--shards", "2") == 1
    assert capsys.readouterr().err == ("river-pa topics: 1 partitions for the events and labels "
                                       "topics, and shards is 2: each shard needs one at least\n")
    assert settings(kafka.bootstrap, names(p)) == {}  # nothing created
    assert create(kafka.bootstrap, p, "--partitions", "3", "--shards", "2") == 0
    got = settings(kafka.bootstrap, [f"{p}-events.lease.2", f"{p}-events.mix", f"{p}-events.lease"])
    assert got == {f"{p}-events.lease.2": (2, 1, "compact", "1"),
                   f"{p}-events.mix": (1, 1, "compact", "1")}
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        mix = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, f"{p}-events.mix")],
                                     config_filter="all")["topic"][f"{p}-events.mix"]
    finally:
        admin.close()
    assert mix["segment.ms"]["value"] == "600000"  # compacted soon: it is read at every start
