"""`--exactly-once` while the broker hosting the group coordinator, then the one hosting the
transaction coordinator, is stopped and started again (a rolling restart): the daemon goes on
after each, every event is predicted once for a read_committed reader, and SIGTERM stops it.

kafka-python 3.0.12 waited for ever in `send_offsets_to_transaction` once the group
coordinator's broker had stopped (the daemon froze, also to SIGTERM).
"""

from __future__ import annotations

import json
from collections import Counter

from river_pa.connectors.replay import elec2, records, send_all
from tests.kafka.conftest import coordinator_nodes

N_EVENTS = 3_000


def test_coordinators_broker_restarts_under_exactly_once(cluster, cluster_node, elec2_path):
    stream = list(records(elec2(str(elec2_path), N_EVENTS), 100))
    thirds = [next(i for i, r in enumerate(stream) if r[0] == "event" and r[1] == f"e{n}")
              for n in (N_EVENTS // 3, 2 * N_EVENTS // 3)]
    parts = [stream[:thirds[0]], stream[thirds[0]:thirds[1]], stream[thirds[1]:]]
    events, labels, preds = cluster.topics("events", "labels", "preds", partitions=2)
    producer = cluster.producer(acks="all")
    send_all(producer, parts[0], events, labels)
    group = f"{events}-d0"
    # a transactional call that does not end is given up after max_block_ms (60 s by default)
    proc = cluster.serve_stream(events, labels, preds, "--exactly-once", "--max-poll-records",
                                "50", "--checkpoint-seconds", "0.5", "--kafka",
                                '{"max_block_ms": 10000}', group=group)
    cluster.wait_for(preds, 200, proc=proc, committed_only=True)
    for role in ("group", "transactions"):
        nodes = coordinator_nodes(cluster.bootstrap, group, [f"{group}-d0"])
        node = nodes["group"] if role == "group" else nodes["transactions"][f"{group}-d0"]
        cluster_node("stop", node)
        send_all(producer, parts[1 if role == "group" else 2], events, labels)  # served now
        cluster_node("start", node)
        sent = N_EVENTS // 3 * (2 if role == "group" else 3)
        cluster.wait_for(preds, sent, 240, committed_only=True, proc=proc)  # committed again
    report = cluster.wait_for_report("d0.jsonl", lambda r: r["labelled"] == N_EVENTS, proc, 240)
    assert cluster.stop(proc) == 0
    assert report["learned"] == N_EVENTS
    ids = Counter(json.loads(r.value)["id"] for r in cluster.read_all(preds, committed_only=True))
    assert set(ids) == {f"e{i}" for i in range(N_EVENTS)}
    assert set(ids.values()) == {1}  # once each for a read_committed reader
