"""kafka-python clients configured for the daemon, and the dead-letter record format."""

from __future__ import annotations

import threading

from kafka import ConsumerRebalanceListener, KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata, TopicPartition

from river_pa.connectors.config import ServeConfig

__all__ = [
    "RebalanceQueue", "client_settings", "dead_letter_headers", "group_size", "make_admin", "make_consumer", "make_producer", "offsets_to_commit",
    "tp_key",
]


# Retry a lost broker every 2 s at most (kafka-python backs off up to 30 s), so a daemon is
# back within seconds of a broker restart. Any setting here can be overridden by `[kafka]`.
CLIENT_DEFAULTS = {"reconnect_backoff_max_ms": 2000}

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


def make_producer(cfg: ServeConfig) -> KafkaProducer:
    """An idempotent producer batching for throughput; transactional with `exactly_once`."""
    settings = {
        "bootstrap_servers": cfg.bootstrap_servers,
        "client_id": cfg.client_id,
        "acks": "all",
        "linger_ms": 20,
        "batch_size": 262_144,
        "max_request_size": max(1_048_576, 2 * cfg.max_record_bytes),
        **CLIENT_DEFAULTS,
        **client_settings(cfg.kafka, KafkaProducer),
    }
    if cfg.exactly_once:
        settings["transactional_id"] = cfg.transactional_id or f"{cfg.group_id}-{cfg.client_id}"
    return KafkaProducer(**settings)


def make_admin(cfg: ServeConfig) -> KafkaAdminClient:
    """An admin client with the daemon's connection settings."""
    return KafkaAdminClient(**{"bootstrap_servers": cfg.bootstrap_servers,
                               "client_id": f"{cfg.client_id}-admin", **CLIENT_DEFAULTS,
                               **client_settings(cfg.kafka, KafkaAdminClient)})


def group_size(cfg: ServeConfig) -> int:
    """The number of members of the daemon's consumer group (0 when the broker cannot say)."""
    try:
        admin = make_admin(cfg)
    except KafkaError:
        return 0
    try:
        return len(admin.describe_groups([cfg.group_id])[cfg.group_id]["members"])
    except KafkaError:
        return 0
    finally:
        admin.close()


def tp_key(tp) -> str:
    """The checkpoint's name for a partition (a TopicPartition or a consumer record)."""
    return f"{tp.topic}:{tp.partition}"


def offsets_to_commit(next_offsets: dict[str, int], assigned) -> dict:
    """Explicit commit offsets for the assigned partitions this daemon has processed."""
    out = {}
    for tp in assigned:
        if tp_key(tp) in next_offsets:
            out[tp] = OffsetAndMetadata(next_offsets[tp_key(tp)], "", -1)
    return out


def dead_letter_headers(record, reason: str, detail: str) -> list[tuple[str, bytes]]:
    """Headers naming why a record was rejected and where it came from."""
    return [
        ("reason", reason.encode()),
        ("detail", detail[:500].encode()),
        ("source_topic", record.topic.encode()),
        ("source_partition", str(record.partition).encode()),
        ("source_offset", str(record.offset).encode()),
    ]


class RebalanceQueue(ConsumerRebalanceListener):
    """Records rebalance events for the main thread (the callbacks run on the IO thread)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._revoked: set[TopicPartition] = set()
        self._assigned = False

    def on_partitions_revoked(self, revoked):
        """Remember the partitions taken away (handled by the loop after its next poll)."""
        with self._lock:
            self._revoked.update(revoked)

    def on_partitions_assigned(self, assigned):
        """Remember that an assignment came: the loop then sets every position itself."""
        with self._lock:
            self._assigned = True

    def pending(self) -> bool:
        """True when partitions were revoked since the last `take`."""
        with self._lock:
            return bool(self._revoked)

    def take(self) -> tuple[set[TopicPartition], bool]:
        """The partitions revoked, and whether partitions were assigned, since the last call."""
        with self._lock:
            revoked, self._revoked = self._revoked, set()
            assigned, self._assigned = self._assigned, False
        return revoked, assigned
