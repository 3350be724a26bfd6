"""The choice of Kafka client (`--kafka-client`), the `[kafka]` names translated for
librdkafka, and librdkafka's errors translated into the names the loop catches."""

from __future__ import annotations

import importlib.util
import threading
from functools import partial

import pytest
from confluent_kafka import KafkaError, KafkaException
from kafka import errors as kafka_errors

from river_pa import cli
from river_pa.connectors.config import load_config
from river_pa.connectors.kafka import adapter, confluent_producer, errors
from river_pa.connectors.kafka.confluent import ConfluentConsumer, _known
from river_pa.connectors.kafka.partitions import TopicPartition
from river_pa.connectors.kafka.confluent_errors import raising, translate
from river_pa.connectors.kafka.confluent_settings import LIBRDKAFKA_NAMES, librdkafka_settings

NO_BROKER = ["--bootstrap-servers", "127.0.0.1:1"]  # never reached: each case stops before


def test_the_client_comes_from_the_flag_the_file_or_the_environment(tmp_path, monkeypatch):
    assert load_config([], environ={}).kafka_client == "kafka-python"
    assert load_config(["--kafka-client", "confluent"], environ={}).kafka_client == "confluent"
    toml = tmp_path / "serve.toml"
    toml.write_text('kafka_client = "confluent"\n')
    assert load_config(["--config", str(toml)], environ={}).kafka_client == "confluent"
    env = {"RIVER_PA_KAFKA_CLIENT": "confluent"}
    assert load_config([], environ=env).kafka_client == "confluent"
    assert load_config(["--kafka-client", "kafka-python"], environ=env).kafka_client == \
        "kafka-python"


def test_each_client_has_its_adapter():
    python, confluent = adapter("kafka-python"), adapter("confluent")
    assert (python.name, python.outputs.__name__) == ("kafka-python", "Outputs")
    assert (confluent.name, confluent.outputs.__name__) == ("confluent", "ConfluentOutputs")
    assert confluent.make_consumer.__module__ == "river_pa.connectors.kafka.confluent"
    assert python.make_consumer.__module__ == "river_pa.connectors.kafka.client"
    with pytest.raises(ValueError, match="kafka_client must be one of kafka-python, confluent, "
                                         "got 'librdkafka'"):
        adapter("librdkafka")


def test_an_unknown_client_is_refused_naming_it(capsys, monkeypatch):
    assert cli.main(["serve", "--kafka-client", "librdkafka", *NO_BROKER]) == 2
    assert "argument --kafka-client: invalid choice: 'librdkafka'" in capsys.readouterr().err
    monkeypatch.setenv("RIVER_PA_KAFKA_CLIENT", "librdkafka")
    assert cli.main(["serve", *NO_BROKER]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "river-pa serve: kafka_client must be one of kafka-python, confluent, got 'librdkafka'"]


def test_every_role_takes_the_confluent_client():
    for role in ("both", "learn", "predict"):
        cfg = load_config(["--kafka-client", "confluent", "--role", role], environ={})
        assert (cfg.role, cfg.kafka_client) == (role, "confluent")


def test_a_kafka_python_setting_librdkafka_has_no_name_for_is_refused_naming_it(capsys):
    argv = ["serve", "--kafka-client", "confluent", "--kafka", '{"api_version": "3.9"}', *NO_BROKER]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "Kafka client settings ['api_version']" in err and "--kafka-client confluent" in err
    # the same setting is taken by kafka-python (the check of today: unknown to both, refused)
    assert load_config(["--kafka", '{"api_version": "3.9"}'], environ={}).kafka == {
        "api_version": "3.9"}


def test_confluent_kafka_missing_is_one_line_naming_the_extra(capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "confluent_kafka" else real(name, *a))
    assert cli.main(["serve", "--kafka-client", "confluent", *NO_BROKER]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "river-pa serve: --kafka-client confluent needs confluent-kafka: pip install "
        "\"river-pa[confluent]\" (or leave --kafka-client at kafka-python)"]


def test_kafka_python_names_become_librdkafka_properties_for_the_clients_that_take_them():
    settings = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-256",
                "sasl_plain_username": "u", "sasl_plain_password": "p", "ssl_cafile": "/ca.pem",
                "ssl_check_hostname": False, "linger_ms": 5, "compression_type": None,
                "max_poll_interval_ms": 60_000, "max_block_ms": 9_000}
    common = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
              "sasl.username": "u", "sasl.password": "p", "ssl.ca.location": "/ca.pem",
              "ssl.endpoint.identification.algorithm": "none"}
    assert librdkafka_settings(settings, consumer=True) == {
        **common, "max.poll.interval.ms": 60_000}
    assert librdkafka_settings(settings, consumer=False) == {
        **common, "linger.ms": 5, "compression.type": "none"}


def test_every_librdkafka_name_is_a_property_librdkafka_knows():
    confluent_kafka = pytest.importorskip("confluent_kafka")
    for name, prop in LIBRDKAFKA_NAMES.items():
        value = {"security_protocol": "PLAINTEXT", "sasl_mechanism": "PLAIN", "acks": "all",
                 "compression_type": "lz4", "ssl_check_hostname": True}.get(name, "1")
        try:  # librdkafka refuses an unknown property at once; a file path only when used
            confluent_kafka.Producer({prop: _value(name, value)})
        except KafkaException as exc:
            assert "No such configuration property" not in str(exc), (name, prop)


def _value(name: str, value):
    return librdkafka_settings({name: value}, consumer=name not in (
        "linger_ms", "batch_size", "compression_type", "acks", "retries", "delivery_timeout_ms",
        "max_in_flight_requests_per_connection", "transaction_timeout_ms",
        "max_request_size")).get(LIBRDKAFKA_NAMES[name], value)


@pytest.mark.parametrize("code,name", [
    (KafkaError._TRANSPORT, errors.BrokerAway), (KafkaError._ALL_BROKERS_DOWN, errors.BrokerAway),
    (KafkaError._TIMED_OUT, errors.ClientTimeout), (KafkaError._STATE, errors.IllegalState),
    (KafkaError._FENCED, errors.ProducerFenced),
    (KafkaError.PRODUCER_FENCED, errors.ProducerFenced),
    (KafkaError.INVALID_PRODUCER_EPOCH, kafka_errors.InvalidProducerEpochError),
    (KafkaError.MSG_SIZE_TOO_LARGE, errors.RecordTooLarge),
    (KafkaError._PURGE_QUEUE, kafka_errors.TransactionAbortedError),
    (KafkaError.TOPIC_AUTHORIZATION_FAILED, kafka_errors.TopicAuthorizationFailedError),
])
def test_librdkafka_errors_are_the_names_the_loop_catches(code, name):
    translated = translate(KafkaError(code, "why"))
    assert type(translated) is name and str(translated).endswith("why")
    assert isinstance(translated, errors.ClientError)


def test_fencing_is_a_fenced_error_and_a_local_failure_a_client_error():
    assert isinstance(translate(KafkaError(KafkaError.INVALID_PRODUCER_EPOCH)), errors.FENCED)
    other = translate(KafkaError(KafkaError._FAIL, "local failure"))
    assert type(other) is kafka_errors.KafkaError and str(other) == "KafkaError: local failure"


def test_a_raising_call_raises_the_translation_chained_to_librdkafkas():
    def refused():
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "commit_transaction"))

    with pytest.raises(errors.ClientTimeout, match="commit_transaction") as caught:
        raising(refused)
    assert isinstance(caught.value.__cause__, KafkaException)


def test_a_binding_failure_of_confluent_kafka_is_a_client_error():
    def broken():
        raise SystemError("<built-in method flush> returned NULL without setting an exception")

    with pytest.raises(errors.ClientError, match="confluent-kafka failed: <built-in method flush"):
        raising(broken)


def test_a_fatal_error_the_poll_raises_while_looking_for_a_fencing_is_kept_not_raised():
    """Soak seed 167 (confluent, exactly once): an abort failed, and the poll that served
    librdkafka's callbacks to read a fencing raised INVALID_TXN_STATE's fatal error instead;
    a predictor exited 1. It is the producer's fatal error, not a fencing: the caller replaces
    the producer."""
    producer = confluent_producer.ConfluentProducer({"bootstrap.servers": "127.0.0.1:1"}, 1_000,
                                                    2**20)

    class FatalOnPoll:
        def poll(self, timeout):
            raise KafkaException(KafkaError(KafkaError.INVALID_TXN_STATE,
                                            "Failed to end transaction", fatal=True))

    producer._producer = FatalOnPoll()
    assert not confluent_producer.fenced(RuntimeError("abort failed"), producer, 1.0)
    assert isinstance(producer.fatal, kafka_errors.InvalidTxnStateError)
    assert "Failed to end transaction" in str(producer.fatal)


def test_an_offset_request_is_asked_again_while_its_partition_has_no_leader_yet():
    """Soak seed 509: a predictor's watermark request met NotLeaderForPartition during a broker
    restart and the predictor exited 1. Retriable errors are asked again (up to
    CALL_TIMEOUT_S); an error that is not retriable is raised at once."""
    answers = [KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART, None]

    def watermarks():
        code = answers.pop(0)
        if code is not None:
            raise KafkaException(KafkaError(code, "Failed to get watermark offsets"))
        return (0, 42)

    assert _known(raising, watermarks) == (0, 42) and answers == []
    answers[:] = [KafkaError.TOPIC_AUTHORIZATION_FAILED, None]
    with pytest.raises(kafka_errors.TopicAuthorizationFailedError):
        _known(raising, watermarks)
    assert answers == [None]  # asked once


def test_a_transactional_call_librdkafka_never_returns_from_is_a_client_timeout(monkeypatch):
    """Soak seeds 553 and 554: librdkafka's send_offsets_to_transaction missed its own timeout
    (librdkafka#5456) after the group coordinator's broker restarted; the learner sat in it
    until its watchdog ended it, a predictor ignored SIGTERM. The call is waited for on a
    thread of its own for its timeout (plus GRACE_S), then given up as a ClientTimeout."""
    monkeypatch.setattr(confluent_producer, "GRACE_S", 0.0)
    released = threading.Event()
    with pytest.raises(errors.ClientTimeout, match="send_offsets_to_transaction not done "
                                                   "after 0.05 s"):
        confluent_producer._bounded(released.wait, 0.05, "send_offsets_to_transaction")
    released.set()  # the call returns at last, on its own thread: nothing waits for it

    def refused():
        raise KafkaException(KafkaError(KafkaError.INVALID_PRODUCER_EPOCH, "fenced"))

    with pytest.raises(errors.FENCED):  # an error of the call is the caller's, translated
        confluent_producer._bounded(partial(raising, refused), 10, "commit")


@pytest.mark.parametrize("code", [KafkaError._STATE, KafkaError._OUTDATED, KafkaError._FAIL])
def test_a_seek_librdkafka_refuses_as_too_early_or_outdated_assigns_the_offset_instead(code):
    """CI (confluent, exactly once): a learner's first seek after it took the lease raised
    "Failed to seek to offset 0: Local: Outdated" (an assignment newer than the seek's came
    in between) and it exited 1 at start. Such a seek, like one of a partition whose fetch has
    not started (_STATE), assigns the partition at the offset instead; other errors raise."""
    import confluent_kafka as ck

    tp = TopicPartition("t", 0)
    consumer = ConfluentConsumer.__new__(ConfluentConsumer)
    consumer._assigned, consumer._sought, consumer._eof, consumer._tps = {tp}, {}, {}, {}

    class Refusing:
        assigned = None

        def seek(self, partition):
            raise KafkaException(KafkaError(code, "Failed to seek to offset 7"))

        def position(self, partitions):
            return [ck.TopicPartition(p.topic, p.partition, ck.OFFSET_INVALID)
                    for p in partitions]

        def assign(self, partitions):
            Refusing.assigned = [(p.topic, p.partition, p.offset) for p in partitions]

    consumer._consumer = Refusing()
    if code == KafkaError._FAIL:
        with pytest.raises(errors.ClientError):
            consumer.seek(tp, 7)
        assert Refusing.assigned is None
        return
    consumer.seek(tp, 7)
    assert Refusing.assigned == [("t", 0, 7)] and consumer.position(tp) == 7
