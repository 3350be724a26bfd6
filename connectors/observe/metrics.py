"""Prometheus metrics and health endpoints of `river-pa serve --metrics-port N`.

`/metrics` is prometheus-client's exposition of a registry of our own, whose one collector reads
the daemon's figures when scraped (the loop pays nothing per event); `/livez` answers 200 while
the loop makes steps and 503 once it has made none for `--liveness-seconds`; `/readyz` answers
200 when the member has partitions (and, for a predictor, a model), else 503.

The server is the standard library's WSGI server in a daemon thread (what prometheus-client's
own `start_wsgi_server` runs): prometheus-client serves only `/metrics`, and the probes need two
more paths on the same port.

"""

from __future__ import annotations

import faulthandler
import logging
import os
import sys
import threading
import time

__all__ = ["Endpoints", "Health", "Watchdog", "collect"]

log = logging.getLogger("river_pa.serve")

# figures of `Daemon.figures()`: name -> (Prometheus name, help); counters get `_total`
COUNTERS = {
    "events": ("river_pa_events", "events decoded and predicted"),
    "labelled": ("river_pa_labelled", "labelled predictions scored by the progressive metric"),
    "learned": ("river_pa_learned", "events learned"),
    "expired": ("river_pa_expired", "events evicted from the pending store unlabelled"),
    "orphan_labels": ("river_pa_orphan_labels", "labels whose event never came"),
    "late_records": ("river_pa_late_records",
                     "records merged after a later one (written late; see the docs)"),
    "invalid_snapshots": ("river_pa_invalid_snapshots",
                          "records of the state and model topics not valid, skipped"),
}
GAUGES = {
    "pending": ("river_pa_pending_events", "events waiting for their label"),
    "pending_bytes": ("river_pa_pending_bytes", "memory of the events waiting (bytes)"),
    "early_labels": ("river_pa_early_labels", "labels waiting for their event"),
    "model_version": ("river_pa_model_version", "version of the model published or in use"),
    "model_learned": ("river_pa_model_learned", "events learned by that model"),
    "model_age_s": ("river_pa_model_age_seconds", "seconds since the learner published it"),
    "learned_since_model": ("river_pa_learned_since_model",
                            "events the learner has learned since that model (staleness)"),
    "stale_s": ("river_pa_model_stale_seconds",
                "seconds of learning since that model (0 while the learner learns nothing)"),
}


def collect(daemon) -> list:
    """The metric families of `daemon` now (its `figures()`, lag and role)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily

    figures = daemon.figures()
    info = InfoMetricFamily("river_pa_daemon", "the daemon's role, model and client id")
    info.add_metric([], {"role": daemon.cfg.role, "model": daemon.slot.name,
                         "client_id": daemon.cfg.client_id})
    families = [info]
    for key, (name, text) in COUNTERS.items():
        families.append(CounterMetricFamily(name, text, value=figures[key]))
    dead = CounterMetricFamily("river_pa_dead_letters", "records sent to the dead-letter topic",
                               labels=["reason"])
    for reason, count in sorted(figures["dead_letter_reasons"].items()):
        dead.add_metric([reason], count)
    families.append(dead)
    for key, (name, text) in GAUGES.items():
        if figures.get(key) is not None:
            families.append(GaugeMetricFamily(name, text, value=figures[key]))
    # the served model's figures, then each challenger's (connectors/models/challengers.py)
    models = [(daemon.slot.name, figures), *figures.get("challengers", {}).items()]
    for key, name in (("metrics", "river_pa_metric"), ("rolling", "river_pa_rolling_metric")):
        if not figures["labelled"]:  # a predictor, a standby: no metric, not a metric of 0
            continue
        family = GaugeMetricFamily(name, f"progressive validation ({key})",
                                   labels=["metric", "model"])
        for model, of_model in models:
            for metric, value in of_model[key].items():
                if value is not None:
                    family.add_metric([metric, model], value)
        families.append(family)
    if figures["labelled"]:  # a standby's are those of nothing (and a predictor has none)
        families += _drift([(model, of_model["drift"]) for model, of_model in models
                            if of_model["drift"] is not None])
        families += _challengers(figures.get("challengers", {}))
    lag = GaugeMetricFamily("river_pa_consumer_lag", "records of the partition not processed yet",
                            labels=["topic", "partition"])
    for (topic, partition), value in sorted(daemon.health.lag.items()):
        lag.add_metric([topic, str(partition)], value)
    families.append(lag)
    return families


def _drift(watches: list[tuple[str, dict]]) -> list:
    """The drift watch's series (observe/drift.py) of each (model, figures) in `watches`,
    labelled by model; none where drift is not watched (a predictor, --drift-detector none)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    if not watches:
        return []
    found = CounterMetricFamily("river_pa_drifts", "changes of the model's errors found by the "
                                f"drift watch ({watches[0][1]['detector']}): rise is a drift",
                                labels=["model", "direction"])
    since = GaugeMetricFamily("river_pa_labels_since_drift", "labelled predictions scored since "
                              "the drift watch's last change (or since it started)",
                              labels=["model"])
    for model, figures in watches:
        found.add_metric([model, "rise"], figures["rises"])
        found.add_metric([model, "fall"], figures["falls"])
        since.add_metric([model], figures["labels_since"])
    return [found, since]


def _challengers(challengers: dict) -> list:
    """The events each challenger learned, the records it raised on and its test against the
    served model (connectors/models/challengers.py's `Duel`), labelled by name."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    if not challengers:
        return []
    families = []
    for key, text in (("learned", "events a challenger learned"),
                      ("errors", "records a challenger raised on (predicting or learning)")):
        family = CounterMetricFamily(f"river_pa_challenger_{key}", text, labels=["model"])
        for name, figures in challengers.items():
            family.add_metric([name], figures[key])
        families.append(family)
    for key, name, text in (
            ("p_value", "river_pa_challenger_p_value", "p of the exact binomial test that the "
             "challenger is no better than the served model (rolling window)"),
            ("beats", "river_pa_challenger_beats", "1 when the test says the challenger beats "
             "the served model at --challenger-alpha")):
        family = GaugeMetricFamily(name, text, labels=["model"])
        for model, figures in challengers.items():
            family.add_metric([model], float(figures["versus_served"][key]))
        families.append(family)
    return families


class _Collector:
    def __init__(self, endpoints: "Endpoints"):
        self.endpoints = endpoints

    def collect(self):
        daemon = self.endpoints.daemon
        return collect(daemon) if daemon is not None else []


class Endpoints:
    """The HTTP server of `/metrics`, `/livez` and `/readyz` on `port` (0: any free port),
    bound here (OSError when the port is in use) and served from a daemon thread once
    `start` is called; `daemon` is set once the daemon exists (503 and no figures before)."""

    def __init__(self, port: int, host: str = ""):
        from wsgiref.simple_server import WSGIRequestHandler, make_server  # 18 ms: lazily

        from prometheus_client import CollectorRegistry, make_wsgi_app
        from prometheus_client.exposition import ThreadingWSGIServer

        class QuietHandler(WSGIRequestHandler):
            def log_message(self, format, *args):  # a scrape every few seconds is not news
                log.debug("metrics endpoint: " + format, *args)


        self.daemon = None
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(self))
        self.metrics_app = make_wsgi_app(registry)
        self.server = make_server(host, port, self.app, ThreadingWSGIServer,
                                  handler_class=QuietHandler)
        self.port = self.server.server_port

    def start(self) -> None:
        """Serve from a daemon thread."""
        threading.Thread(target=self.server.serve_forever, name="river-pa-metrics",
                         daemon=True).start()
        log.info("metrics and health endpoints on port %d (/metrics, /livez, /readyz)", self.port)

    def close(self) -> None:
        """Stop serving and release the port."""
        self.server.shutdown()
        self.server.server_close()

    def app(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path in ("/livez", "/readyz"):
            ok, why = self.probe(path)
            start_response("200 OK" if ok else "503 Service Unavailable",
                           [("Content-Type", "text/plain; charset=utf-8")])
            return [why.encode() + b"\n"]
        return self.metrics_app(environ, start_response)

    def probe(self, path: str) -> tuple[bool, str]:
        """(healthy, why) for "/livez" or "/readyz". Before the loop's first step (restoring
        state, waiting for a first model) the daemon is live but not ready."""
        health = self.daemon.health if self.daemon is not None else None
        if health is None or health.beat is None:
            return path == "/livez", "starting"
        if path == "/readyz":
            return health.ready, health.why
        idle, limit = time.monotonic() - health.beat, self.daemon.cfg.liveness_seconds
        if idle > limit:
            return False, f"no step of the loop for {idle:.0f} s (limit {limit:g} s)"
        return True, "ok"


class Health:
    """What the loop tells the endpoints, written by the main thread at each step: when it
    last stepped (`beat`), whether it is ready (and `why` not), the lag of each partition."""

    def __init__(self):
        self.beat: float | None = None
        self.ready = False
        self.why = "starting"
        self.lag: dict[tuple[str, int], int] = {}
        self.lag_at = 0.0


STALLED = 70  # EX_SOFTWARE: the status of a process the watchdog ended


class Watchdog:
    """Ends the process when the loop has made no step for `limit_s` seconds: one line, every
    thread's stack on stderr, then exit status `STALLED` (70) without cleaning up, so whatever
    supervises the daemon (Kubernetes, systemd, Docker's restart policy) starts it again; its
    state is in Kafka. A Kubernetes liveness probe on /livez does the same from outside, this
    needs no probe.

    Why: the fault soak found kafka-python 3.0.12 waiting for ever, without a timeout, in
    `NetworkSelector.run` (dpkp/kafka-python#3121, bounded on its master by #3123/#3124, in no
    release yet), and no call of ours can bound that wait. The watchdog is a thread of its own
    (the standard library's `faulthandler.dump_traceback_later` would do the same but cannot
    say why in the log). `daemon` is set like `Endpoints.daemon`: its `health.beat` is read,
    and a beat of None (starting, restoring the state) is not counted.

    """

    def __init__(self, limit_s: float):
        self.limit_s, self.daemon = limit_s, None

    def start(self) -> None:
        """Watch from a daemon thread (nothing when `limit_s` is 0)."""
        if self.limit_s:
            threading.Thread(target=self._watch, name="river-pa-watchdog", daemon=True).start()

    def _watch(self) -> None:
        every = min(5.0, self.limit_s / 4)
        ticked = resumed = time.monotonic()
        while True:
            time.sleep(every)
            now = time.monotonic()
            if now - ticked > 2 * every:  # this thread did not run either: the process was
                resumed = now             # paused (SIGSTOP, a VM); the loop gets time to step
            ticked = now
            health = self.daemon.health if self.daemon is not None else None
            beat = health.beat if health is not None else None
            idle = now - max(beat, resumed) if beat is not None else 0.0
            if idle > self.limit_s:
                log.critical("no step of the loop for %.1f s (--stall-exit-seconds %g): every "
                             "thread's stack follows, then exit %d for a restart",
                             idle, self.limit_s, STALLED)
                if sys.__stderr__ is not None:
                    faulthandler.dump_traceback(file=sys.__stderr__, all_threads=True)
                os._exit(STALLED)
