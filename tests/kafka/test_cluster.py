"""The daemon on a 3-broker cluster (replication factor 3, min.insync.replicas 2) while one
broker is stopped mid-stream and started again."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from river_pa.connectors.replay import elec2, records, send_all

N_EVENTS = 4_000


@pytest.mark.one_mode(True)
def test_one_broker_of_three_stopped_mid_stream_loses_nothing(cluster, cluster_node, elec2_path,
                                                              exactly_once):
    events, labels, preds = cluster.topics("events", "labels", "preds", partitions=2)
    send_all(cluster.producer(acks="all"), records(elec2(str(elec2_path), N_EVENTS), 100),
             events, labels)
    extra = ("--exactly-once", "--checkpoint-seconds", "1") if exactly_once else ()
    proc = cluster.serve_stream(events, labels, preds, "--max-poll-records", "50", *extra)
    cluster.wait_for(preds, 500, proc=proc)
    cluster_node("stop", 2)
    # two brokers left: still min.insync.replicas, so the daemon goes on
    cluster.wait_for(preds, 2_000, proc=proc, committed_only=exactly_once)
    cluster_node("start", 2)
    report = cluster.wait_for_report("d0.jsonl", lambda r: r["labelled"] == N_EVENTS, proc, 240)
    assert cluster.stop(proc) == 0
    assert report["learned"] == N_EVENTS and report["orphan_labels"] == report["pending"] == 0
    ids = Counter(json.loads(r.value)["id"] for r in cluster.read_all(preds, exactly_once))
    assert set(ids) == {f"e{i}" for i in range(N_EVENTS)}
    if exactly_once:  # read-committed readers see each prediction once
        assert set(ids.values()) == {1}
