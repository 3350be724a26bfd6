"""A fake Kafka client for the daemon's unit tests (registered in tests/conftest.py through
`pytest_plugins`): in-memory topics, and a consumer and a producer with the calls of
connectors/kafka/protocols.py, so the loop, the event-time ordering and the positions run in
milliseconds without a broker. It keeps what the tests assert on: every record sent, every
offset committed, every seek."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import NamedTuple

import pytest

from river_pa.connectors.kafka.protocols import Consumer, Producer


class TP(NamedTuple):
    """The fake client's partition (a (topic, partition) pair, as kafka-python's)."""

    topic: str
    partition: int


@dataclass
class Record:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list = field(default_factory=list)


class Cluster:
    """The topics (a log per partition) and the group's committed offsets."""

    def __init__(self):
        self.logs: dict[TP, list[Record]] = {}
        self.committed: dict[TP, int] = {}

    def topic(self, name: str, partitions: int = 1) -> str:
        for p in range(partitions):
            self.logs.setdefault(TP(name, p), [])
        return name

    def append(self, topic: str, value: bytes | None, key: bytes | None = None,
               timestamp: int = 0, partition: int = 0, headers=None) -> Record:
        log = self.logs.setdefault(TP(topic, partition), [])
        record = Record(topic, partition, len(log), timestamp, key, value, list(headers or []))
        log.append(record)
        return record

    def send_all(self, stream, events: str, labels: str | None, partitions: int = 1) -> None:
        """`replay.records(...)` output as JSON records, an id always on the same partition."""
        for kind, rid, value, ts in stream:
            self.append(events if kind == "event" else labels, json.dumps(value).encode(),
                        rid.encode(), ts, int(rid.lstrip("e")) % partitions)

    def values(self, topic: str) -> list[dict]:
        return [json.loads(r.value) for tp, log in sorted(self.logs.items()) if tp.topic == topic
                for r in log]


class GroupMetadata(NamedTuple):
    member_id: str
    state: str


class FakeConsumer(Consumer):
    """A consumer of `cluster`: a subscription is assigned every partition at the next poll
    (with the listener told, as a group join does); `highwater` is the log end at the last
    fetch of the partition; `member_id` its id in the group, and a `commit_error` set is
    raised by the next commits (the coordinator refusing them)."""

    def __init__(self, cluster: Cluster, max_poll_records: int = 500):
        self.cluster, self.max_poll_records = cluster, max_poll_records
        self.config = {"retry_backoff_ms": 100, "session_timeout_ms": 10_000}
        self.member_id, self.commit_error = "member-1", None
        self.assigned: set[TP] = set()
        self.positions: dict[TP, int] = {}
        self.seeks: list[tuple[TP, int]] = []
        self.fetched_ends: dict[TP, int] = {}
        self.joining, self.listener, self.closed = None, None, False

    def poll(self, timeout_ms: int = 0, max_records=None) -> dict:
        if self.joining is not None:
            self.assign(sorted(tp for tp in self.cluster.logs if tp.topic in self.joining))
            self.joining = None
            if self.listener is not None:
                self.listener.on_partitions_assigned(self.assignment())
            return {}
        polled, budget = {}, self.max_poll_records
        for tp in sorted(self.assigned):
            log, start = self.cluster.logs[tp], self.position(tp)
            records = log[start:start + budget]
            self.fetched_ends[tp] = len(log)
            if records:
                polled[tp] = records
                self.positions[tp] = start + len(records)
                budget -= len(records)
        return polled

    def subscribe(self, topics, listener=None) -> None:
        self.joining, self.listener = list(topics), listener

    def unsubscribe(self) -> None:
        self.assigned.clear()

    def assign(self, partitions) -> None:
        self.assigned = set(partitions)

    def assignment(self) -> set:
        return set(self.assigned)

    def partitions_for_topic(self, topic: str):
        return {tp.partition for tp in self.cluster.logs if tp.topic == topic} or None

    def topics(self) -> set:
        return {tp.topic for tp in self.cluster.logs}

    def committed(self, partition) -> int | None:
        return self.cluster.committed.get(partition)

    def commit(self, offsets=None, timeout_ms=None) -> None:
        if self.commit_error is not None:
            raise self.commit_error
        for tp, meta in (offsets or {}).items():
            self.cluster.committed[tp] = meta.offset

    def seek(self, partition, offset: int) -> None:
        self.seeks.append((partition, offset))
        self.positions[partition] = offset

    def seek_to_beginning(self, *partitions) -> None:
        for tp in partitions:
            self.seek(tp, 0)

    def seek_to_end(self, *partitions) -> None:
        for tp in partitions:
            self.seek(tp, len(self.cluster.logs[tp]))

    def position(self, partition, timeout_ms=None) -> int:
        return self.positions.get(partition, 0)

    def highwater(self, partition) -> int | None:
        return self.fetched_ends.get(partition)

    def end_offsets(self, partitions) -> dict:
        return {tp: len(self.cluster.logs[tp]) for tp in partitions}

    def group_metadata(self) -> GroupMetadata:
        return GroupMetadata(self.member_id, "Stable")

    def close(self, autocommit: bool = True) -> None:
        self.closed = True


class _Sent:
    """The future of a send: the fake never fails one."""

    def add_errback(self, *args) -> None:
        pass


class FakeProducer(Producer):
    """A producer appending to `cluster` at once (transactions change nothing)."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.config = {"max_request_size": 1_048_576, "max_block_ms": 1000,
                       "transactional_id": None}
        self.closed = False

    def send(self, topic, value=None, key=None, headers=None):
        self.cluster.append(topic, value, key, headers=headers)
        return _Sent()

    def flush(self, timeout=None) -> None:
        pass

    def init_transactions(self) -> None:
        """Transactions change nothing: records are visible at once (a read_uncommitted
        reader's view); a test replaces the adapter's `transact` to script the calls."""

    def begin_transaction(self) -> None:
        pass

    def close(self, timeout=None) -> None:
        self.closed = True


@pytest.fixture
def cluster() -> Cluster:
    return Cluster()


@pytest.fixture
def fake_clients(cluster, monkeypatch) -> Cluster:
    """Daemons started in this test connect to `cluster` (the factories of loop/daemon.py
    replaced); returns the cluster."""
    import dataclasses

    from river_pa.connectors.kafka import adapter
    from river_pa.connectors.loop import daemon

    fake = dataclasses.replace(
        adapter(), make_consumer=lambda cfg: FakeConsumer(cluster, cfg.max_poll_records),
        make_offsets_client=lambda cfg: FakeConsumer(cluster),
        make_producer=lambda cfg, limits=None: FakeProducer(cluster))
    monkeypatch.setattr(daemon, "adapter", lambda name: fake)
    monkeypatch.setattr(daemon, "topic_limits", lambda cfg, topics: {})
    return cluster


def serve_until_learned(daemon, learned: int):
    """Run the daemon's own `run` until it has learned `learned` events, then stop it as a
    signal would (after the current step); it must exit 0. Returns the daemon."""
    step = daemon._step

    def step_then_check():
        step()
        daemon.stopping = daemon.stats.counts["learned"] >= learned

    daemon._step = step_then_check
    assert daemon.run() == 0
    return daemon
