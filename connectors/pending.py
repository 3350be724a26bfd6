"""Bounded store of predictions that wait for their late label.

Entries leave the store in three ways: their label arrives (`pop`), the store is full and the
oldest entry is evicted, or the entry is older than the TTL measured on event time (the
Kafka record timestamps, so that a replay expires exactly the same entries as the first run).
Evictions are returned to the caller, who counts them; nothing is dropped silently.

"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

__all__ = ["Pending", "PendingStore"]


@dataclass
class Pending:
    """What is needed to score and learn once the label arrives."""

    x: dict
    y_pred: Any
    ts: int


class PendingStore:
    """Insertion-ordered map id -> Pending, bounded by size and by age (ms of event time)."""

    def __init__(self, max_size: int, ttl_ms: int | None):
        self.max_size = max_size
        self.ttl_ms = ttl_ms
        self._items: OrderedDict[str, Pending] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def add(self, rid: str, entry: Pending) -> list[Pending]:
        """Store an entry; return the entries it pushed out (a replaced id, or the oldest)."""
        evicted = []
        if rid in self._items:
            evicted.append(self._items.pop(rid))
        self._items[rid] = entry
        while len(self._items) > self.max_size:
            evicted.append(self._items.popitem(last=False)[1])
        return evicted

    def pop(self, rid: str) -> Pending | None:
        """Remove and return the entry for `rid`, or None when it is unknown."""
        return self._items.pop(rid, None)

    def expire(self, now_ms: int) -> list[Pending]:
        """Remove and return the entries older than the TTL at event time `now_ms`."""
        if self.ttl_ms is None:
            return []
        expired = []
        while self._items:
            rid, entry = next(iter(self._items.items()))
            if now_ms - entry.ts <= self.ttl_ms:
                break
            expired.append(self._items.pop(rid))
        return expired
