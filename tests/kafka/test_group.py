"""Two daemons in one consumer group on a 4-partition topic."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from river_pa.connectors.replay import elec2, records, send_all

N_EVENTS = 4_000


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once"])
def test_two_daemons_share_partitions_and_survivor_takes_over(kafka, elec2_path, exactly_once):
    events, preds = kafka.topics("events", "preds", partitions=4)
    group = f"{events}-group"
    stream = list(records(elec2(str(elec2_path), N_EVENTS), delay=None))  # labels inline
    half = N_EVENTS // 2
    extra = ("--exactly-once", "--checkpoint-seconds", "1") if exactly_once else ()
    d1 = kafka.serve_stream(events, None, preds, *extra, name="d1", group=group)
    d2 = kafka.serve_stream(events, None, preds, *extra, name="d2", group=group)
    kafka.wait_group(group, 2)

    send_all(kafka.producer(), stream[:half], events, None)
    kafka.wait_for(preds, half, proc=d2, committed_only=exactly_once)
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


def values_by_half(values: list[dict], half: int) -> tuple[list, list]:
    """Predictions of the events produced before and after the first daemon stopped."""
    index = {v["id"]: int(v["id"][1:]) for v in values}
    return ([v for v in values if index[v["id"]] < half],
            [v for v in values if index[v["id"]] >= half])


def test_exactly_once_survives_a_member_joining_mid_transaction(kafka, elec2_path):
    """A second daemon joins while the first holds an open transaction: the first aborts and
    rolls back, the new owner serves those records again, and read-committed consumers
    still see exactly one prediction per event."""
    events, preds = kafka.topics("events", "preds", partitions=4)
    group = f"{events}-group"
    send_all(kafka.producer(), records(elec2(str(elec2_path), N_EVENTS), None), events, None)
    slow = ("--exactly-once", "--checkpoint-every", "1000000", "--checkpoint-seconds", "10")
    d1 = kafka.serve_stream(events, None, preds, *slow, name="d1", group=group)
    kafka.wait_for(preds, 100, proc=d1)  # not committed yet: d1 is inside its first transaction
    d2 = kafka.serve_stream(events, None, preds, *slow, name="d2", group=group)
    kafka.wait_for_log("d1", "rolling back the open transaction", d1)
    kafka.wait_for(preds, N_EVENTS, proc=d2, committed_only=True, timeout_s=180)
    assert kafka.stop(d1) == 0 and kafka.stop(d2) == 0
    ids = [json.loads(r.value)["id"] for r in kafka.read_all(preds, committed_only=True)]
    assert Counter(ids) == Counter(f"e{i}" for i in range(N_EVENTS))
    assert len(kafka.read_all(preds)) > N_EVENTS  # the aborted predictions are in the log
