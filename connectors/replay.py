"""Replay a labelled data set as events, with labels delayed by N events on a labels topic.

Event i gets the record timestamp `start_ms + i * step_ms`; its label (when delayed) is sent
on the labels topic with the timestamp of event i + delay, before that event, which is the order
of River's `simulate_qa` (and so of `river-pa evaluate --delay N`). Keys are the event ids, so
events and labels land on the same partition number of two topics with the same partition
count (co-partitioning).

"""

from __future__ import annotations

import csv
import gzip
import json
import time
from collections import deque
from typing import Iterator, Sequence

__all__ = ["elec2", "records", "send_all"]


def elec2(path: str, limit: int | None = None) -> list[tuple[dict, bool]]:
    """Elec2 rows as (features, label) with the label `class == 1` as a bool."""
    with gzip.open(path, "rt", newline="") as fh:
        rows = []
        for row in csv.DictReader(fh):
            y = row.pop("class") == "1"
            rows.append(({k: float(v) for k, v in row.items()}, y))
            if limit is not None and len(rows) >= limit:
                break
    return rows


def records(rows: Sequence[tuple[dict, object]], delay: int | None, step_ms: int = 1000,
            start_ms: int | None = None, id_prefix: str = "e") -> Iterator[tuple[str, str, dict, int]]:
    """Yield (kind, id, value, timestamp_ms) with kind 'event' or 'label', in send order.

    With `delay=None` each event carries its label; otherwise the label of event i follows
    `delay` events later on the labels topic. By default the timestamps end now: brokers
    reject timestamps far in the future and time-based retention deletes old ones.
    """
    if start_ms is None:
        start_ms = int(time.time() * 1000) - (len(rows) + (delay or 0) + 1) * step_ms
    waiting: deque = deque()
    i = -1
    for i, (x, y) in enumerate(rows):
        ts = start_ms + i * step_ms
        while waiting and waiting[0][0] <= i:
            _, rid, label = waiting.popleft()
            yield "label", rid, {"id": rid, "y": label}, ts
        rid = f"{id_prefix}{i}"
        event = {"id": rid, "x": x, "ts": ts}
        if delay is None:
            event["y"] = y
        else:
            waiting.append((i + delay, rid, y))
        yield "event", rid, event, ts
    for due, rid, label in waiting:
        yield "label", rid, {"id": rid, "y": label}, start_ms + max(due, i + 1) * step_ms


def send_all(producer, stream, events_topic: str, labels_topic: str | None,
             rate: float = 0) -> int:
    """Send `records(...)` output with a kafka-python producer; return the number sent.

    `rate` > 0 paces the events at that many per second (labels ride along).
    """
    n, events, started = 0, 0, time.monotonic()
    for kind, rid, value, ts in stream:
        topic = events_topic if kind == "event" else labels_topic
        producer.send(topic, key=rid.encode(), value=json.dumps(value).encode(), timestamp_ms=ts)
        n += 1
        if rate and kind == "event":
            events += 1
            ahead = started + events / rate - time.monotonic()
            if ahead > 0.002:  # sleep in steps of a few ms, not once per event
                time.sleep(ahead)
    producer.flush()
    return n
