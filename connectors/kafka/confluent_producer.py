"""The confluent-kafka (librdkafka) producer of the data path: idempotent, transactional with
exactly-once (each transactional call bounded by max_block_ms, as `client.transact` bounds
kafka-python's), its failures reported to the outputs from delivery reports of failures only
(no per-record future or callback), fencing read from its errors (see kafka/confluent.py)."""

from __future__ import annotations

import logging
import threading
import time
from functools import partial

import confluent_kafka as ck

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.kafka.client import PRODUCER_MAX_BLOCK_MS
from river_pa.connectors.kafka.confluent_errors import (
    librdkafka_common, on_client_error, raising, translate,
)
from river_pa.connectors.kafka.errors import FENCED, ClientError, ClientTimeout
from river_pa.connectors.kafka.outputs import Outputs

log = logging.getLogger("river_pa.serve")

__all__ = ["ConfluentOutputs", "ConfluentProducer", "close_producer", "fenced", "make_producer",
           "transact"]

GRACE_S = 2.0  # beyond a transactional call's own timeout, before it counts as lost


def _ck(tp, offset: int = ck.OFFSET_INVALID) -> ck.TopicPartition:
    """librdkafka's partition for the loop's `tp` (kafka-python's TopicPartition)."""
    return ck.TopicPartition(tp.topic, tp.partition, offset)


class ConfluentProducer:
    """A librdkafka producer presenting kafka/protocols.py `Producer`. Delivery reports come
    for failures only (`delivery.report.only.error`): no per-record future or callback; each
    failure goes to `on_failure(topic, error)` (set by the outputs) from `flush`."""

    def __init__(self, settings: dict, max_block_ms: int, max_request_size: int):
        self.config = {"max_block_ms": max_block_ms, "max_request_size": max_request_size,
                       "transactional_id": settings.get("transactional.id")}
        self.on_failure = lambda topic, error: None
        self.fatal: BaseException | None = None
        self._producer = raising(ck.Producer, {
            **settings, "delivery.report.only.error": True, "on_delivery": self._delivered,
            "error_cb": self._on_error})

    @property
    def produce_or_raise(self):
        """librdkafka's `produce` itself (BufferError when its queue is full, KafkaException)."""
        return self._producer.produce

    def _delivered(self, error, message) -> None:
        self.on_failure(message.topic(), translate(error))

    def serve_events(self) -> None:
        """Serve librdkafka's queued callbacks (error_cb among them), waiting up to 0.1 s. A
        fatal error the poll raises instead of reporting it is kept in `fatal`, as error_cb
        keeps it (soak seed 167: after a failed abort, the poll that looked for a fencing
        raised INVALID_TXN_STATE's fatal error, and a predictor exited 1)."""
        try:
            raising(self._producer.poll, 0.1)
        except ClientError as exc:
            self.fatal = self.fatal or exc

    def _on_error(self, error: ck.KafkaError) -> None:
        if error.fatal():
            self.fatal = translate(error)
        on_client_error(error)

    def send(self, topic: str, value: bytes | None = None, key: bytes | None = None,
             headers: list | None = None) -> None:
        """Queue one record; a full queue is drained for up to max_block_ms (KafkaTimeoutError
        after that)."""
        deadline = None
        while True:
            try:
                return self._producer.produce(topic, value, key, headers=headers)
            except BufferError:
                deadline = deadline or time.monotonic() + self.config["max_block_ms"] / 1000
                if time.monotonic() > deadline:
                    raise ClientTimeout(f"the producer's queue stayed full for "
                                        f"{self.config['max_block_ms']} ms (max_block_ms)")
                self._producer.poll(0.05)
            except ck.KafkaException as exc:
                raise translate(exc) from exc

    def flush(self, timeout: float | None = None) -> None:
        """Send every queued record, waiting up to `timeout` s (None: for ever)."""
        left = raising(self._producer.flush, -1 if timeout is None else timeout)
        if left:
            raise ClientTimeout(f"{left} records not sent after {timeout} s")

    def init_transactions(self) -> None:
        raising(self._producer.init_transactions, self.config["max_block_ms"] / 1000)

    def begin_transaction(self) -> None:
        raising(self._producer.begin_transaction)

    def transact(self, call: str, *args) -> None:
        """The transactional `call`, bounded by max_block_ms (see `transact`)."""
        timeout_s = self.config["max_block_ms"] / 1000
        if call == "send_offsets_to_transaction":
            offsets, group = args
            _bounded(partial(raising, self._producer.send_offsets_to_transaction,
                             [_ck(tp, meta.offset) for tp, meta in offsets.items()], group,
                             timeout_s), timeout_s, call)
        else:
            raising(getattr(self._producer, call), timeout_s)
        if call == "abort_transaction":  # the reports of the records it purged, now: the
            self._producer.poll(0)       # outputs forget them next (`forget_aborted`)

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued for up to `timeout` s; what is left then is dropped, also after
        a fatal error (fenced: nothing more can be sent)."""
        try:
            if self._producer.flush(-1 if timeout is None else timeout):
                self._producer.purge()
                self._producer.flush(0)
        except ck.KafkaException as exc:
            error = translate(exc)
            if isinstance(error, FENCED):  # a flush may raise the fatal error error_cb never
                self.fatal = self.fatal or error  # got: `fenced` reads it here (ci21)
            log.info("the producer is closed without its last sends (%s)", error)
            self._producer.purge()


def _bounded(call, timeout_s: float, what: str) -> None:
    """`call()` on a thread of its own, waited for `timeout_s` + `GRACE_S`; ClientTimeout if it
    has not returned by then (the thread is left to librdkafka, a new producer then fences it).

    librdkafka's send_offsets_to_transaction can block past its own timeout: it never checks
    a coordinator request's deadline (confluentinc/librdkafka#5456, PR #5457 open) and waits
    for ever on a group coordinator decommissioned from the metadata (#5511), both open in the
    2.16 this runs. The soak found it (seeds 553 and 554): a broker of the group coordinator
    restarted, and a learner stayed in the call until its watchdog ended it, a predictor
    ignored SIGTERM.
    """
    outcome: dict = {}

    def run():
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - raised on the caller's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=run, name=f"river-pa-{what}", daemon=True)
    thread.start()
    thread.join(timeout_s + GRACE_S)
    if thread.is_alive():
        raise ClientTimeout(f"{what} not done after {timeout_s:g} s (max_block_ms); librdkafka "
                            "missed its own timeout (librdkafka#5456)")
    if "error" in outcome:
        raise outcome["error"]


def make_producer(cfg: ServeConfig, limits: dict[str, int] | None = None) -> ConfluentProducer:
    """An idempotent producer batching for throughput, its batches within the smallest output
    topic's limit (`limits`); transactional with `exactly_once`."""
    max_block_ms = cfg.kafka.get("max_block_ms", PRODUCER_MAX_BLOCK_MS)
    settings = {"acks": "all", "enable.idempotence": True, "linger.ms": 20,
                "batch.size": 262_144,
                "message.max.bytes": max(1_048_576, 2 * cfg.max_record_bytes),
                **librdkafka_common(cfg, consumer=False)}
    settings["batch.size"] = min([settings["batch.size"], *(limits or {}).values()])
    if cfg.exactly_once:
        settings["transactional.id"] = cfg.transactional_id or f"{cfg.group_id}-{cfg.client_id}"
    return ConfluentProducer(settings, max_block_ms, settings["message.max.bytes"])


def transact(producer: ConfluentProducer, call: str, *args) -> None:
    """Run the transactional `call` ("send_offsets_to_transaction", "commit_transaction" or
    "abort_transaction") of `producer`, waiting at most its max_block_ms (KafkaTimeoutError)."""
    producer.transact(call, *args)


def fenced(exc: BaseException, producer: ConfluentProducer | None, wait_s: float) -> bool:
    """True when `exc` (or what caused it) is a fencing error, or `producer` met one (a fatal
    error reported outside any call)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, FENCED):
            return True
        exc = exc.__cause__ or exc.__context__
    if producer is None:
        return False
    # librdkafka tells error_cb the cause of a fatal error (_FENCED) only when polled: a
    # produce that failed with "Fatal error" came first (a fenced learner exited 1, ci21).
    # The report is queued by then; a second at most is spent serving it.
    deadline = time.monotonic() + min(wait_s, 1.0)
    while producer.fatal is None and time.monotonic() < deadline:
        producer.serve_events()
    return isinstance(producer.fatal, FENCED)


def close_producer(producer: ConfluentProducer, timeout_s: float | None = None) -> None:
    """Close `producer` after its last sends, waiting up to `timeout_s` (its max_block_ms)."""
    producer.close(producer.config["max_block_ms"] / 1000 if timeout_s is None else timeout_s)


class ConfluentOutputs(Outputs):
    """The outputs over a `ConfluentProducer`: a send is one `produce` call (no future); the
    failures come from its delivery reports, served by `check`'s flush."""

    def __init__(self, producer: ConfluentProducer, dead_letter_topic: str, limits: dict):
        super().__init__(producer, dead_letter_topic, limits)
        self._listen(producer)

    def _listen(self, producer: ConfluentProducer) -> None:
        producer.on_failure = lambda topic, exc: self._on_error(producer, topic, exc)
        self._produce = producer.produce_or_raise  # the per-record path: one call

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, headers=None):
        """Send one record, or raise MessageSizeTooLargeError when it is over `limit(topic)`."""
        self._check_size(topic, value, key, headers)
        try:
            self._produce(topic, value, key, headers=headers)
        except (BufferError, ck.KafkaException):  # not queued: the producer waits, translates
            self.producer.send(topic, value, key, headers)

    def replace(self, producer: ConfluentProducer, limits: dict[str, int]) -> None:
        super().replace(producer, limits)
        self._listen(producer)

    def _flush(self) -> None:
        timeout_ms = self.producer.config["max_block_ms"] if self.producer.config[
            "transactional_id"] else None  # else librdkafka's message.timeout.ms bounds it
        try:
            self.producer.flush(None if timeout_ms is None else timeout_ms / 1000)
        except ClientTimeout as exc:
            raise ClientTimeout(f"records not sent after {timeout_ms} ms (max_block_ms)") from exc
