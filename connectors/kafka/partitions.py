"""Partitions, commit offsets and rebalances as the loop names them, under either client.

Like kafka/errors.py, this module binds the loop's names to kafka-python's classes, the common
currency of both adapters: kafka-python's consumer type-checks the partitions it is given
(`TopicPartition`) and the rebalance listener it is handed (`ConsumerRebalanceListener`), and
the confluent adapter (kafka/confluent.py) converts both at each call into librdkafka's. The
loop, the roles and the state import these names from here, never from an adapter.
"""

from __future__ import annotations

import threading

from kafka import ConsumerRebalanceListener
from kafka.structs import OffsetAndMetadata, TopicPartition

__all__ = ["RebalanceQueue", "TopicPartition", "offsets_to_commit", "tp_key"]


def tp_key(tp) -> str:
    """The checkpoint's name for a partition (a TopicPartition or a consumer record).

    >>> tp_key(TopicPartition("events", 3))
    'events:3'
    """
    return f"{tp.topic}:{tp.partition}"


def offsets_to_commit(next_offsets: dict[str, int], assigned) -> dict:
    """Explicit commit offsets ({partition: OffsetAndMetadata}) for the `assigned` partitions
    this daemon has processed (`next_offsets` by `tp_key`).

    >>> offsets_to_commit({"events:0": 7, "events:1": 2}, [TopicPartition("events", 0)])
    {TopicPartition(topic='events', partition=0): OffsetAndMetadata(offset=7, metadata='', leader_epoch=-1)}
    """
    out = {}
    for tp in assigned:
        if tp_key(tp) in next_offsets:
            out[tp] = OffsetAndMetadata(next_offsets[tp_key(tp)], "", -1)
    return out


class RebalanceQueue(ConsumerRebalanceListener):
    """Records rebalance events for the main thread (kafka-python calls them on its IO thread,
    librdkafka inside `poll`)."""

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
