"""librdkafka's errors translated into the names the loop catches (kafka/errors.py, bound to
kafka-python's classes, which is always installed: the default client).

A broker's error code is Kafka's own (kafka-python's `for_code` gives its class: 10 ->
MessageSizeTooLargeError, 90 -> ProducerFencedError); librdkafka's local codes (negative) are
mapped by `LOCAL`; any other is a plain `ClientError` carrying librdkafka's text.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaError, KafkaException
from kafka import errors as kafka_errors

from river_pa.connectors.kafka import CLIENT_DEFAULTS
from river_pa.connectors.kafka.confluent_settings import librdkafka_settings

__all__ = ["LOCAL", "librdkafka_common", "on_client_error", "outage_over", "raise_login_failure",
           "raising", "translate"]

log = logging.getLogger("river_pa.serve")
# librdkafka's own log lines, through Python's logging (served by its calls) instead of stderr
LIBRDKAFKA_LOG = logging.getLogger("river_pa.librdkafka")

LOCAL = {
    KafkaError._TRANSPORT: kafka_errors.KafkaConnectionError,  # no broker answered
    KafkaError._ALL_BROKERS_DOWN: kafka_errors.KafkaConnectionError,
    KafkaError._RESOLVE: kafka_errors.KafkaConnectionError,
    KafkaError._TIMED_OUT: kafka_errors.KafkaTimeoutError,  # a call not done within its bound
    KafkaError._MSG_TIMED_OUT: kafka_errors.KafkaTimeoutError,
    KafkaError._STATE: kafka_errors.IllegalStateError,  # e.g. a seek of a revoked partition
    KafkaError._FENCED: kafka_errors.ProducerFencedError,  # a newer producer took the id
    KafkaError._UNKNOWN_PARTITION: kafka_errors.UnknownTopicOrPartitionError,
    KafkaError._UNKNOWN_TOPIC: kafka_errors.UnknownTopicOrPartitionError,
    # sends of an aborted transaction (Outputs.forget_aborted forgets them)
    KafkaError._PURGE_QUEUE: kafka_errors.TransactionAbortedError,
    KafkaError._PURGE_INFLIGHT: kafka_errors.TransactionAbortedError,
}


def translate(error: KafkaError | KafkaException) -> kafka_errors.KafkaError:
    """The loop's error (a kafka-python error instance) for librdkafka's `error`, with its text.

    >>> from confluent_kafka import KafkaError
    >>> translate(KafkaError(KafkaError._TIMED_OUT, "flush"))
    KafkaTimeoutError('flush')
    >>> type(translate(KafkaError(KafkaError.PRODUCER_FENCED, "new epoch"))).__name__
    'ProducerFencedError'
    """
    if isinstance(error, KafkaException):
        error = error.args[0] if error.args and isinstance(error.args[0], KafkaError) else \
            KafkaError(KafkaError._FAIL, str(error))
    code, text = error.code(), error.str()
    if code in LOCAL:
        cls = LOCAL[code]
    elif code > 0:
        cls = kafka_errors.for_code(code)
    else:
        cls = kafka_errors.KafkaError
    return cls(text)


def raising(call, *args, **kwargs):
    """`call(*args, **kwargs)`, a KafkaException it raises translated (`translate`), chained.

    A SystemError ("returned NULL without setting an exception") is a client error too:
    confluent-kafka 2.16's `flush` raised it once a fenced producer's fatal error came while
    it served its callbacks (ci24, both cores busy); the learner exited 1 instead of reading
    the fencing from the producer and stepping down.
    """
    try:
        return call(*args, **kwargs)
    except KafkaException as exc:
        raise translate(exc) from exc
    except SystemError as exc:
        raise kafka_errors.KafkaError(f"confluent-kafka failed: {exc}") from exc


_OUTAGE = {"on": False}  # no broker answers (one warning per outage)
_LOGIN: list = []  # a failed SASL/SSL login librdkafka reported (it retries for ever)


def on_client_error(error: KafkaError) -> None:
    """librdkafka's errors outside any call (a broker away, ...): one warning per outage
    (librdkafka reconnects by itself), others one line each."""
    if error.code() == KafkaError._ALL_BROKERS_DOWN:
        if not _OUTAGE["on"]:
            log.warning("no broker answers (%s): polling on until one does", error.str())
        _OUTAGE["on"] = True
    elif error.code() == KafkaError._AUTHENTICATION:
        _LOGIN.append(error)
    elif error.code() != KafkaError._TRANSPORT:
        log.warning("Kafka client: %s", error.str())


def raise_login_failure() -> None:
    """Raise the failed login librdkafka reported, as kafka-python's failed bootstrap (its
    `explain` then says "authentication failed at ..."): librdkafka would retry for ever."""
    if _LOGIN:
        raise kafka_errors.KafkaTimeoutError(f"bootstrap failed: {_LOGIN[-1].str()}")


def outage_over() -> None:
    """Records came: the next outage is warned of again."""
    _OUTAGE["on"] = False


def librdkafka_common(cfg, consumer: bool) -> dict:
    """The settings every librdkafka client of the daemon takes (a consumer's if `consumer`,
    else the producer's): the brokers, the client id, the reconnection backoff of
    kafka/client.py and the user's `[kafka]` settings translated (confluent_settings.py)."""
    return {"bootstrap.servers": cfg.bootstrap_servers, "client.id": cfg.client_id,
            "reconnect.backoff.max.ms": CLIENT_DEFAULTS["reconnect_backoff_max_ms"],
            "error_cb": on_client_error, "logger": LIBRDKAFKA_LOG,
            **librdkafka_settings(cfg.kafka, consumer)}
