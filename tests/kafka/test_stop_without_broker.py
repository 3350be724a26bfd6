"""SIGTERM while no broker is left: the daemon exits within seconds (it waited minutes for the
final flush), with status 1 and one line; the next start resumes from the last checkpoint."""

from __future__ import annotations

import signal
import time

from river_pa.connectors.replay import elec2, records, send_all

N_EVENTS = 500


def test_sigterm_with_every_broker_gone_exits_in_seconds(cluster, cluster_node, elec2_path):
    events, labels, preds = cluster.topics("events", "labels", "preds", partitions=2)
    send_all(cluster.producer(acks="all"), records(elec2(str(elec2_path), N_EVENTS), 100),
             events, labels)
    proc = cluster.serve_stream(events, labels, preds)
    cluster.wait_for_report("d0.jsonl", lambda r: r["labelled"] == N_EVENTS, proc, 240)
    for node in (1, 2, 3):  # the fixture starts them again
        cluster_node("stop", node)
    assert proc.poll() is None, cluster.exited(proc)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    status = proc.wait(timeout=60)
    took = time.monotonic() - sent
    assert status == 1 and took < 10, (status, took)  # the grace is 3 s, then a TCP probe
    lines = [line for line in cluster.log("d0").splitlines() if line.startswith("river-pa serve:")]
    refused = ", ".join(f"{a} (Connection refused)" for a in cluster.bootstrap.split(","))
    assert lines == [f"river-pa serve: stopped without a final checkpoint: no broker at {refused} "
                     "(the records since the last one are served again at the next start)"]
