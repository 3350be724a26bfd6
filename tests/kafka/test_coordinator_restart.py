"""`--exactly-once` while the broker hosting the group coordinator, then the one hosting the
transaction coordinator, is stopped and started again (a rolling restart): every daemon goes on
after each, every event is predicted once for a read_committed reader, and SIGTERM stops them.

kafka-python 3.0.12 lost the transactional request sent while the coordinator's broker was
down and waited for ever in `send_offsets_to_transaction` (the daemon froze, also to SIGTERM).
"""

from __future__ import annotations

import json
from collections import Counter

from river_pa.connectors.replay import elec2, records, send_all
from tests.kafka.conftest import coordinator_nodes

N_EVENTS = 3_000
# a transactional call that does not end is given up after max_block_ms (20 s by default)
EO = ("--exactly-once", "--checkpoint-seconds", "0.5", "--max-poll-records", "50",
      "--kafka", '{"max_block_ms": 10000}')


def thirds(elec2_path) -> list[list]:
    """The labelled stream of N_EVENTS events, cut in three at event boundaries."""
    stream = list(records(elec2(str(elec2_path), N_EVENTS), 100))
    cuts = [next(i for i, r in enumerate(stream) if r[0] == "event" and r[1] == f"e{n}")
            for n in (N_EVENTS // 3, 2 * N_EVENTS // 3)]
    return [stream[:cuts[0]], stream[cuts[0]:cuts[1]], stream[cuts[1]:]]


def restart_coordinators(cluster, cluster_node, group: str, transactional_ids: list[str],
                         send, progressed) -> None:
    """Stop the broker of `group`'s coordinator, then the one of the transaction coordinator
    of `transactional_ids` (once if the same), `send()` the next third of the stream while it
    is down, start it again and wait until `progressed(events sent so far)`."""
    sent = N_EVENTS // 3
    for role in ("group", "transactions"):
        nodes = coordinator_nodes(cluster.bootstrap, group, transactional_ids)
        node = nodes["group"] if role == "group" else nodes["transactions"][transactional_ids[0]]
        cluster_node("stop", node)
        send()
        cluster_node("start", node)
        sent += N_EVENTS // 3
        progressed(sent)


def assert_once_each(cluster, preds) -> None:
    ids = Counter(json.loads(r.value)["id"] for r in cluster.read_all(preds, committed_only=True))
    assert set(ids) == {f"e{i}" for i in range(N_EVENTS)}
    assert set(ids.values()) == {1}  # once each for a read_committed reader


def test_coordinators_broker_restarts_under_exactly_once(cluster, cluster_node, elec2_path):
    parts = thirds(elec2_path)
    events, labels, preds = cluster.topics("events", "labels", "preds", partitions=2)
    producer = cluster.producer(acks="all")
    send_all(producer, parts.pop(0), events, labels)
    group = f"{events}-d0"
    proc = cluster.serve_stream(events, labels, preds, *EO, group=group)
    cluster.wait_for(preds, 200, proc=proc, committed_only=True)
    restart_coordinators(
        cluster, cluster_node, group, [f"{group}-d0"],
        lambda: send_all(producer, parts.pop(0), events, labels),
        lambda sent: cluster.wait_for(preds, sent, 240, committed_only=True, proc=proc))
    report = cluster.wait_for_report("d0.jsonl", lambda r: r["labelled"] == N_EVENTS, proc, 240)
    assert cluster.stop(proc) == 0
    assert report["learned"] == N_EVENTS
    assert_once_each(cluster, preds)


def test_coordinators_broker_restarts_under_a_learner_and_a_predictor(cluster, cluster_node,
                                                                      elec2_path):
    parts = thirds(elec2_path)
    events, labels, preds = cluster.topics("events", "labels", "preds", partitions=2)
    producer = cluster.producer(acks="all")
    send_all(producer, parts.pop(0), events, labels)
    learner = cluster.serve_stream(events, labels, f"{events}-unused", "--role", "learn",
                                   "--publish-seconds", "0.5", *EO, name="learner")
    predictor = cluster.serve_stream(events, None, preds, "--role", "predict", *EO, name="p1",
                                     group=f"{events}-predict")
    daemons = [learner, predictor]
    cluster.wait_for(preds, 200, proc=predictor, committed_only=True)

    def progressed(sent: int) -> None:  # both: the predictor's outputs, the learner's events
        cluster.wait_for(preds, sent, 240, committed_only=True, proc=predictor)
        cluster.wait_for_report("learner.jsonl", lambda r: r["events"] >= sent, learner, 240)

    restart_coordinators(
        cluster, cluster_node, f"{events}-predict",
        [f"{events}-predict-p1", f"{events}-learner.learner"],
        lambda: send_all(producer, parts.pop(0), events, labels), progressed)
    # the cluster script gives __consumer_offsets one partition: the learner's group has the
    # predictors' coordinator, restarted above
    placed = [coordinator_nodes(cluster.bootstrap, f"{events}-{g}")["group"]
              for g in ("predict", "learner")]
    assert placed[0] == placed[1]
    report = cluster.wait_for_report("learner.jsonl", lambda r: r["labelled"] == N_EVENTS,
                                     learner, 240)
    for proc in daemons:
        assert cluster.stop(proc) == 0
    assert report["learned"] == N_EVENTS
    assert_once_each(cluster, preds)
    # the predictor's rollbacks do not count the aborted events twice (a new user's rolling
    # restart: 4,115 events reported for 4,000)
    assert cluster.last_report("p1.jsonl")["events"] == N_EVENTS
