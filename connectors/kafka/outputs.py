"""The daemon's outputs: checked sends, topic limits, and the dead-letter format."""

from __future__ import annotations

from collections import deque

from kafka import KafkaProducer
from kafka import errors as kafka_errors
from kafka.record.default_records import DefaultRecordBatchBuilder

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.errors import OutputError, OutputTooLarge

__all__ = ["DEFAULT_TOPIC_LIMIT", "OutputError", "OutputTooLarge", "Outputs", "RECORD_SLACK",
           "dead_letter_headers", "topic_limits"]


def dead_letter_headers(record, reason: str, detail: str) -> list[tuple[str, bytes]]:
    """Headers naming why a record was rejected and where it came from."""
    return [
        ("reason", reason.encode()),
        ("detail", detail[:500].encode()),
        ("source_topic", record.topic.encode()),
        ("source_partition", str(record.partition).encode()),
        ("source_offset", str(record.offset).encode()),
    ]


# Kafka's default message.max.bytes, for a topic whose max.message.bytes cannot be read (not
# created yet: it will get the broker's default; or no DESCRIBE_CONFIGS permission).
DEFAULT_TOPIC_LIMIT = 1_048_588

# A bound on what a one-record batch without headers adds to its key and value (the batch
# header, 61 bytes, and the record's varints: kafka-python's estimate adds 85-90).
RECORD_SLACK = 128


def topic_limits(cfg: ServeConfig, topics: list[str]) -> dict[str, int]:
    """max.message.bytes of each topic that has it set (read once at start).

    A record over its topic's limit must never reach the broker: kafka-python's idempotent
    producer treats the refusal as fatal and fails every later send, so `Outputs.send` refuses
    it first.
    """
    from kafka.admin import ConfigResource, ConfigResourceType

    from river_pa.connectors.kafka.admin import make_admin

    try:
        admin = make_admin(cfg)
    except kafka_errors.KafkaError:
        return {}
    try:
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics])["topic"]
    except kafka_errors.KafkaError:  # e.g. no DESCRIBE_CONFIGS: the default applies
        return {}
    finally:
        admin.close()
    return {t: int(c["max.message.bytes"]["value"]) for t, c in described.items()
            if "max.message.bytes" in c}


# Errors of a batch refused as too large; kafka-python's flush raises UnknownError("Future not
# done") after it split such a batch (the split batches' futures replace the refused one's)
TOO_LARGE = (kafka_errors.MessageSizeTooLargeError, kafka_errors.RecordListTooLargeError)


class Outputs:
    """The daemon's producer, with every send checked before the offsets it covers are committed.

    kafka-python reports a failed send only through its future (and, with a topic it may not
    write, went on dropping every later send while the daemon committed): failures are collected
    by an errback (it runs on the producer's IO thread) and raised by `check`. A record too large
    for its topic or the producer is refused by `send` before it is sent.
    """

    def __init__(self, producer: KafkaProducer, dead_letter_topic: str, limits: dict[str, int]):
        self.producer = producer
        self.dead_letter_topic = dead_letter_topic
        self.max_request_size = producer.config["max_request_size"]
        self.limits = limits
        self.failed: deque = deque()  # (topic, exception)

    def limit(self, topic: str) -> int:
        """The largest record (bytes, as a one-record batch) that `topic` takes from us."""
        return min(self.max_request_size, self.limits.get(topic, DEFAULT_TOPIC_LIMIT))

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, headers=None):
        """Send one record, or raise MessageSizeTooLargeError when it is over `limit(topic)`."""
        self._check_size(topic, value, key, headers)
        future = self.producer.send(topic, key=key, value=value, headers=headers)
        future.add_errback(self._on_error, self.producer, topic)

    def _check_size(self, topic: str, value: bytes | None, key: bytes | None, headers) -> None:
        """Raise MessageSizeTooLargeError when the record is over `limit(topic)`."""
        limit = self.limit(topic)
        # the exact estimate (about 1 us) only near the limit: a one-record batch without
        # headers is its key and value plus at most RECORD_SLACK bytes
        if headers or len(value or b"") + len(key or b"") + RECORD_SLACK > limit:
            size = DefaultRecordBatchBuilder.estimate_size_in_bytes(key, value, headers or [])
            if size > limit:
                raise kafka_errors.MessageSizeTooLargeError(
                    f"{size} bytes, topic {topic} takes at most {limit}")

    def _on_error(self, producer, topic, exc) -> None:
        if producer is self.producer:  # not a replaced one's (its transaction was abandoned)
            self.failed.append((topic, exc))

    def replace(self, producer: KafkaProducer, limits: dict[str, int]) -> None:
        """Send with `producer` and `limits` from now on, forgetting the failures of the
        producer it replaces."""
        self.producer = producer
        self.limits = limits
        self.failed.clear()

    def dead_letter(self, record, reason: str, detail: str) -> bool:
        """Send `record` unchanged to the dead-letter topic, its value cut to fit the topic
        (headers `truncated` and `original_size` then say so); True when it was cut."""
        headers = dead_letter_headers(record, reason, detail)
        value = record.value
        limit = self.limit(self.dead_letter_topic)
        marks = [("truncated", b"true"), ("original_size", b"%d" % len(value or b""))]
        overhead = DefaultRecordBatchBuilder.estimate_size_in_bytes(record.key, b"", headers + marks)
        cut = value is not None and overhead + len(value) > limit
        if cut:
            headers += marks
            value = value[:max(limit - overhead - 16, 0)]  # 16: the varints sizing the value
        self.send(self.dead_letter_topic, value, key=record.key, headers=headers)
        return cut

    def forget_aborted(self) -> None:
        """Forget the sends that failed because their transaction was aborted: the daemon
        rolled back and serves their records again (they stopped a daemon that had rolled
        back after a rebalance, at its next checkpoint)."""
        aborted = kafka_errors.TransactionAbortedError
        self.failed = deque(f for f in self.failed if not isinstance(f[1], aborted))

    def check(self) -> None:
        """Flush, then raise OutputError (naming the topic and the cause) if any send failed,
        OutputTooLarge if the broker refused a batch as too large; KafkaTimeoutError when a
        transactional producer's records are not sent within its max_block_ms: kafka-python
        3.0.12 can lose the request adding their partitions to the transaction, sent as the
        transaction coordinator's broker stopped (see `transact`), and they then waited for
        ever (a predictor froze in a rolling restart of a 3-broker cluster). A producer that
        is not transactional fails its records after delivery_timeout_ms by itself."""
        self._flush()
        too_large = [f for f in self.failed if isinstance(f[1], TOO_LARGE)]
        if too_large or self.failed:
            topic, exc = (too_large or self.failed)[0]
            error = OutputTooLarge if too_large else OutputError
            raise error(f"cannot write to topic {topic!r}: {type(exc).__name__}: {exc}") from exc

    def _flush(self) -> None:
        """Flush the producer (see `check`)."""
        config = self.producer.config
        timeout_ms = config["max_block_ms"] if config["transactional_id"] else None
        try:
            self.producer.flush(timeout=timeout_ms and timeout_ms / 1000)
        except kafka_errors.KafkaTimeoutError as exc:
            raise kafka_errors.KafkaTimeoutError(
                f"records not sent after {timeout_ms} ms (max_block_ms)") from exc
        except kafka_errors.UnknownError as exc:  # see TOO_LARGE
            raise OutputTooLarge(f"a batch was refused as too large: {exc}") from exc


