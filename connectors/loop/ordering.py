"""Event-time ordering (a merge) of an events partition with its co-partitioned labels partition.

The daemon must see a label and an event in the order a progressive validation with delayed
labels would (River's `simulate_qa`: a label due at time t is revealed before the question
asked at t). Records are buffered per partition and released in order of (record timestamp,
labels first, offset); a record is held back while the other side could still hold an
older one, that is until the other side has a buffered record or is exhausted (read up to its
high watermark) and has stayed so for `idle_s` (`--merge-idle-ms`, Kafka Streams'
`max.task.idle.ms`: a label its producer wrote a little after a later event still comes first;
one written later still is counted late, see `late`). A replay of the same topics therefore
yields the same sequence, which makes restarts after a crash reproduce the uninterrupted run
exactly.

The learner (`--role learn`, the one process that learns from every partition) merges all its
partitions of both topics in one event-time order instead (`assigned` given): a record is
released when every other partition has a buffered record at least as late or is exhausted,
so its progressive metric is the one of the whole stream in timestamp order, whatever the
partition count.

"""

from __future__ import annotations

import heapq
import time
from collections import defaultdict, deque
from typing import Callable, Iterator

from river_pa.connectors.kafka.protocols import Partition

__all__ = ["EventTimeOrder"]


class EventTimeOrder:
    """Buffers consumer records and yields them in event-time order per partition pair."""

    def __init__(self, events_topic: str, labels_topic: str | None,
                 exhausted: Callable[[Partition], bool], partition: Callable[[str, int], Partition],
                 assigned: Callable[[], set] | None = None, idle_s: float = 0.0,
                 clock: Callable[[], float] = time.monotonic):
        self.idle_s, self.clock = idle_s, clock
        self.quiet_since: dict[Partition, float] = {}  # exhausted and empty since (clock)
        self.partition = partition  # makes the client's partitions (kafka-python's TopicPartition)
        self.events_topic = events_topic
        self.assigned = assigned
        self.labels_topic = labels_topic
        self.exhausted = exhausted
        self.buffers: dict[Partition, deque] = defaultdict(deque)

    def add(self, tp: Partition, records: list) -> None:
        """Append records (in offset order) fetched from `tp`."""
        self.buffers[tp].extend(records)
        if records:
            self.quiet_since.pop(tp, None)

    def drop(self, tps) -> None:
        """Forget the buffered records of partitions this daemon no longer owns."""
        for tp in tps:
            self.buffers.pop(tp, None)
            self.quiet_since.pop(tp, None)

    def size(self, tp: Partition) -> int:
        """Number of records buffered for `tp`."""
        return len(self.buffers.get(tp, ()))

    def truncate(self, tp: Partition, limit: int) -> int | None:
        """Keep the oldest `limit` records of `tp`; return the first dropped offset, if any."""
        buffer = self.buffers.get(tp)
        if buffer is None or len(buffer) <= limit:
            return None
        while len(buffer) > limit + 1:
            buffer.pop()
        return buffer.pop().offset

    def ready(self) -> Iterator:
        """Yield the records that can be processed now, in merge order."""
        if self.assigned is not None:
            yield from self._drain_all(self.assigned())
            return
        partitions = sorted({tp.partition for tp in self.buffers if self.buffers[tp]})
        for p in partitions:
            yield from self._drain(p)

    def _drain(self, partition: int) -> Iterator:
        events = self.buffers[self.partition(self.events_topic, partition)]
        if self.labels_topic is None:
            while events:
                yield events.popleft()
            return
        labels_tp = self.partition(self.labels_topic, partition)
        labels = self.buffers[labels_tp]
        events_tp = self.partition(self.events_topic, partition)
        while True:
            if events and labels:
                side = labels if labels[0].timestamp <= events[0].timestamp else events
            elif events and self._quiet(labels_tp):
                side = events
            elif labels and self._quiet(events_tp):
                side = labels
            else:
                return
            yield side.popleft()

    def _quiet(self, tp: Partition) -> bool:
        """True when the empty partition `tp` is exhausted and has been for `idle_s`."""
        if not self.exhausted(tp):
            self.quiet_since.pop(tp, None)
            return False
        if self.idle_s <= 0:
            return True
        now = self.clock()
        return now - self.quiet_since.setdefault(tp, now) >= self.idle_s

    def late(self, record, latest: dict) -> bool:
        """True when `record` comes after a record it precedes in event-time order: released
        once the other side was read to its end, it was written there later (a producer that
        sends a label after a later event, or a partition lagging behind). `latest` holds the
        greatest order key released so far per merge (the learner's whole stream, else each
        partition pair); the daemon keeps it with its state, so that lateness is counted across
        restarts. A replay of the topics orders such a record where it belongs, so a run with
        no late record learns exactly what the replay learns."""
        merge = -1 if self.assigned is not None else record.partition
        key = self._key(record)
        if merge in latest and key < latest[merge]:
            return True
        latest[merge] = key
        return False

    def _key(self, record) -> tuple:
        """`record`'s place in the merge: labels before events of the same time, as in _drain."""
        return record.timestamp, record.topic == self.events_topic, record.partition, record.offset

    def _drain_all(self, partitions: set) -> Iterator:
        """All `partitions` in one event-time order (a k-way merge of their buffers)."""
        heads = [(self._key(self.buffers[tp][0]), tp) for tp in partitions if self.buffers.get(tp)]
        # every empty partition asked (a list, not any()): their waits run at once, not one
        # after the other (3 empty partitions held a new user's learner 3 x --merge-idle-ms)
        if [tp for tp in partitions if not self.buffers.get(tp) and not self._quiet(tp)]:
            return  # an empty partition could still hold an older record
        heapq.heapify(heads)
        while heads:
            _, tp = heapq.heappop(heads)
            buffer = self.buffers[tp]
            yield buffer.popleft()
            if buffer:
                heapq.heappush(heads, (self._key(self.buffers[tp][0]), tp))
            elif not self._quiet(tp):
                return
