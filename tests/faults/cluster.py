"""Control of the 3-broker KRaft cluster of scripts/kafka.sh for the fault harness.

`Cluster` stops and starts nodes (through the script, the same way tests/kafka does), names
the node that leads the partition a group or a transactional id lives on (a lookup, never an
assumption), changes topic settings and reads the committed offsets of a group and the ends of
a topic. Every call opens and closes its own admin client: a broker may be down meanwhile.

"""

from __future__ import annotations

import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.structs import TopicPartition

from tests.kafka.conftest import broker_script, kafka_partition

__all__ = ["Cluster"]


class Cluster:
    """The script's cluster at `bootstrap` (host:port,...); nodes are numbered 1-3."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def admin(self) -> KafkaAdminClient:
        return KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=10_000)

    @staticmethod
    def stop_node(node: int) -> None:
        broker_script("node-stop", str(node))

    @staticmethod
    def start_node(node: int) -> None:
        """Start node `node` and wait until all three are in the cluster."""
        broker_script("node-start", str(node))

    def _partitions(self, topic: str) -> dict[int, int]:
        """{partition: the node id that leads it now} of `topic`."""
        admin = self.admin()
        try:
            [info] = admin.describe_topics([topic])
        finally:
            admin.close()
        return {p["partition_index"]: p["leader_id"] for p in info["partitions"]}

    def _leader_of_key(self, topic: str, key: str) -> int:
        leaders = self._partitions(topic)
        return leaders[kafka_partition(key, len(leaders))]

    def coordinator(self, group: str) -> int:
        """The node coordinating consumer group `group` (its `__consumer_offsets` leader)."""
        self._internal_topic("__consumer_offsets", self._look_up_group)
        return self._leader_of_key("__consumer_offsets", group)

    def transaction_coordinator(self, transactional_id: str) -> int:
        """The node leading the `__transaction_state` partition of `transactional_id`."""
        self._internal_topic("__transaction_state", self._init_probe_transactions)
        return self._leader_of_key("__transaction_state", transactional_id)

    def _internal_topic(self, topic: str, create, timeout_s: float = 60) -> None:
        """Wait until the internal `topic` has partitions: a broker creates it at the first
        lookup of a coordinator of its kind, which `create()` makes (a fresh cluster has
        none, and any lookup fails while it is being created)."""
        deadline = time.monotonic() + timeout_s
        while not self._partitions(topic):
            assert time.monotonic() < deadline, f"no {topic} after {timeout_s} s"
            try:
                create()
            except KafkaError:
                time.sleep(0.5)

    def _look_up_group(self) -> None:
        admin = self.admin()
        try:
            admin.describe_groups(["river-pa-harness-probe"])
        finally:
            admin.close()

    def _init_probe_transactions(self) -> None:
        """A transactional id of the harness's own (never a daemon's: it would be fenced)."""
        producer = KafkaProducer(bootstrap_servers=self.bootstrap,
                                 transactional_id="river-pa-harness-probe", max_block_ms=10_000)
        try:
            producer.init_transactions()
        finally:
            producer.close(timeout=5)

    def set_topic_config(self, topic: str, name: str, value: str | None) -> None:
        """Set (or, with None, delete: back to the broker default) one topic setting."""
        admin = self.admin()
        try:
            change = ("SET", value) if value is not None else ("DELETE", None)
            admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                configs={name: change})])
        finally:
            admin.close()

    def end_offsets(self, topic: str) -> dict[TopicPartition, int]:
        """The end (high watermark) of every partition of `topic`."""
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None)
        try:
            parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
            return consumer.end_offsets(parts)
        finally:
            consumer.close()

    def committed(self, group: str) -> dict[TopicPartition, int]:
        """The offsets `group` has committed (for every partition it committed one)."""
        admin = self.admin()
        try:
            offsets = admin.list_group_offsets(group)[group]
        finally:
            admin.close()
        return {tp: meta.offset for tp, meta in offsets.items() if meta.offset >= 0}
