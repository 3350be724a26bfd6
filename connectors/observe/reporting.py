"""Progressive-validation bookkeeping: metrics, label delays, counts and throughput.

`Stats` is part of the checkpoint (so a restarted daemon continues the same curves);
`Reporter` decides when to publish a snapshot and writes it to the JSONL file and the metrics
topic.

"""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter

from river import metrics, stats, utils

from river_pa import report
from river_pa.connectors.observe.drift import DriftWatch

__all__ = ["Reporter", "Stats", "check_report_path", "serve_metrics"]

log = logging.getLogger("river_pa.serve")


def serve_metrics(names: list[str], model) -> list:
    """River metrics by class name (`river_pa.report.make_metrics`); Accuracy for classifiers
    and MAE for regressors when `names` is empty. ValueError for an unknown name."""
    from river import base

    names = report.metric_names(names) or ["MAE" if isinstance(model, base.Regressor) else "Accuracy"]
    return report.make_metrics(names, model)


class _Metrics(metrics.base.Metrics):
    """River's `Metrics`, iterating its list directly. The inherited `Sequence.__iter__` calls
    `__getitem__` per item, and `update` and `revert` each ask `requires_labels` (one more pass)
    first: with the rolling copy, six Python-level passes per labelled event, a fifth of the
    learner's time in its profile. `requires_labels` is computed once (the list never changes;
    regression metrics have no such attribute, and then neither has this)."""

    def __iter__(self):
        return iter(self.data)

    @functools.cached_property
    def requires_labels(self) -> bool:
        return all(m.requires_labels for m in self.data)


class Stats:
    """Cumulative and rolling metrics, label-delay statistics, event counts and the drift
    watch of the prediction errors (`drift`, observe/drift.py; None: not watched)."""

    drift: DriftWatch | None = None  # a class default: stats pickled before drift was watched

    def __init__(self, metric_list: list, window: int, detector=None):
        self.metric = _Metrics(metric_list)
        self.rolling = utils.Rolling(_Metrics, window_size=window,
                                     metrics=[m.clone() for m in metric_list])
        self.delay_mean = stats.Mean()
        self.delay_p50 = stats.Quantile(0.5)
        self.delay_p99 = stats.Quantile(0.99)
        self.delay_max = stats.Max()
        self.counts: Counter = Counter()
        self.dead_letters: Counter = Counter()
        self.drift = DriftWatch(detector) if detector is not None else None

    @functools.cached_property
    def uses_proba(self) -> bool:
        """True when the metric scores probabilities rather than predicted labels."""
        return not getattr(self.metric, "requires_labels", True)  # regression metrics lack it

    def use_metrics(self, metric_list: list, window: int) -> bool:
        """Score with `metric_list` in a rolling window of `window` labels (a restart's
        settings, for restored stats). False when they are the ones in use (kept); otherwise
        the metrics restart from zero (the counts and delays are kept) and True."""
        if ([type(m) for m in self.metric] == [type(m) for m in metric_list]
                and self.rolling.window_size == window):
            return False
        self.metric = _Metrics(metric_list)
        self.rolling = utils.Rolling(_Metrics, window_size=window,
                                     metrics=[m.clone() for m in metric_list])
        self.__dict__.pop("uses_proba", None)  # a cached_property, pickled with the stats
        return True

    def use_detector(self, detector) -> bool:
        """Watch for drift with `detector` (a restart's settings, for restored stats; None: not
        at all). False when the watch already uses one like it (kept, with what it has seen);
        otherwise it starts afresh with `detector` and True."""
        if self.drift.watches_with(detector) if self.drift is not None else detector is None:
            return False
        self.drift = DriftWatch(detector) if detector is not None else None
        return True

    def swap_scores(self, other: "Stats") -> None:
        """Exchange the metrics, rolling metrics and drift watch with `other` (a promoted
        challenger's: its figures continue as the served model's; the counts of the stream
        stay with the daemon's stats)."""
        for name in ("metric", "rolling", "drift"):
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, theirs)
            setattr(other, name, mine)
        for stats in (self, other):
            stats.__dict__.pop("uses_proba", None)

    def score(self, y_true, y_pred, delay_ms: int | None) -> str | None:
        """Update the metrics with one labelled prediction; `delay_ms` (event to label, in
        record time) feeds the delay statistics, None for a label carried by its event. A
        prediction of the other kind (probabilities for a metric of labels, or the reverse:
        made before a restart changed the metric) is counted but not scored. "rise" (a drift)
        or "fall" when the drift watch finds the errors changed with this prediction."""
        self.counts["labelled"] += 1
        if y_pred is None or y_pred == {} or isinstance(y_pred, dict) != self.uses_proba:
            return None
        self.metric.update(y_true, y_pred)
        self.rolling.update(y_true, y_pred)
        if delay_ms is not None:
            for stat in (self.delay_mean, self.delay_p50, self.delay_p99, self.delay_max):
                stat.update(delay_ms)
        return self.drift.update(y_true, y_pred) if self.drift is not None else None

    def scores(self) -> dict:
        """The figures of the model's scoring: cumulative and rolling metrics, drift watch."""
        return {"metrics": {type(m).__name__: m.get() for m in self.metric},
                "rolling": {type(m).__name__: m.get() for m in self.rolling.obj},
                "drift": self.drift.snapshot() if self.drift is not None else None}

    def in_words(self, rolling: bool = False) -> str:
        """The metrics (the rolling ones with `rolling`) for a log line: "Accuracy 0.8125"."""
        return ", ".join(f"{type(m).__name__} {m.get():.4g}"
                         for m in (self.rolling.obj if rolling else self.metric))

    def dead_letter(self, reason: str) -> None:
        """Count one dead-lettered record."""
        self.dead_letters[reason] += 1

    def snapshot(self, pending: int) -> dict:
        """The figures as a JSON-able dict (a snapshot of `river_pa.report`'s format)."""
        scores = self.scores()
        return {
            "metrics": scores["metrics"],
            "rolling": scores["rolling"],
            "window": self.rolling.window_size,
            "events": self.counts["events"],
            "labelled": self.counts["labelled"],
            "learned": self.counts["learned"],
            "pending": pending,
            "expired": self.counts["expired"],
            "orphan_labels": self.counts["orphan_labels"],
            "late_records": self.counts["late_records"],
            "dead_lettered": sum(self.dead_letters.values()),
            "dead_letter_reasons": dict(self.dead_letters),
            "truncated_dead_letters": self.counts["truncated_dead_letters"],
            "drift": scores["drift"],
            "label_delay_ms": {
                "mean": self.delay_mean.get() if self.delay_mean.n else None,
                "p50": self.delay_p50.get(),
                "p99": self.delay_p99.get(),
                "max": self.delay_max.get() if self.delay_mean.n else None,
            },
        }


def check_report_path(path: str | None) -> None:
    """Raise OSError unless the JSONL report can be appended to (checked at start)."""
    if path:
        report.append(path, [])


class Reporter:
    """Publishes `Stats` snapshots every N events or T seconds to a JSONL file and a topic."""

    def __init__(self, every_events: int, every_seconds: float, path: str | None, send):
        self.every_events = every_events
        self.every_seconds = every_seconds
        self.path = path
        self.send = send
        self.started = time.monotonic()
        self.last_time = self.started
        self.last_events = None

    def due(self, events: int) -> bool:
        """True when a report is due after `events` events in total."""
        if self.last_events is None:
            self.last_events = events
        return (events - self.last_events >= self.every_events
                or time.monotonic() - self.last_time >= self.every_seconds)

    def publish(self, snapshot: dict, events_since_start: int) -> dict:
        """Add throughput and wall time to a snapshot, append it to the file, send it."""
        now = time.monotonic()
        interval = max(now - self.last_time, 1e-9)
        record = {
            **snapshot,
            "time_ms": int(time.time() * 1000),
            "throughput_eps": (snapshot["events"] - (self.last_events or 0)) / interval,
            "uptime_s": now - self.started,
            "events_this_run": events_since_start,
        }
        if self.path:
            try:
                report.append(self.path, [record])
            except OSError as exc:  # a full disk mid-run: the report is not worth the daemon
                log.warning("could not append to the report %s (%s)", self.path, exc.strerror)
        self.send(record)
        self.last_time, self.last_events = now, snapshot["events"]
        return record
