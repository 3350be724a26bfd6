"""One active learner among standbys (`serve --role learn`): a standby takes over from a SIGKILLed
learner and from a SIGSTOPped one (a zombie, which steps down when it wakes up), and the
final model and metric equal those of one learner that was never interrupted."""

from __future__ import annotations

import pickle
import signal
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions

from river_pa.connectors.state import checkpoint, snapshots
from river_pa.connectors.replay import elec2, records, send_all
from tests.kafka.test_end_to_end import river_reference

N_EVENTS = 3_000
DELAY = 100
SLOW = ("--max-poll-records", "25", "--checkpoint-every", "150", "--publish-every", "300",
        "--publish-seconds", "0.5")
ACTIVE = "active learner: holds the lease"
STANDBY = "standby: the lease"


def learner(kafka, events, labels, name, group, *extra, slow=True):
    """A `--role learn` process of `group` (no --state-topic: the default '<events>.state');
    `slow`: small batches and frequent checkpoints (SLOW), so a fault lands mid-stream (a
    learner nothing interrupts learns the same model without them, about twice as fast)."""
    return kafka.serve_stream(events, labels, f"{events}-unused", "--role", "learn",
                              *(SLOW if slow else ()), *extra, name=name, group=group)


def wait_count(kafka, name, text, count, proc, timeout_s=120):
    """Wait until a daemon's output holds `text` at least `count` times."""
    deadline = time.monotonic() + timeout_s
    while kafka.log(name).count(text) < count:
        assert proc.poll() is None, kafka.exited(proc)
        assert time.monotonic() < deadline, f"{name} logged {text!r} fewer than {count} times"
        time.sleep(0.2)


def uninterrupted(kafka, events, labels, eo) -> dict:
    """The final state of one learner alone on the whole stream (a group and model topic
    of its own, on the same topics)."""
    proc = learner(kafka, events, labels, "clean", f"{events}-clean", "--model-topic",
                   f"{events}-clean.model", *eo, slow=False)
    kafka.wait_for_report("clean.jsonl", lambda r: r["labelled"] == N_EVENTS, proc, 240)
    assert kafka.stop(proc) == 0
    return kafka.checkpoint_state("clean")


def newest_state(kafka, events, group, exactly_once) -> dict:
    """The state a next learner of `group` would restore from the state topic."""
    return newest_snapshot(kafka, f"{events}.state", f"{group}.learner", exactly_once)


def newest_snapshot(kafka, topic, name, exactly_once) -> dict:
    """The newest snapshot `name` of `topic` (as a restart or a new predictor reads it)."""
    reader = KafkaConsumer(bootstrap_servers=kafka.bootstrap, group_id=None,
                           enable_auto_commit=False, max_partition_fetch_bytes=4 * 2**20,
                           isolation_level="read_committed" if exactly_once else "read_uncommitted")
    try:
        found = snapshots.restore(reader, topic, name)
    finally:
        reader.close()
    assert found is not None, f"no snapshot {name!r} in {topic}"
    _, payload = found
    path = kafka.tmp_path / "restored.ckpt"
    path.write_bytes(payload)
    meta = checkpoint.read_header(path)
    meta.pop("offsets"), meta.pop("sha256")
    return checkpoint.load(path, meta, None)


def assert_same(state: dict, clean: dict, rows) -> None:
    assert pickle.dumps(state["model"]) == pickle.dumps(clean["model"])
    assert state["stats"].metric.get() == clean["stats"].metric.get() == [river_reference(rows, DELAY)]
    assert state["stats"].counts["learned"] == N_EVENTS
    assert len(state["pending"]) == len(state["early"]) == 0


def setup_stream(kafka, elec2_path):
    rows = elec2(str(elec2_path), N_EVENTS)
    events, labels = kafka.topics("events", "labels", partitions=3)
    send_all(kafka.producer(), records(rows, DELAY), events, labels)
    return rows, events, labels


def mid_stream(kafka, elec2_path, exactly_once):
    """The stream, the uninterrupted learner's final state, then learner a (active, a third
    of the labels learned) and learner b (standby) of one group."""
    rows, events, labels = setup_stream(kafka, elec2_path)
    eo = ("--exactly-once",) if exactly_once else ()
    clean = uninterrupted(kafka, events, labels, eo)
    group = f"{events}-learn"
    a = learner(kafka, events, labels, "a", group, *eo)
    kafka.wait_for_log("a", ACTIVE, a, 120)
    b = learner(kafka, events, labels, "b", group, *eo)
    kafka.wait_for_log("b", STANDBY, b, 120)
    assert ACTIVE not in kafka.log("b")
    kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] >= N_EVENTS // 3, a, 240)
    return rows, events, clean, group, a, b


@pytest.mark.one_mode(False)
def test_a_standby_takes_over_from_a_killed_learner(kafka, elec2_path, exactly_once):
    rows, events, clean, group, a, b = mid_stream(kafka, elec2_path, exactly_once)
    a.send_signal(signal.SIGKILL)
    a.wait()
    for path in kafka.tmp_path.iterdir():  # a's machine is gone: nothing of it is read again
        if path.name.startswith("a.") and not path.name.endswith(".log"):
            path.unlink()
    kafka.wait_for_log("b", ACTIVE, b, 120)
    report = kafka.wait_for_report("b.jsonl", lambda r: r["labelled"] == N_EVENTS, b, 240)
    assert report["events_this_run"] < N_EVENTS  # b started from a's state, not afresh
    assert kafka.stop(b) == 0
    assert_same(kafka.checkpoint_state("b"), clean, rows)
    assert_same(newest_state(kafka, events, group, exactly_once), clean, rows)
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        lease = admin.describe_topics([f"{events}.lease"])[0]
        configs = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, f"{events}.state")])
    finally:
        admin.close()
    assert len(lease["partitions"]) == 1
    assert configs["topic"][f"{events}.state"]["cleanup.policy"]["value"] == "compact"


@pytest.mark.one_mode(True)
def test_a_zombie_learner_steps_down_and_writes_nothing(kafka, elec2_path, exactly_once):
    rows, events, clean, group, a, b = mid_stream(kafka, elec2_path, exactly_once)
    a.send_signal(signal.SIGSTOP)  # its session expires: b is elected
    try:
        kafka.wait_for_log("b", ACTIVE, b, 120)
        kafka.wait_for_report("b.jsonl", lambda r: r["labelled"] > N_EVENTS // 3, b, 240)
    finally:
        a.send_signal(signal.SIGCONT)
    reports = (kafka.tmp_path / "a.jsonl").read_text()
    kafka.wait_for_log("a", "stepping down, writing nothing more", a, 120)
    wait_count(kafka, "a", STANDBY, 1, a)  # and waits again
    report = kafka.wait_for_report("b.jsonl", lambda r: r["labelled"] == N_EVENTS, b, 240)
    assert (kafka.tmp_path / "a.jsonl").read_text() == reports  # not one report after waking
    assert report["events_this_run"] < N_EVENTS
    assert kafka.stop(b) == 0
    assert_same(kafka.checkpoint_state("b"), clean, rows)
    assert_same(newest_state(kafka, events, group, exactly_once), clean, rows)
    wait_count(kafka, "a", ACTIVE, 2, a)  # b left: a is elected again, restores b's state
    assert kafka.stop(a) == 0


def test_partitions_added_later_are_learned_from(kafka, elec2_path):
    rows = elec2(str(elec2_path), N_EVENTS)
    stream = list(records(rows, DELAY))
    cut = next(i for i, r in enumerate(stream) if r[0] == "event" and r[1] == f"e{N_EVENTS // 2}")
    events, labels = kafka.topics("events", "labels", partitions=2)
    send_all(kafka.producer(), stream[:cut], events, labels)
    a = learner(kafka, events, labels, "a", f"{events}-learn")
    labelled = sum(r[0] == "label" for r in stream[:cut])
    kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] == labelled, a, 240)
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        admin.create_partitions({t: NewPartitions(3) for t in (events, labels)})
    finally:
        admin.close()
    kafka.wait_for_log("a", "learning from 6 partitions", a, 120)
    send_all(kafka.producer(), stream[cut:], events, labels)
    report = kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] == N_EVENTS, a, 240)
    assert kafka.stop(a) == 0
    assert report["learned"] == N_EVENTS and report["orphan_labels"] == 0
    assert report["metrics"]["Accuracy"] == river_reference(rows, DELAY)
    counts = {}
    for record in kafka.read_all(events):
        counts[record.partition] = counts.get(record.partition, 0) + 1
    assert counts.get(2, 0) > 0  # the new partition held events


def fence(kafka, transactional_id, name, proc):
    """Take `transactional_id` from the learner `name`; it steps down, and never rolls back and
    goes on (confluent-kafka may name the fencing only in the abort of a rollback): kafka-python 3.0.12 answered the produce refused for the old epoch with an epoch
    bump that the broker could take for a retry of the intruder's own, and the learner kept the
    id (once in 8 runs, before `kafka.client.fence_on_stale_epoch`)."""
    intruder = KafkaProducer(bootstrap_servers=kafka.bootstrap, transactional_id=transactional_id)
    intruder.init_transactions()
    intruder.close()
    kafka.wait_for_log(name, "stepping down", proc, 120)
    assert "rolled back: resuming" not in kafka.log(name)


@pytest.mark.both_clients
def test_a_fenced_learner_steps_down_and_is_elected_again(kafka, elec2_path):
    # Another producer takes the learners' transactional id mid-stream (what a new active
    # learner does): the learner's open transaction is aborted and its next write refused.
    # It steps down (no crash, no loop), is elected again as the only learner, and the
    # result is still exact.
    rows, events, labels = setup_stream(kafka, elec2_path)
    clean = uninterrupted(kafka, events, labels, ("--exactly-once",))
    group = f"{events}-learn"
    a = learner(kafka, events, labels, "a", group, "--exactly-once")
    kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] >= N_EVENTS // 3, a, 240)
    fence(kafka, f"{group}.learner", "a", a)
    wait_count(kafka, "a", ACTIVE, 2, a)
    # the second term went on from the state: its reports count fewer events than the stream
    # (the first term's last report may count them all: it is written before the commit that
    # the fencing refused)
    kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] == N_EVENTS
                          and r["events_this_run"] < N_EVENTS, a, 240)
    assert kafka.stop(a) == 0
    assert kafka.log("a").count("stepping down") == 1
    assert_same(kafka.checkpoint_state("a"), clean, rows)
    assert_same(newest_state(kafka, events, group, True), clean, rows)
