"""Connection and authorization failures against a real SASL_PLAINTEXT broker with ACLs.

`scripts/kafka.sh sasl-start` runs a second broker whose only listener is SASL_PLAINTEXT (PLAIN)
with the StandardAuthorizer; the users and passwords are made up here. Each failure is one line
with exit status 1, in seconds, and nothing is committed past an output that was lost.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import (
    ACL, ACLOperation, ACLPermissionType, NewTopic, ResourcePattern, ResourceType,
)
from kafka.structs import TopicPartition

from tests.kafka.conftest import SCRIPT

USERS = {"admin": secrets.token_hex(8), "alice": secrets.token_hex(8)}
SASL = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN"}


def _script(command: str) -> str:
    env = {**os.environ, "RIVER_PA_BROKER_SASL_USERS": ",".join(f"{u}:{p}" for u, p in USERS.items())}
    done = subprocess.run(["bash", str(SCRIPT), command], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def sasl_bootstrap(bootstrap):
    address = _script("sasl-start").splitlines()[-1]
    yield address
    _script("sasl-stop")


def client(user: str, password: str | None = None) -> dict:
    return {**SASL, "sasl_plain_username": user,
            "sasl_plain_password": USERS[user] if password is None else password}


def grant(address: str, topics: dict[str, list[str]], group: str) -> None:
    """Create the topics and give alice exactly the listed operations on each."""
    admin = KafkaAdminClient(bootstrap_servers=address, **client("admin"))
    try:
        admin.create_topics([NewTopic(t, 1, 1) for t in topics])
        acls = [ACL("User:alice", "*", ACLOperation.IDEMPOTENT_WRITE, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.CLUSTER, "kafka-cluster")),
                ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.GROUP, group))]
        for topic, operations in topics.items():
            acls += [ACL("User:alice", "*", getattr(ACLOperation, op), ACLPermissionType.ALLOW,
                         ResourcePattern(ResourceType.TOPIC, topic)) for op in operations]
        result = admin.create_acls(acls)
        assert not result["failed"], result["failed"]
    finally:
        admin.close()


def serve(kafka, address: str, kafka_settings: dict, *args: str) -> subprocess.Popen:
    return kafka.serve("--bootstrap-servers", address, "--kafka", json.dumps(kafka_settings),
                       "--checkpoint-path", "d0.ckpt", "--checkpoint-key", "k", "--report-path",
                       "d0.jsonl", *args)


def one_line_failure(kafka, proc: subprocess.Popen, expected: str, within_s: float = 90) -> str:
    # within_s: less than a bootstrap timeout of 120 s, and room for a start-up of 44 s seen
    # with both cores busy (imports and kernels loading)
    started = time.monotonic()
    assert proc.wait(timeout=120) == 1
    assert time.monotonic() - started < within_s
    log = kafka.log()
    assert "Traceback" not in log, log
    last = log.strip().splitlines()[-1]
    assert last.startswith("river-pa serve: ") and expected in last, log
    return last


# a broker that closes the connection is told apart only when the bootstrap times out (10 s by
# default): 3 s here, which the message must not depend on
FAIL_FAST = {"bootstrap_timeout_ms": 3000}


def test_wrong_password_is_one_line(kafka, sasl_bootstrap):
    # was a 140-line KafkaTimeoutError traceback after 30 s ("Unable to bootstrap")
    proc = serve(kafka, sasl_bootstrap, {**client("alice", "not-the-password"), **FAIL_FAST})
    one_line_failure(kafka, proc, "authentication failed")
    assert len(kafka.log().strip().splitlines()) == 1


def test_plaintext_client_on_a_sasl_port_is_one_line(kafka, sasl_bootstrap):
    proc = serve(kafka, sasl_bootstrap, FAIL_FAST)
    last = one_line_failure(kafka, proc, "does not speak PLAINTEXT")
    assert kafka.log().strip().splitlines() == [last]


@pytest.mark.parametrize("address,reason", [("127.0.0.1:1", "Connection refused"),
                                            ("no-such-host.invalid:9092", "")])
def test_no_broker_at_the_address_is_one_line_at_once(kafka, bootstrap, address, reason):
    # took 12.7 s (16 s for an unresolvable host: kafka-python's bootstrap retries) and printed
    # the unsigned-checkpoints warning first; with a 120 s bootstrap timeout the plain TCP
    # probe must answer, and alone
    proc = kafka.serve("--bootstrap-servers", address, "--checkpoint-path", "d0.ckpt",
                       "--kafka", '{"bootstrap_timeout_ms": 120000}')
    last = one_line_failure(kafka, proc, f"no broker at {address} ({reason}")
    assert kafka.log().strip().splitlines() == [last]


def test_no_read_on_the_events_topic_is_one_line(kafka, sasl_bootstrap):
    p = kafka.prefix
    grant(sasl_bootstrap, {f"{p}-events": ["DESCRIBE"], f"{p}-preds": ["WRITE", "DESCRIBE"]},
          f"{p}-g")
    proc = serve(kafka, sasl_bootstrap, client("alice"), "--events-topic", f"{p}-events",
                 "--predictions-topic", f"{p}-preds", "--group-id", f"{p}-g")
    last = one_line_failure(kafka, proc, "not authorized: TopicAuthorizationFailedError")
    assert f"{p}-events" in last  # the topic it may not read


def test_lost_dead_letters_stop_the_daemon_before_any_commit(kafka, sasl_bootstrap):
    # With no WRITE on the dead-letter topic and one bad record, kafka-python dropped every
    # later send (0 of 20 predictions written) while the daemon committed offset 21 of 21.
    p = kafka.prefix
    events, preds, dlq, group = f"{p}-events", f"{p}-preds", f"{p}-dlq", f"{p}-g"
    grant(sasl_bootstrap, {events: ["READ", "DESCRIBE"], preds: ["WRITE", "DESCRIBE"],
                           dlq: ["DESCRIBE"]}, group)
    producer = KafkaProducer(bootstrap_servers=sasl_bootstrap, **client("admin"))
    producer.send(events, b"not json")
    for i in range(20):
        producer.send(events, json.dumps({"id": f"e{i}", "x": {"a": i}, "y": i % 2 == 0}).encode())
    producer.flush()
    producer.close()
    args = ("--events-topic", events, "--predictions-topic", preds, "--dead-letter-topic", dlq,
            "--metrics-topic", "", "--group-id", group)
    proc = serve(kafka, sasl_bootstrap, client("alice"), *args)
    one_line_failure(kafka, proc, f"cannot write to topic '{dlq}': TopicAuthorizationFailedError")
    reader = KafkaConsumer(bootstrap_servers=sasl_bootstrap, group_id=group, **client("admin"))
    assert reader.committed(TopicPartition(events, 0)) is None  # nothing committed
    reader.close()
    assert not (kafka.tmp_path / "d0.ckpt").exists()

    _allow_write(sasl_bootstrap, dlq)
    (kafka.tmp_path / "d0.jsonl").unlink(missing_ok=True)  # the failed run's reports
    proc = serve(kafka, sasl_bootstrap, client("alice"), *args)
    kafka.wait_for_report("d0.jsonl", lambda r: r["events"] == 20 and r["dead_lettered"] == 1, proc)
    assert kafka.stop(proc) == 0, kafka.log()
    # a restart serves those events again: every prediction and the dead letter are written
    ids = {json.loads(r.value)["id"] for r in _read(sasl_bootstrap, preds)}
    assert ids == {f"e{i}" for i in range(20)}
    dead = _read(sasl_bootstrap, dlq)
    assert [(r.value, dict(r.headers)["reason"]) for r in dead] == [(b"not json", b"invalid_json")]


def _allow_write(address: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=address, **client("admin"))
    try:
        admin.create_acls([ACL("User:alice", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
                               ResourcePattern(ResourceType.TOPIC, topic))])
    finally:
        admin.close()


def _read(address: str, topic: str) -> list:
    consumer = KafkaConsumer(topic, bootstrap_servers=address, auto_offset_reset="earliest",
                             consumer_timeout_ms=3000, **client("admin"))
    try:
        return list(consumer)
    finally:
        consumer.close()
