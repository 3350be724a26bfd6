"""The confluent-kafka (librdkafka) adapter of the data path (`--kafka-client confluent`): the
main group consumer, the offsets client and the readers of the state and model topics
(`ConfluentConsumer`), the producer (`ConfluentProducer`: idempotent; transactional with
exactly-once), presenting kafka/protocols.py (kafka-python's names) with librdkafka's errors
translated (kafka/confluent_errors.py), so the loop is the same under both clients.

The control plane stays on kafka-python under both clients in this step (low traffic): the
admin client (topic limits, topic creation, group size: kafka/admin.py, kafka/outputs.py) and
the learner's lease group with its custom assignor (kafka/assignor.py, roles/lease.py): a
learner's data path (its self-assigned consumer, offsets client, producer) runs here, its
lease on kafka-python.

Partitions are kafka-python's `TopicPartition` (hashable (topic, partition) pairs) on the
loop's side; librdkafka's are made at each call. A rebalance's callbacks run inside `poll` on
the loop's thread (librdkafka serves them there), never between two of its calls.
"""

from __future__ import annotations

import logging
import time

import confluent_kafka as ck
from kafka.errors import AuthorizationError, KafkaError, KafkaTimeoutError

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.kafka import CLIENT_DEFAULTS
from river_pa.connectors.kafka.confluent_errors import (
    librdkafka_common, outage_over, raise_login_failure, raising, translate,
)
from river_pa.connectors.kafka.confluent_producer import (
    ConfluentOutputs, ConfluentProducer, _ck, close_producer, fenced, make_producer, transact,
)
from river_pa.connectors.kafka.partitions import TopicPartition

log = logging.getLogger("river_pa.serve")

__all__ = ["ConfluentConsumer", "ConfluentOutputs", "ConfluentProducer", "Record",
           "close_producer", "fenced", "make_consumer", "make_offsets_client", "make_producer",
           "poll", "transact"]

CALL_TIMEOUT_S = 10.0  # a metadata, committed-offset or watermark request


class Record:
    """A consumed record, with kafka-python's attribute names (timestamp in ms)."""

    __slots__ = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")

    def __init__(self, topic, partition, offset, timestamp, key, value, headers):
        self.topic, self.partition, self.offset = topic, partition, offset
        self.timestamp, self.key, self.value, self.headers = timestamp, key, value, headers


def _known(call, *args, **kwargs):
    """`call(*args, **kwargs)`, again while it raises a retriable error, up to CALL_TIMEOUT_S,
    as kafka-python retries its offset requests: librdkafka learns a topic created just before
    from its next metadata (UnknownTopicOrPartition: the state topic a new node creates, then
    reads), and a partition's new leader after a broker restart (NotLeaderForPartition: a
    predictor exited 1 at start in a rolling restart, soak seed 509)."""
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while True:
        try:
            return call(*args, **kwargs)
        except KafkaError as exc:
            if not exc.retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _offset(value: int) -> int | None:
    return value if value >= 0 else None  # librdkafka's logical offsets: none known


class ConfluentConsumer:
    """A librdkafka consumer presenting kafka/protocols.py `Consumer`."""

    def __init__(self, settings: dict, max_records: int = 500, auto_offset_reset="earliest",
                 bootstrap_s: float = CLIENT_DEFAULTS["bootstrap_timeout_ms"] / 1000):
        self.config = settings
        self._consumer = raising(ck.Consumer, settings)
        self._bootstrap(bootstrap_s)
        self._max, self._reset = max_records, auto_offset_reset
        self._assigned: set = set()
        self._tps: dict = {}  # (topic, partition) -> TopicPartition, made once
        self._sought: dict = {}  # partition -> offset sought, until a record of it comes
        # partition -> offset where its end was reached (enable.partition.eof): librdkafka's
        # position counts delivered records only, so a tail of aborted transactions (or
        # control markers) left a reader of the committed records below the end for ever
        # (fault soak seed 204: a learner's first snapshot aborted, every reader of the model
        # topic stuck and exiting 3 in a loop)
        self._eof: dict = {}

    def _bootstrap(self, timeout_s: float) -> None:
        """Ask the cluster's metadata once, as kafka-python's bootstrap does: KafkaTimeoutError
        ("bootstrap ...", which `diagnostics.explain` tells apart: a wrong SASL login, a
        listener of another protocol) when no broker answers within bootstrap_timeout_ms;
        librdkafka alone retried for ever."""
        try:
            self._consumer.list_topics(timeout=timeout_s)
        except ck.KafkaException as exc:
            raise KafkaTimeoutError(f"bootstrap: no broker answered within {timeout_s:g} s "
                                    f"({exc.args[0].str()})") from exc

    def _tp(self, topic: str, partition: int) -> TopicPartition:
        tp = self._tps.get((topic, partition))
        if tp is None:
            tp = self._tps[(topic, partition)] = TopicPartition(topic, partition)
        return tp

    def poll(self, timeout_ms: int = 0) -> dict:
        """Up to `max_records` records by partition, waiting up to `timeout_ms` for a first."""
        messages = raising(self._consumer.consume, self._max, timeout_ms / 1000)
        if not messages:
            raise_login_failure()
        out: dict = {}
        for m in messages:
            if m.error() is not None:
                if m.error().code() == ck.KafkaError._PARTITION_EOF:
                    tp = self._tp(m.topic(), m.partition())
                    self._eof[tp] = m.offset()
                    self._sought.pop(tp, None)
                else:
                    self._on_message_error(m.error())
                continue
            topic, partition = m.topic(), m.partition()
            tp = self._tp(topic, partition)
            records = out.get(tp)
            if records is None:
                records = out[tp] = []
                self._sought.pop(tp, None)
            records.append(Record(topic, partition, m.offset(), m.timestamp()[1], m.key(),
                                  m.value(), m.headers() or []))
        if messages:
            outage_over()
        return out

    @staticmethod
    def _on_message_error(error: ck.KafkaError) -> None:
        """A fatal error or an authorization refused ends the poll (as kafka-python's does);
        others (a subscribed topic that does not exist yet, ...) are logged."""
        translated = translate(error)
        if error.fatal() or isinstance(translated, AuthorizationError):
            raise translated
        log.warning("Kafka consumer: %s", error.str())

    def subscribe(self, topics: list[str], listener=None) -> None:
        """Join the group on `topics`; `listener`'s on_partitions_revoked/assigned are called
        (inside `poll`) with kafka-python's partitions."""
        def assigned(consumer, partitions):
            tps = {self._tp(p.topic, p.partition) for p in partitions}
            raising(consumer.assign, partitions)
            self._assigned = tps
            self._sought.clear()
            if listener is not None:
                listener.on_partitions_assigned(tps)

        def revoked(consumer, partitions):
            tps = {self._tp(p.topic, p.partition) for p in partitions}
            raising(consumer.unassign)
            self._assigned = set()
            if listener is not None:
                listener.on_partitions_revoked(tps)

        raising(self._consumer.subscribe, topics, on_assign=assigned, on_revoke=revoked,
                on_lost=revoked)

    def unsubscribe(self) -> None:
        raising(self._consumer.unsubscribe)
        self._assigned = set()

    def assign(self, partitions: list) -> None:
        raising(self._consumer.assign, [_ck(tp) for tp in partitions])
        self._assigned = set(partitions)
        self._eof.clear()

    def assignment(self) -> set:
        return set(self._assigned)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        meta = raising(self._consumer.list_topics, topic, timeout=CALL_TIMEOUT_S).topics.get(topic)
        return None if meta is None or meta.error is not None else set(meta.partitions)

    def topics(self) -> set[str]:
        return set(raising(self._consumer.list_topics, timeout=CALL_TIMEOUT_S).topics)

    def committed(self, partition) -> int | None:
        [answer] = raising(self._consumer.committed, [_ck(partition)], timeout=CALL_TIMEOUT_S)
        if answer.error is not None:
            raise translate(answer.error)
        return _offset(answer.offset)

    def commit(self, offsets: dict | None = None, timeout_ms: int | None = None) -> None:
        """Commit `offsets` ({partition: OffsetAndMetadata}) synchronously."""
        answers = raising(self._consumer.commit, offsets=[
            _ck(tp, meta.offset) for tp, meta in (offsets or {}).items()], asynchronous=False)
        for answer in answers or ():
            if answer.error is not None:
                raise translate(answer.error)

    def seek(self, partition, offset: int) -> None:
        if partition not in self._assigned:
            raise ValueError(f"{partition} is not assigned")  # as kafka-python's seek
        self._eof.pop(partition, None)
        try:
            self._consumer.seek(_ck(partition, offset))
        except ck.KafkaException as exc:
            # _STATE: its fetch not started yet (just assigned); _OUTDATED: an assignment
            # newer than the seek's came in between (CI, a learner's first seek after its
            # lease: exit 1 at start)
            if exc.args[0].code() not in (ck.KafkaError._STATE, ck.KafkaError._OUTDATED):
                raise translate(exc) from exc
            self._reassign({partition: offset})
        self._sought[partition] = offset

    def _reassign(self, offsets: dict) -> None:
        """Assign the assignment again, `offsets` ({partition: offset}) where given, each
        other partition where it is (librdkafka refuses to seek a partition whose fetch has
        not started, and to change an eager group member's assignment partly)."""
        positions = dict.fromkeys(self._assigned, ck.OFFSET_INVALID)  # invalid: committed
        for answer in raising(self._consumer.position, [_ck(tp) for tp in self._assigned]):
            if answer.offset >= 0:
                positions[self._tp(answer.topic, answer.partition)] = answer.offset
        positions.update({tp: o for tp, o in self._sought.items() if tp in positions})
        positions.update(offsets)
        raising(self._consumer.assign, [_ck(tp, o) for tp, o in positions.items()])

    def _watermarks(self, partition) -> tuple[int, int]:
        return _known(raising, self._consumer.get_watermark_offsets, _ck(partition),
                      timeout=CALL_TIMEOUT_S, cached=False)

    def seek_to_beginning(self, *partitions) -> None:
        for tp in partitions or tuple(self._assigned):
            self.seek(tp, self._watermarks(tp)[0])

    def seek_to_end(self, *partitions) -> None:
        for tp in partitions or tuple(self._assigned):
            self.seek(tp, self.end_offsets([tp])[tp])

    def position(self, partition, timeout_ms: int | None = None) -> int | None:
        """The offset of the next record of `partition` this consumer returns."""
        if partition in self._sought:
            return self._sought[partition]
        [answer] = raising(self._consumer.position, [_ck(partition)])
        if answer.offset >= 0 or partition in self._eof:
            return max(answer.offset, self._eof.get(partition, -1))
        committed = self.committed(partition) if self.config.get("group.id") else None
        if committed is not None:
            return committed
        low, high = self._watermarks(partition)
        return low if self._reset == "earliest" else high

    def highwater(self, partition) -> int | None:
        """The high watermark of the last fetch of `partition` (no request), or None."""
        answer = self._consumer.get_watermark_offsets(_ck(partition), cached=True)
        return None if answer is None else _offset(answer[1])

    def end_offsets(self, partitions: list) -> dict:
        """The broker's end offset of each partition (the last stable offset when reading
        committed records only), in one request per leader."""
        asked = [_ck(tp, ck.OFFSET_END) for tp in partitions]  # as a time: the latest
        answers = _known(self._offsets_for_times, asked)
        return {self._tp(a.topic, a.partition): a.offset for a in answers}

    def _offsets_for_times(self, asked: list) -> list:
        answers = raising(self._consumer.offsets_for_times, asked, timeout=CALL_TIMEOUT_S)
        for answer in answers:
            if answer.error is not None:
                raise translate(answer.error)
        return answers

    def group_metadata(self):
        return raising(self._consumer.consumer_group_metadata)

    def close(self, autocommit: bool = True) -> None:  # auto-commit is off: nothing to commit
        raising(self._consumer.close)


def make_consumer(cfg: ServeConfig) -> ConfluentConsumer:
    """The main consumer: a member of `cfg.group_id`, no auto-commit, raw bytes; its
    assignment strategies (range, roundrobin) are kafka-python's, so a group can mix both."""
    log.debug("Kafka client: confluent-kafka %s (librdkafka %s) for the data path, kafka-python "
              "for the admin calls", ck.version(), ck.libversion()[0])
    return ConfluentConsumer({
        **librdkafka_common(cfg, consumer=True), "group.id": cfg.group_id,
        "enable.auto.commit": False, "enable.auto.offset.store": False,
        "auto.offset.reset": cfg.auto_offset_reset,
        "session.timeout.ms": cfg.session_timeout_ms,
        "heartbeat.interval.ms": max(cfg.session_timeout_ms // 4, 100),
        "partition.assignment.strategy": "range,roundrobin",
        "isolation.level": "read_committed" if cfg.exactly_once else "read_uncommitted",
    }, cfg.max_poll_records, cfg.auto_offset_reset, _bootstrap_s(cfg))


def make_offsets_client(cfg: ServeConfig) -> ConfluentConsumer:
    """A group-less consumer (end offsets, the readers of the state and model topics)."""
    return ConfluentConsumer({
        **librdkafka_common(cfg, consumer=True), "client.id": f"{cfg.client_id}-offsets",
        # librdkafka needs a group.id; an assigned consumer never joins or commits to it
        "group.id": f"{cfg.group_id}-offsets", "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "enable.partition.eof": True,  # see `_eof`
        "isolation.level": "read_committed" if cfg.exactly_once else "read_uncommitted",
    }, 500, "earliest", _bootstrap_s(cfg))


def _bootstrap_s(cfg: ServeConfig) -> float:
    """`[kafka]` bootstrap_timeout_ms (kafka-python's name; 10 s by default), in seconds."""
    return cfg.kafka.get("bootstrap_timeout_ms", CLIENT_DEFAULTS["bootstrap_timeout_ms"]) / 1000


def poll(consumer: ConfluentConsumer, timeout_ms: int) -> dict:
    """`consumer.poll`: librdkafka keeps polling through a lost broker by itself."""
    return consumer.poll(timeout_ms)


