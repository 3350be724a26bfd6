"""`serve --metrics-port`: Prometheus /metrics, /livez and /readyz of running daemons, scraped
over HTTP while they serve a real broker; the predictor's staleness in learner progress."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from river_pa.connectors.replay import elec2, records, send_all

N_EVENTS = 600
DELAY = 50


def port_of(kafka, name: str, proc) -> int:
    """The metrics port a daemon started with --metrics-port 0 logged."""
    kafka.wait_for_log(name, "metrics and health endpoints on port", proc)
    return int(re.search(r"endpoints on port (\d+)", kafka.log(name)).group(1))


def get(port: int, path: str) -> tuple[int, str]:
    """(HTTP status, body) of GET http://127.0.0.1:port/path."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def scrape(port: int) -> dict:
    """{(sample name, frozenset of labels): value} of /metrics, parsed by prometheus-client."""
    status, text = get(port, "/metrics")
    assert status == 200
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def wait_until(predicate, procs, kafka, what: str, timeout_s: float = 120):
    """Poll `predicate()` until it returns a true value (the daemons must stay alive)."""
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        for proc in procs:
            assert proc.poll() is None, kafka.exited(proc)
        assert time.monotonic() < deadline, what
        time.sleep(0.2)
    return value


def test_learner_and_predictor_metrics_and_probes(kafka, elec2_path):
    rows = elec2(str(elec2_path), N_EVENTS)
    events, labels, preds = kafka.topics("events", "labels", "preds", partitions=2)
    predictor = kafka.serve_stream(events, None, preds, "--role", "predict", "--metrics-port", "0",
                                   "--checkpoint-seconds", "0.5", name="p1")
    p_port = port_of(kafka, "p1", predictor)
    kafka.wait_for_log("p1", "waiting for the first model snapshot", predictor)
    assert get(p_port, "/livez")[0] == 200
    assert get(p_port, "/readyz") == (503, "starting\n")  # no model: not ready
    stream = list(records(rows, DELAY))
    assert {kind for kind, *_ in stream[-DELAY:]} == {"label"}  # those of the last events
    producer = kafka.producer()
    send_all(producer, stream[:-DELAY], events, labels)
    for value in (b"{not json", b'{"id": "bad", "x": {"a": "text"}}'):  # two dead letters
        producer.send(events, key=b"bad", value=value)
    producer.flush()
    # publishes after batches that bring 200 events or more, never on time: the last labels,
    # sent once it has learned the others, are learned after the last model, and only the
    # progress record says so
    learner = kafka.serve_stream(events, labels, f"{events}-unused", "--role", "learn",
                                 "--challenger", 'c01=PAClassifier{"C": 0.01}',
                                 "--metrics-port", "0", "--publish-every", "200",
                                 "--publish-seconds", "3600", "--checkpoint-seconds", "0.5",
                                 name="learner")
    l_port = port_of(kafka, "learner", learner)
    procs = [predictor, learner]
    none = frozenset()
    wait_until(lambda: scrape(l_port).get(("river_pa_learned_total", none)) == N_EVENTS - DELAY,
               procs, kafka, "the learner never learned the first labels")
    # a standby learner (same flags, same group) is live and ready, and shows no metric
    standby = kafka.serve_stream(events, labels, f"{events}-unused", "--role", "learn",
                                 "--metrics-port", "0", "--checkpoint-seconds", "0.5",
                                 name="standby", group=f"{events}-learner")
    s_port = port_of(kafka, "standby", standby)
    wait_until(lambda: get(s_port, "/readyz") == (200, "standby: another learner holds the lease\n"),
               procs + [standby], kafka, "the standby never said it stands by")
    assert not {k for k in scrape(s_port) if k[0] in ("river_pa_metric", "river_pa_rolling_metric")}
    assert kafka.stop(standby) == 0
    send_all(producer, stream[-DELAY:], events, labels)

    def done():  # every label learned and every partition of both topics processed to its end
        m = scrape(l_port)
        lag = {k: v for k, v in m.items() if k[0] == "river_pa_consumer_lag"}
        finished = m.get(("river_pa_learned_total", none)) == N_EVENTS and len(lag) == 4
        return finished and set(lag.values()) == {0} and m

    learned = wait_until(done, procs, kafka, "the learner never processed everything")
    # the event the model refused is an event (decoded), dead-lettered, never labelled
    assert learned[("river_pa_events_total", none)] == N_EVENTS + 1
    assert learned[("river_pa_labelled_total", none)] == N_EVENTS
    assert learned[("river_pa_pending_events", none)] == 0
    assert learned[("river_pa_pending_bytes", none)] == 0
    reasons = {dict(k[1])["reason"]: v for k, v in learned.items()
               if k[0] == "river_pa_dead_letters_total"}
    assert reasons == {"invalid_json": 1, "feature_rejected": 1}, reasons
    version, model_learned = (learned[("river_pa_model_version", none)],
                              learned[("river_pa_model_learned", none)])
    assert version >= 1 and 0 < model_learned <= N_EVENTS - DELAY  # (per batch: not 3)
    manifests = [json.loads(r.value) for r in kafka.read_all(f"{events}.model")
                 if r.value and r.key.startswith(b"model/") and r.key.count(b"/") == 2]
    assert manifests[-1]["version"] == version  # the newest one in the model topic
    assert learned[("river_pa_invalid_snapshots_total", none)] == 0
    info = next(k for k in learned if k[0] == "river_pa_daemon_info")
    assert dict(info[1])["role"] == "learn"
    assert get(l_port, "/readyz") == (200, "ok\n") and get(l_port, "/livez") == (200, "ok\n")
    # the predictor: every event predicted with the newest model, N_EVENTS - model_learned
    # learned since by the learner
    staleness = wait_until(
        lambda: (m := scrape(p_port)).get(("river_pa_learned_since_model", none)) == N_EVENTS
        - model_learned and m.get(("river_pa_events_total", none)) == N_EVENTS + 1 and m,
        procs, kafka, "the predictor never reported the learner's progress")
    assert staleness[("river_pa_model_version", none)] == version
    assert staleness[("river_pa_model_learned", none)] == model_learned
    assert staleness[("river_pa_model_stale_seconds", none)] > 0
    assert get(p_port, "/readyz") == (200, "ok\n")
    # a predictor scores nothing: no metric series rather than a metric of 0
    assert not {k for k in staleness if k[0] in ("river_pa_metric", "river_pa_rolling_metric")}
    # the learner's progressive metric, on its endpoint and in its report
    report = kafka.wait_for_report("learner.jsonl", lambda r: r["learned"] == N_EVENTS, learner)
    model = ("model", dict(info[1])["model"])  # the series of the served model are labelled so
    accuracy = learned[("river_pa_metric", frozenset({("metric", "Accuracy"), model}))]
    assert accuracy == report["metrics"]["Accuracy"] > 0.5
    # the drift watch (ADWIN by default) of the learner's errors, labelled by model
    drift = report["drift"]
    assert drift["detector"] == "ADWIN"
    drifts = {k: v for k, v in learned.items() if k[0] == "river_pa_drifts_total" and model in k[1]}
    assert drifts == {
        ("river_pa_drifts_total", frozenset({model, ("direction", "rise")})): drift["rises"],
        ("river_pa_drifts_total", frozenset({model, ("direction", "fall")})): drift["falls"]}
    assert learned[("river_pa_labels_since_drift", frozenset({model}))] == drift["labels_since"]
    assert not {k for k in staleness if k[0].startswith(("river_pa_drifts",
                                                          "river_pa_labels_since_drift"))}
    # a challenger learned every label the served model learned, scored on the same stream
    c01 = report["challengers"]["c01"]
    assert (c01["model"], c01["learned"], c01["labelled"], c01["errors"]) == (
        "PAClassifier", N_EVENTS, N_EVENTS, 0)
    assert learned[("river_pa_metric", frozenset({("metric", "Accuracy"), ("model", "c01")}))] \
        == c01["metrics"]["Accuracy"] != accuracy
    assert learned[("river_pa_challenger_learned_total", frozenset({("model", "c01")}))] == N_EVENTS
    assert kafka.stop(predictor) == 0
    p_report = kafka.last_report("p1.jsonl")
    assert p_report["learned_since_model"] == N_EVENTS - model_learned
    assert kafka.stop(learner) == 0


def test_livez_is_503_while_the_loop_is_stuck(kafka):
    events, preds = kafka.topics("events", "preds")
    proc = kafka.serve_stream(events, None, preds, "--metrics-port", "0",
                              "--liveness-seconds", "1", "--model",
                              "tests.kafka.sleepy:SleepyPAClassifier")
    port = port_of(kafka, "d0", proc)
    producer = kafka.producer()
    producer.send(events, json.dumps({"id": "a", "x": {"f": 1.0}, "y": True}).encode())
    producer.flush()
    wait_until(lambda: scrape(port).get(("river_pa_learned_total", frozenset())) == 1, [proc],
               kafka, "the first event was never learned")
    assert get(port, "/livez") == (200, "ok\n") and get(port, "/readyz") == (200, "ok\n")
    # stuck for 8 s: /livez says so after 1, and the stack is dumped while it is stuck
    producer.send(events, json.dumps({"id": "b", "x": {"f": 1.0, "sleep": 8}, "y": True}).encode())
    producer.flush()
    status, body = wait_until(lambda: (r := get(port, "/livez"))[0] == 503 and r, [proc], kafka,
                              "/livez never said the loop was stuck")
    assert body.startswith("no step of the loop for ") and body.endswith("(limit 1 s)\n")
    proc.send_signal(signal.SIGUSR1)  # every thread's stack in the log, the daemon goes on
    kafka.wait_for_log("d0", "in predict_proba_one", proc)
    assert re.search(r'File ".*tests/kafka/sleepy\.py", line \d+ in predict_proba_one', kafka.log())
    wait_until(lambda: get(port, "/livez")[0] == 200, [proc], kafka, "/livez never recovered")
    assert scrape(port)[("river_pa_learned_total", frozenset())] == 2
    assert kafka.stop(proc) == 0


def test_a_loop_stuck_past_stall_exit_seconds_exits_70_with_its_stack(kafka):
    events, preds = kafka.topics("events", "preds")
    # the limit must be above a batch plus the Kafka calls' timeouts: shortened to 1 + 5 s
    quick = ("--batch-seconds", "1", "--kafka", '{"request_timeout_ms": 5000, "max_block_ms": 5000}')
    proc = kafka.serve_stream(events, None, preds, *quick, "--stall-exit-seconds", "7",
                              "--model", "tests.kafka.sleepy:SleepyPAClassifier")
    producer = kafka.producer()
    producer.send(events, json.dumps({"id": "a", "x": {"f": 1.0, "sleep": 600}, "y": True}).encode())
    producer.flush()
    assert proc.wait(timeout=120) == 70  # the watchdog's status, long before the sleep ends
    log = kafka.log()
    assert re.search(r"CRITICAL river_pa\.serve: no step of the loop for \d+\.\d s "
                     r"\(--stall-exit-seconds 7\)", log)
    assert re.search(r'File ".*tests/kafka/sleepy\.py", line \d+ in predict_proba_one', log)


def test_a_metrics_port_in_use_is_one_line_and_status_1(tmp_path):
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "river_pa.connectors.cli", "--metrics-port",
                               str(port), "--bootstrap-servers", "127.0.0.1:9"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"river-pa serve: cannot serve --metrics-port {port} (Address already in use)"]
