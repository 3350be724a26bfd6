"""The kafka-python adapter: the daemon's clients configured, and kafka-python 3.0.12's
workarounds (bounded transactional calls, a poll that survives a lost broker, fencing read
from the producer's state, the lease group's membership), so the loop names no client."""

from __future__ import annotations

import logging
import math
import time
import weakref

from kafka import KafkaConsumer, KafkaProducer
from kafka import errors as kafka_errors
from kafka.errors import KafkaError
from kafka.structs import MemberState, OffsetAndMetadata, TopicPartition

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.kafka import CLIENT_DEFAULTS
from river_pa.connectors.kafka.errors import FENCED

log = logging.getLogger("river_pa.serve")

__all__ = [
    "client_defaults", "client_settings", "close_producer", "confirm_member",
    "fence_on_stale_epoch", "fenced", "fenced_by_state", "longest_call_ms", "make_consumer",
    "make_lease_consumer", "make_offsets_client", "make_producer", "member_stable", "poll",
    "transact",
]


# Settings of `[kafka]` go to the clients that take them (max_poll_interval_ms only to the
# consumers, linger_ms only to the producer). Refused: the ones the daemon's guarantees rest
# on (auto-commit, group, isolation, transactional id) and the ones that take callables.
RESERVED_SETTINGS = frozenset({
    "enable_auto_commit", "group_id", "isolation_level", "transactional_id", "key_deserializer",
    "value_deserializer", "key_serializer", "value_serializer", "partitioner",
    "default_offset_commit_callback",
})


def client_settings(settings: dict, client: type) -> dict:
    """The part of the user's `[kafka]` settings that `client` (a kafka-python class) takes."""
    return {k: v for k, v in settings.items() if k in client.DEFAULT_CONFIG}


# how long a transactional call or flush waits (`transact`): kafka-python 3.0.12 loses the
# request sent as the coordinator's broker stops, so this is how long a daemon stalls then
# (kafka-python's 60 s: a member leaving held its partitions that long)
PRODUCER_MAX_BLOCK_MS = 20_000


def longest_call_ms(settings: dict) -> int:
    """The longest one client call of the loop waits, in ms, with the `[kafka]` `settings`: a
    consumer's request (`request_timeout_ms`: end offsets, commits) or a producer's flush or
    transactional call (`max_block_ms`). A value of the wrong type counts as the default (the
    settings' own check refuses it)."""
    def ms(key: str, default: int) -> float:
        value = settings.get(key, default)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return value if number and math.isfinite(value) else default

    return int(max(ms("request_timeout_ms", KafkaConsumer.DEFAULT_CONFIG["request_timeout_ms"]),
                   ms("max_block_ms", PRODUCER_MAX_BLOCK_MS)))


def client_defaults() -> dict:
    """Every setting of `[kafka]` a client takes, with its default (the consumer's where the
    producer takes it too)."""
    return {**KafkaProducer.DEFAULT_CONFIG, **KafkaConsumer.DEFAULT_CONFIG}


def make_consumer(cfg: ServeConfig) -> KafkaConsumer:
    """A consumer with no auto-commit and raw bytes (decoding happens in the loop)."""
    return KafkaConsumer(**{
        "bootstrap_servers": cfg.bootstrap_servers,
        "group_id": cfg.group_id,
        "client_id": cfg.client_id,
        "enable_auto_commit": False,
        "auto_offset_reset": cfg.auto_offset_reset,
        "max_poll_records": cfg.max_poll_records,
        "session_timeout_ms": cfg.session_timeout_ms,
        "heartbeat_interval_ms": max(cfg.session_timeout_ms // 4, 100),
        "isolation_level": "read_committed" if cfg.exactly_once else "read_uncommitted",
        **CLIENT_DEFAULTS,
        **client_settings(cfg.kafka, KafkaConsumer),
    })


def make_offsets_client(cfg: ServeConfig) -> KafkaConsumer:
    """A group-less consumer that only asks end offsets, on a connection of its own: on the
    main consumer's the request queues behind a fetch that long-polls for fetch_max_wait_ms."""
    return KafkaConsumer(**{
        "bootstrap_servers": cfg.bootstrap_servers,
        "group_id": None,
        "client_id": f"{cfg.client_id}-offsets",
        "enable_auto_commit": False,
        "isolation_level": "read_committed" if cfg.exactly_once else "read_uncommitted",
        **CLIENT_DEFAULTS,
        **client_settings(cfg.kafka, KafkaConsumer),
    })


def make_producer(cfg: ServeConfig, limits: dict[str, int] | None = None) -> KafkaProducer:
    """An idempotent producer batching for throughput; transactional with `exactly_once`.

    Its batches fit the smallest `limits` (max.message.bytes of the output topics, see
    `topic_limits`): the broker refuses a larger batch, and kafka-python 3.0.12's answer
    (splitting it in halves, rewinding the sequence numbers) failed `flush` with
    "UnknownError: Future not done" and later sends (a daemon crash-looped on a predictions
    topic taking one prediction, not a batch). A record larger than `batch_size` still goes
    alone in its own batch.
    """
    settings = {
        "bootstrap_servers": cfg.bootstrap_servers,
        "client_id": cfg.client_id,
        "acks": "all",
        "linger_ms": 20,
        "batch_size": 262_144,
        "max_request_size": max(1_048_576, 2 * cfg.max_record_bytes),
        "max_block_ms": PRODUCER_MAX_BLOCK_MS,
        **CLIENT_DEFAULTS,
        **client_settings(cfg.kafka, KafkaProducer),
    }
    settings["batch_size"] = min([settings["batch_size"], *(limits or {}).values()])
    if not cfg.exactly_once:
        return KafkaProducer(**settings)
    settings["transactional_id"] = cfg.transactional_id or f"{cfg.group_id}-{cfg.client_id}"
    producer = KafkaProducer(**settings)
    fence_on_stale_epoch(producer)
    return producer


def fence_on_stale_epoch(producer: KafkaProducer) -> None:
    """Make a batch refused for a stale epoch (INVALID_PRODUCER_EPOCH) fence the transactional
    `producer` (a fatal error, `fenced` says so), as Java's transactional producer does.

    kafka-python 3.0.12 answers it by bumping its epoch itself (KIP-360) and, when the
    coordinator refuses the bump so, by asking for a fresh producer id: the init of a new
    instance, which fences the producer that took the id. The coordinator also takes a bump
    from the epoch just before the current one for a retry and hands the zombie the current
    epoch. A learner woken from a pause deposed the learner elected meanwhile so
    (test_a_zombie_learner_steps_down_and_writes_nothing). Set on the producer's own
    transaction manager: its class's sets are read through the instance.
    """
    manager = producer._transaction_manager
    manager._NEEDS_EPOCH_BUMP_ERRORS = (
        type(manager)._NEEDS_EPOCH_BUMP_ERRORS - {kafka_errors.InvalidProducerEpochError})
    manager._FATAL_ERRORS = type(manager)._FATAL_ERRORS | {kafka_errors.InvalidProducerEpochError}


def transact(producer: KafkaProducer, call: str, *args) -> None:
    """Run the transactional `call` ("send_offsets_to_transaction", "commit_transaction" or
    "abort_transaction") of `producer`, waiting at most its `max_block_ms`: KafkaTimeoutError
    after that (Java's producer bounds these calls so too, KAFKA-7763).

    kafka-python 3.0.12 waits for them without a timeout, and its sender can lose the request:
    when the coordinator's connection raises in `Sender._maybe_send_pending_request` (the
    coordinator's broker stopped: "Node coordinator-N not ready after 30000 ms"), `target_node`
    still names that coordinator, so the handler is neither sent nor re-enqueued and its result
    never completes (a rolling restart froze the daemon for good). These are the two steps of
    KafkaProducer's own methods, with a bounded wait.
    """
    manager = producer._transaction_manager
    begin = {"send_offsets_to_transaction": manager.send_offsets_to_transaction,
             "commit_transaction": manager.begin_commit,
             "abort_transaction": manager.begin_abort}[call]
    result = begin(*args)
    producer._sender.wakeup()
    timeout_ms = producer.config["max_block_ms"]
    if not result.wait(timeout_ms=timeout_ms):
        raise kafka_errors.KafkaTimeoutError(
            f"{call} not done after {timeout_ms} ms (max_block_ms)")


def fenced_by_state(producer: KafkaProducer | None, wait_s: float) -> bool:
    """True when `producer`'s transactional state says another producer took its id.

    kafka-python 3.0.12 answers some refused batches by bumping the epoch (KIP-360; no longer
    a stale epoch, see `fence_on_stale_epoch`); the coordinator may refuse the bump as fenced,
    and a transactional call made meanwhile fails with "Invalid transition attempted from state
    BUMPING_PRODUCER_EPOCH", which names no fencing (a fenced learner exited 1 instead of
    stepping down). A bump under way is waited for, up to `wait_s`.
    """
    manager = producer and producer._transaction_manager
    if manager is None:
        return False
    deadline = time.monotonic() + wait_s
    while manager.is_bumping_epoch() and time.monotonic() < deadline:
        time.sleep(0.05)
    return isinstance(manager.last_error, FENCED)


def fenced(exc: BaseException, producer: KafkaProducer | None, wait_s: float) -> bool:
    """True when `exc` (or what caused it) is a fencing error, or `producer`'s transactional
    state says another producer took its id (`fenced_by_state`): kafka-python 3.0.12 names the
    fencing only in the text of some errors ("Cannot execute transactional method because we
    are in an error state: ProducerFencedError"), and the state says it without reading text."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, FENCED) or any(isinstance(a, FENCED) for a in exc.args):
            return True
        exc = exc.__cause__ or exc.__context__
    return fenced_by_state(producer, wait_s)


_OUTAGES: weakref.WeakSet = weakref.WeakSet()  # consumers whose last poll met no broker


def poll(consumer: KafkaConsumer, timeout_ms: int) -> dict:
    """`consumer.poll`, or {} after a pause while no broker answers (the caller polls again;
    the client reconnects once one is back). kafka-python 3.0.12 lets a group consumer's poll
    raise KafkaConnectionError then: its coordinator lookup retries a failed request, but not
    the metadata update it waits for after one (`ensure_coordinator_ready_async`), so a
    daemon exited at a broker's stop. One warning per outage."""
    try:
        polled = consumer.poll(timeout_ms=timeout_ms)
    except kafka_errors.KafkaConnectionError as exc:
        if consumer not in _OUTAGES:
            log.warning("no broker answers (%s): polling on until one does", exc)
            _OUTAGES.add(consumer)
        time.sleep(max(timeout_ms, consumer.config["retry_backoff_ms"]) / 1000)
        return {}
    _OUTAGES.discard(consumer)
    return polled


def make_lease_consumer(cfg: ServeConfig, topic: str, group: str) -> KafkaConsumer:
    """A member of the lease group `group`, subscribed to the lease topic, assigned by
    `LeaseAssignor` (see roles/lease.py)."""
    from river_pa.connectors.kafka.assignor import LeaseAssignor

    consumer = KafkaConsumer(**{
        "bootstrap_servers": cfg.bootstrap_servers,
        "group_id": group,
        "client_id": f"{cfg.client_id}-lease",
        "enable_auto_commit": False,
        "session_timeout_ms": cfg.session_timeout_ms,
        "heartbeat_interval_ms": max(cfg.session_timeout_ms // 4, 100),
        "partition_assignment_strategy": (LeaseAssignor,),
        **CLIENT_DEFAULTS,
        **client_settings(cfg.kafka, KafkaConsumer),
    })
    consumer.subscribe([topic])
    return consumer


def confirm_member(consumer: KafkaConsumer,
                   tp: TopicPartition) -> tuple[bool | None, Exception | None]:
    """Have the coordinator confirm `consumer`'s membership by committing offset 0 of `tp`:
    (True, None) accepted; (False, error) refused (the session expired, or another
    generation); (None, error) not known yet (a rebalance under way, the coordinator moving)."""
    try:
        consumer.commit({tp: OffsetAndMetadata(0, "", -1)}, timeout_ms=1000)
        return True, None
    except KafkaError as exc:
        rebalancing = any(isinstance(a, kafka_errors.RebalanceInProgressError) for a in exc.args)
        if isinstance(exc, kafka_errors.CommitFailedError) and not rebalancing:
            return False, exc
        return None, exc


def member_stable(consumer: KafkaConsumer) -> bool:
    """True once `consumer` is a stable member of its group (joined, assigned)."""
    return consumer.group_metadata().state == MemberState.STABLE


def close_producer(producer, timeout_s: float | None = None) -> None:
    """Close a producer, waiting up to `timeout_s` (its max_block_ms) for its last sends.
    kafka-python's close flushes first and raises if that times out, before it stops its IO
    thread: the thread is then stopped without sending (it lingered with its connections).
    Without a timeout the close waited for ever for batches of a transaction that the
    coordinator never heard of (see `kafka/outputs.py `Outputs.check``)."""
    try:
        producer.close(timeout=producer.config["max_block_ms"] / 1000 if timeout_s is None
                       else timeout_s)
    except KafkaError as exc:
        log.info("the producer is closed without its last sends (%s)", exc)
        producer._sender.force_close()
