"""Admin requests of the daemon: the admin client, a compacted one-partition topic created if
missing (the state, model and lease topics), and the size of the consumer group."""

from __future__ import annotations

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaError, TopicAlreadyExistsError

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.errors import SettingsConflict
from river_pa.connectors.kafka import CLIENT_DEFAULTS
from river_pa.connectors.kafka.client import client_settings

__all__ = ["ensure_topic", "group_size", "make_admin"]


def make_admin(cfg: ServeConfig) -> KafkaAdminClient:
    """An admin client with the daemon's connection settings."""
    return KafkaAdminClient(**{"bootstrap_servers": cfg.bootstrap_servers,
                               "client_id": f"{cfg.client_id}-admin", **CLIENT_DEFAULTS,
                               **client_settings(cfg.kafka, KafkaAdminClient)})


def ensure_topic(cfg: ServeConfig, topic: str, partitions: int | None = None,
                 configs: dict | None = None) -> None:
    """Create `topic` if it is missing: compacted (and `configs`), replicated min(3, brokers),
    one partition or exactly `partitions` (SettingsConflict when it has another count: the
    lease topic of `--shards N`, one partition per shard)."""
    admin = make_admin(cfg)
    try:
        brokers = len(admin.describe_cluster()["brokers"])
        try:
            admin.create_topics([NewTopic(topic, partitions or 1, min(3, brokers), topic_configs={
                "cleanup.policy": "compact", **(configs or {})})])
        except TopicAlreadyExistsError:
            found = partitions and len(admin.describe_topics([topic])[0]["partitions"])
            if found != partitions:
                raise SettingsConflict(f"river-pa serve: {topic} has {found} partitions, and "
                                       f"it takes one per shard: {partitions}") from None
    finally:
        admin.close()


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
