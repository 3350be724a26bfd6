"""The stream a fault run serves: Elec2 events with their labels `DELAY` events late.

`Stream` sends it either all at once before the daemons start (then the learner's merge is
exactly the replay of the topics, and the final model can be compared byte for byte) or paced
at `RATE` events/s by a thread while the faults fire (`Flow`; its `events_sent` is the
progress that triggers them). Keys are the event ids, so events and labels are co-partitioned.

"""

from __future__ import annotations

import json
import threading
import time

from river_pa.connectors.replay import elec2, records

__all__ = ["DELAY", "Flow", "Stream"]

DELAY = 50
RATE = 150


class Stream:
    """The first `n_events` Elec2 rows as (kind, id, value, timestamp) records."""

    def __init__(self, elec2_path, n_events: int):
        self.rows = elec2(str(elec2_path), n_events)
        self.records = list(records(self.rows, DELAY))
        self.n_events = n_events

    def ids(self) -> set[str]:
        return {f"e{i}" for i in range(self.n_events)}


def send(producer, record, events: str, labels: str) -> None:
    kind, rid, value, ts = record
    producer.send(events if kind == "event" else labels, key=rid.encode(),
                  value=json.dumps(value).encode(), timestamp_ms=ts)


class Flow(threading.Thread):
    """Sends a stream's records in order, `rate` events/s (0: as fast as it can)."""

    def __init__(self, producer, stream: Stream, events: str, labels: str, rate: float):
        super().__init__(daemon=True, name="fault-flow")
        self.producer, self.stream, self.topics, self.rate = producer, stream, (events, labels), rate
        self.events_sent = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        started = time.monotonic()
        try:
            for record in self.stream.records:
                send(self.producer, record, *self.topics)
                if record[0] == "event":
                    self.events_sent += 1
                    ahead = started + self.events_sent / self.rate - time.monotonic() if self.rate else 0
                    if ahead > 0.002:
                        time.sleep(ahead)
            self.producer.flush()
        except BaseException as exc:  # noqa: BLE001 (reported by `finish`)
            self.error = exc

    def finish(self, timeout_s: float = 300) -> None:
        """Wait for the last record to be acknowledged; raise what the thread raised."""
        self.join(timeout_s)
        if self.error is not None:
            raise self.error
        assert not self.is_alive(), f"the stream was still being sent after {timeout_s} s"
