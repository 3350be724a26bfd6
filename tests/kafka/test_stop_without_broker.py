"""SIGTERM while no broker is left: a daemon exits within seconds (the final flush, commit or
group leave waited minutes for the broker), with status 1 and one line; the next start resumes
from the last checkpoint."""

from __future__ import annotations

import signal
import time

from river_pa.connectors.replay import elec2, records, send_all
from tests.kafka.conftest import PRIVATE, broker_script

N_EVENTS = 500


def test_sigterm_with_every_broker_gone_exits_in_seconds(private, elec2_path):
    kafka = private  # a broker of its own to stop (the next test to need it starts it again)
    events, labels, preds = kafka.topics("events", "labels", "preds", partitions=2)
    send_all(kafka.producer(), records(elec2(str(elec2_path), N_EVENTS), 100),
             events, labels)
    both = kafka.serve_stream(events, labels, preds, group=f"{events}-both", name="both")
    learner = kafka.serve_stream(events, labels, f"{events}-unused", "--role", "learn",
                                   "--publish-seconds", "0.5", name="learn")
    predictor = kafka.serve_stream(events, None, preds, "--role", "predict", name="predict",
                                     group=f"{events}-predict")
    kafka.wait_for_report("both.jsonl", lambda r: r["labelled"] == N_EVENTS, both, 240)
    kafka.wait_for_report("predict.jsonl", lambda r: r["events"] == N_EVENTS, predictor, 240)
    # a learner steps down when the lease's coordinator goes away (connectors/roles/learner.py), and
    # exits once a request times out: it is stopped before
    assert kafka.stop(learner) == 0
    procs = {"both": both, "predict": predictor}
    broker_script("stop", env=PRIVATE)
    for proc in procs.values():
        assert proc.poll() is None, kafka.exited(proc)
    sent = time.monotonic()
    for proc in procs.values():
        proc.send_signal(signal.SIGTERM)
    took = {}
    for name, proc in procs.items():
        assert proc.wait(timeout=60) == 1, kafka.exited(proc)
        took[name] = time.monotonic() - sent
    assert max(took.values()) < 10, took  # the grace is 3 s, then a TCP probe
    refused = ", ".join(f"{a} (Connection refused)" for a in kafka.bootstrap.split(","))
    for name in procs:
        lines = [line for line in kafka.log(name).splitlines()
                 if line.startswith("river-pa serve:")]
        assert lines == [f"river-pa serve: stopped without a final checkpoint: no broker at "
                         f"{refused} (the records since the last one are served again at the "
                         "next start)"], name
    print("exit after SIGTERM (s):", {k: round(v, 2) for k, v in took.items()})
