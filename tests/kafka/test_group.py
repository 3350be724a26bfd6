"""Two daemons in one consumer group on a 4-partition topic."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
from kafka import KafkaConsumer
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment, ConsumerProtocolSubscription,
)
from kafka.structs import TopicPartition

from river_pa.connectors.replay import elec2, records, send_all

N_EVENTS = 4_000


@pytest.mark.one_mode(True)
def test_two_daemons_share_partitions_and_survivor_takes_over(kafka, elec2_path, exactly_once):
    events, preds = kafka.topics("events", "preds", partitions=4)
    group = f"{events}-group"
    stream = list(records(elec2(str(elec2_path), N_EVENTS), delay=None))  # labels inline
    extra = ("--exactly-once", "--checkpoint-seconds", "1") if exactly_once else ()
    # a session of 10 s, not the fixture's 2: on a busy machine d2 was evicted once while the
    # first half flowed, d1 then served it all and "the group split the partitions" failed
    extra += ("--session-timeout-ms", "10000")
    d1 = kafka.serve_stream(events, None, preds, *extra, name="d1", group=group)
    d2 = kafka.serve_stream(events, None, preds, *extra, name="d2", group=group)
    kafka.wait_group(group, 2)

    # the first part flows until both members served some of it: at a load of 22 on 2 cores
    # (ci16) d1 served none of a fixed first half, the group having moved its partitions
    half = serve_until_both_served(kafka, stream, events, preds, d2, exactly_once)
    assert kafka.stop(d1) == 0  # graceful: checkpoint, commit, leave the group
    kafka.wait_group(group, 1)
    send_all(kafka.producer(), stream[half:], events, None)
    kafka.wait_for(preds, N_EVENTS, proc=d2, committed_only=exactly_once)
    kafka.wait_for_report("d2.jsonl", lambda r: r["events"] + kafka.last_report("d1.jsonl")["events"]
                          == N_EVENTS, d2)
    assert kafka.stop(d2) == 0

    values = [json.loads(r.value) for r in kafka.read_all(preds, committed_only=exactly_once)]
    assert Counter(v["id"] for v in values) == Counter(f"e{i}" for i in range(N_EVENTS))
    first, second = values_by_half(values, half)
    assert {v["daemon"] for v in first} == {"d1", "d2"}  # the group split the partitions
    assert {v["daemon"] for v in second} == {"d2"}
    assert {v["source"]["partition"] for v in second} == {0, 1, 2, 3}  # d2 took d1's share
    assert kafka.last_report("d1.jsonl")["learned"] + kafka.last_report("d2.jsonl")["learned"] \
        == N_EVENTS


def serve_until_both_served(kafka, stream: list, events: str, preds: str, d2,
                            exactly_once: bool) -> int:
    """Send `stream` from its start, half of it and then in chunks of 200, until both
    daemons have predicted some of what was sent; return how many events were sent (at most
    3/4 of the stream: the rest shows the survivor taking over every partition)."""
    sent, producer = N_EVENTS // 2, kafka.producer()
    send_all(producer, stream[:sent], events, None)
    while True:
        kafka.wait_for(preds, sent, proc=d2, committed_only=exactly_once)
        served = {json.loads(r.value)["daemon"]
                  for r in kafka.read_all(preds, committed_only=exactly_once)}
        if served == {"d1", "d2"}:
            return sent
        assert sent < 3 * N_EVENTS // 4, f"after {sent} events only {served} served any"
        send_all(producer, stream[sent:sent + 200], events, None)
        sent += 200


def values_by_half(values: list[dict], half: int) -> tuple[list, list]:
    """Predictions of the events produced before and after the first daemon stopped."""
    index = {v["id"]: int(v["id"][1:]) for v in values}
    return ([v for v in values if index[v["id"]] < half],
            [v for v in values if index[v["id"]] >= half])


def test_exactly_once_survives_a_member_joining_mid_transaction(kafka, elec2_path):
    """A second daemon joins while the first holds an open transaction: the first aborts and
    rolls back, the new owner serves those records again, and read-committed consumers
    still see exactly one prediction per event."""
    # d1 commits only when it stops (it failed on a busy machine when d1 committed by time
    # before d2 had started), inside a transaction timeout longer than any test wait
    events, preds = kafka.topics("events", "preds", partitions=4)
    group = f"{events}-group"
    send_all(kafka.producer(), records(elec2(str(elec2_path), N_EVENTS), None), events, None)
    d1 = kafka.serve_stream(events, None, preds, "--exactly-once", "--checkpoint-every", "1000000",
                            "--checkpoint-seconds", "3600", "--kafka",
                            json.dumps({"transaction_timeout_ms": 600_000}), name="d1", group=group)
    kafka.wait_for(preds, 100, proc=d1)  # not committed: d1 is inside its first transaction
    d2 = kafka.serve_stream(events, None, preds, "--exactly-once", "--checkpoint-seconds", "1",
                            name="d2", group=group)
    kafka.wait_for_log("d1", "rolling back the open transaction", d1)
    kafka.wait_group(group, 2)
    assert kafka.stop(d1) == 0  # commits what it served since the rollback, then leaves
    kafka.wait_for(preds, N_EVENTS, proc=d2, committed_only=True, timeout_s=180)
    assert kafka.stop(d2) == 0
    ids = [json.loads(r.value)["id"] for r in kafka.read_all(preds, committed_only=True)]
    assert Counter(ids) == Counter(f"e{i}" for i in range(N_EVENTS))
    assert len(kafka.read_all(preds)) > N_EVENTS  # the aborted predictions are in the log


def committed_offsets(kafka, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    """The group's committed offset of each partition of `topic`."""
    consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap, group_id=group,
                             enable_auto_commit=False)
    try:
        return {p: consumer.committed(TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        consumer.close()


def wait_committed(kafka, group: str, topic: str, partitions: int, predicate,
                   timeout_s: float = 60) -> dict:
    """Poll the group's committed offsets until `predicate(offsets)` holds."""
    deadline = time.monotonic() + timeout_s
    while True:
        offsets = committed_offsets(kafka, group, topic, partitions)
        if predicate(offsets):
            return offsets
        assert time.monotonic() < deadline, f"committed offsets stayed at {offsets}"
        time.sleep(0.2)


def test_a_member_keeping_partitions_loses_none_of_their_buffered_records(kafka, elec2_path):
    # Labels 100 events late on their own topic: the event-time merge holds fetched events
    # back until their labels come. At each rebalance d1 dropped them for every partition,
    # also those it kept, whose fetch position kafka-python leaves past them: they were
    # never predicted (d1 is slowed down by small batches, so the rebalances find it busy).
    n = 30_000
    events, labels, preds = kafka.topics("events", "labels", "preds", partitions=4)
    group = f"{events}-group"
    send_all(kafka.producer(), records(elec2(str(elec2_path), n), delay=100), events, labels)
    d1 = kafka.serve_stream(events, labels, preds, "--max-poll-records", "10", name="d1",
                            group=group)
    kafka.wait_for(preds, 200, proc=d1)
    for joins in range(2):  # 4 rebalances: a join and a graceful leave, twice
        d2 = kafka.serve_stream(events, labels, preds, name=f"d2-{joins}", group=group)
        kafka.wait_group(group, 2)
        if joins == 0:  # it serves a share (stopped at once, a busy machine's d2 served none)
            kafka.wait_for_report("d2-0.jsonl", lambda r: r["events"] > 0, d2)
        assert kafka.stop(d2) == 0
        kafka.wait_group(group, 1)
    deadline = time.monotonic() + 120
    while (ids := {json.loads(r.value)["id"] for r in kafka.read_all(preds)}) != all_ids(n):
        assert d1.poll() is None, kafka.exited(d1)
        assert time.monotonic() < deadline, f"{len(all_ids(n) - ids)} events never predicted"
        time.sleep(0.5)
    assert kafka.stop(d1) == 0
    # that d2-0 served a share is waited for above; d1's own count may still reach n, as it
    # counts what it served before a rebalance and served again after it (at least once; seen
    # with both cores busy: 30000 < 30000)


def all_ids(n: int) -> set[str]:
    """The ids of the first `n` replayed events."""
    return {f"e{i}" for i in range(n)}


def test_committed_offsets_never_move_backwards(kafka, elec2_path):
    # d1 serves partitions 0-3; d2 joins and serves 2-3 further, then leaves. d1 got 2-3 back
    # with the offsets it remembered from before, and committed them at its next checkpoint:
    # the group's offsets moved backwards (a restart would serve those events again).
    events, preds = kafka.topics("events", "preds", partitions=4)
    group = f"{events}-group"
    stream = [r for r in records(elec2(str(elec2_path), 1_200), delay=None)]
    fast = ("--checkpoint-seconds", "0.5")
    d1 = kafka.serve_stream(events, None, preds, *fast, name="d1", group=group)
    send_all(kafka.producer(), stream[:400], events, None)
    wait_committed(kafka, group, events, 4, lambda o: sum(v or 0 for v in o.values()) == 400)
    d2 = kafka.serve_stream(events, None, preds, *fast, name="d2", group=group)
    kafka.wait_group(group, 2)
    send_all(kafka.producer(), stream[400:800], events, None)
    wait_committed(kafka, group, events, 4, lambda o: sum(v or 0 for v in o.values()) == 800)
    assert kafka.stop(d2) == 0
    kafka.wait_group(group, 1)
    before = committed_offsets(kafka, group, events, 4)
    producer = kafka.producer()
    for kind, rid, value, ts in stream[800:]:  # only partition 0 moves
        producer.send(events, partition=0, key=rid.encode(), value=json.dumps(value).encode(),
                      timestamp_ms=ts)
    producer.flush()
    after = wait_committed(kafka, group, events, 4, lambda o: o[0] == before[0] + 400)
    kafka.wait_for_report("d1.jsonl", lambda r: r["events"] + kafka.last_report("d2.jsonl")["events"]
                          == 1_200, d1)
    assert kafka.stop(d1) == 0
    assert committed_offsets(kafka, group, events, 4) == after
    assert {p: after[p] for p in (1, 2, 3)} == {p: before[p] for p in (1, 2, 3)}


class Greedy(RangePartitionAssignor):
    """The range protocol, except that the member that says 'greedy' gets every partition."""

    @classmethod
    def metadata(cls, topics):
        return ConsumerProtocolSubscription(cls.version, list(topics), b"greedy")

    @classmethod
    def assign(cls, cluster, members):
        greedy = next(m.member_id for m in members if m.metadata.user_data == b"greedy")
        topics = sorted({t for m in members for t in m.metadata.topics})
        everything = [(t, sorted(cluster.partitions_for_topic(t) or ())) for t in topics]
        return {m.member_id: ConsumerProtocolAssignment(
            cls.version, everything if m.member_id == greedy else [], b"") for m in members}


def test_a_member_left_without_partitions_says_so_and_rejoins(kafka, elec2_path):
    # The group leader is a consumer whose assignor keeps all 4 partitions for itself: the
    # daemon sat with nothing, without a word, for as long as that lasted.
    events, preds = kafka.topics("events", "preds", partitions=4)
    group = f"{events}-group"
    # a long session: with both cores busy a 6 s one expired (heartbeats late by seconds), the
    # group dropped the leader and gave d1 every partition, so d1 never had nothing to say
    leader = KafkaConsumer(bootstrap_servers=kafka.bootstrap, group_id=group,
                           enable_auto_commit=False, partition_assignment_strategy=(Greedy,),
                           session_timeout_ms=45000, heartbeat_interval_ms=3000)
    try:
        assert len(leader.partitions_for_topic(events)) == 4  # metadata known before it joins
        leader.subscribe([events])
        deadline = time.monotonic() + 60
        while not leader.assignment():
            assert time.monotonic() < deadline, "the greedy consumer never got its partitions"
            leader.poll(timeout_ms=100)
        d1 = kafka.serve_stream(events, None, preds, name="d1", group=group)
        # d1 starts, joins, then waits max(10 s, 3 session timeouts): 30 s with its defaults
        deadline = time.monotonic() + 240
        while "no partition assigned" not in kafka.log("d1"):
            assert d1.poll() is None, kafka.exited(d1)
            assert time.monotonic() < deadline, "d1 never said it holds no partition"
            leader.poll(timeout_ms=100)  # the leader takes part in every rebalance
    finally:
        leader.close()
    assert "events has 4 partitions and the group 2 members: rejoining" in kafka.log("d1")
    kafka.wait_group(group, 1)
    send_all(kafka.producer(), records(elec2(str(elec2_path), 400), delay=None), events, None)
    kafka.wait_for(preds, 400, proc=d1)
    assert kafka.stop(d1) == 0
