"""Bounded store of predictions that wait for their late label.

Entries leave the store in three ways: their label arrives (`pop`), the store is full (by count
or by bytes: ids, features and predictions, so the checkpoint that holds the store stays within
a small multiple of the budget; also after a restart gave smaller bounds: `bound`) and the
oldest entry is evicted, or the entry is older than the TTL measured on event time (the Kafka
record timestamps, so that a replay expires exactly the same entries as the first run).
Evictions are returned to the caller, who counts them; nothing is dropped
silently. Event time is not trusted blindly: it never runs ahead of the wall clock (`clock`), so
one record stamped in the year 3000 can neither expire the whole store nor sit at its head,
unexpirable, for ever (a producer clock a little ahead only shortens the TTL by that much).

"""

from __future__ import annotations

import sys
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

__all__ = ["Pending", "PendingStore", "entry_bytes"]


def entry_bytes(rid: str, x: dict, y_pred: Any, others: dict | None = None) -> int:
    """Memory held by a pending entry: its id (the store's key), its features and its
    prediction (an early label: the label), the dicts with their keys and values (the small
    ints and floats of an event; nested objects are not followed), and the challengers'
    predictions (`others`, name -> prediction)."""
    size = sys.getsizeof(rid) + _dict_bytes(x) + _value_bytes(y_pred)
    if others:
        size += _dict_bytes(others) + sum(_value_bytes(p) for p in others.values())
    return size + 200  # the entry and the store's slot


def _value_bytes(value: Any) -> int:
    return _dict_bytes(value) if isinstance(value, dict) else sys.getsizeof(value)


def _dict_bytes(d: dict) -> int:
    return sys.getsizeof(d) + sum(map(sys.getsizeof, d)) + sum(map(sys.getsizeof, d.values()))


@dataclass
class Pending:
    """What is needed to score and learn once the label arrives (`nbytes`: `entry_bytes`, set
    by `PendingStore.add`)."""

    x: dict
    y_pred: Any
    ts: int
    nbytes: int = 0
    others: dict | None = None  # the challengers' predictions by name (models/challengers.py)


class PendingStore:
    """Insertion-ordered map id -> Pending, bounded by count, by bytes and by age (ms of event
    time)."""

    def __init__(self, max_size: int, ttl_ms: int | None, max_bytes: int):
        self.max_size = max_size
        self.ttl_ms = ttl_ms
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._items: OrderedDict[str, Pending] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    @staticmethod
    def clock(ts_ms: int) -> int:
        """The event time of a record stamped `ts_ms` (epoch ms), never beyond the wall clock."""
        return min(ts_ms, int(time.time() * 1000))

    def add(self, rid: str, entry: Pending) -> list[Pending]:
        """Store an entry; return the entries it pushed out (a replaced id, or the oldest)."""
        evicted = []
        if rid in self._items:
            evicted.append(self._remove(rid))
        entry.nbytes = entry_bytes(rid, entry.x, entry.y_pred, entry.others)
        self._items[rid] = entry
        self.nbytes += entry.nbytes
        return evicted + self._evict()

    def bound(self, max_size: int, ttl_ms: int | None, max_bytes: int) -> list[Pending]:
        """Apply new bounds (those given at a restart, to a restored store); return the
        oldest entries they push out now. The TTL applies at the next `expire`."""
        self.max_size, self.ttl_ms, self.max_bytes = max_size, ttl_ms, max_bytes
        return self._evict()

    def _evict(self) -> list[Pending]:
        """Remove and return the oldest entries while the store is over its count or bytes."""
        evicted = []
        while len(self._items) > self.max_size or self.nbytes > self.max_bytes:
            evicted.append(self._remove(next(iter(self._items))))
        return evicted

    def _remove(self, rid: str) -> Pending:
        entry = self._items.pop(rid)
        self.nbytes -= entry.nbytes
        return entry

    def entries(self):
        """The entries, oldest first."""
        return self._items.values()

    def items(self):
        """(id, entry) pairs, oldest first."""
        return self._items.items()

    def pop(self, rid: str) -> Pending | None:
        """Remove and return the entry for `rid`, or None when it is unknown."""
        return self._remove(rid) if rid in self._items else None

    def expire(self, now_ms: int) -> list[Pending]:
        """Remove and return the entries older than the TTL at event time `now_ms`."""
        if self.ttl_ms is None:
            return []
        expired = []
        while self._items:
            rid, entry = next(iter(self._items.items()))
            if now_ms - entry.ts <= self.ttl_ms:
                break
            expired.append(self._remove(rid))
        return expired
