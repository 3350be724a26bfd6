"""Drift watched: the errors of the served model's progressive predictions go through one of
River's drift detectors (`river.drift`, ADWIN by default), counted in the report and in
`/metrics`, logged at each detection, and optionally answered by resetting the model
(`--on-drift reset`) or, for the served model, by starting a fresh copy of it as a challenger
(`--on-drift challenger`, models/fresh.py); `--on-drift log,c05=reset` gives model c05 its own
reaction.

The error of one labelled prediction is 0 or 1 for a classifier (the label it predicted, the
most probable one when the metric scores probabilities, against the true label), the fraction of
labels it got wrong for a multilabel classifier, and the absolute error for a regressor.

A drift is a rise of the errors. ADWIN finds any change of their mean, and most changes it
finds in a stream's first thousand labels are falls: the model learning. The watch tells them
apart by ADWIN's estimate of the mean before and after its cut, counts falls on their own and
answers rises only. PageHinkley watches rises only (its mode "up") unless `--drift-params` say
otherwise; then each of its detections counts as a rise.

The watch is part of the daemon's state (in `Stats`, so in every checkpoint and snapshot of
the state topic): a restored learner finds the drifts an uninterrupted one finds, at the same
labels.

"""

from __future__ import annotations

import math
import re

__all__ = ["DETECTORS", "ON_DRIFT", "DriftWatch", "make_detector", "parse_on_drift",
           "prediction_error", "reactions"]

# River's detectors of a stream of real values (KSWIN is left out: a Kolmogorov-Smirnov test
# per update, 228 us per label measured against ADWIN's 0.42, the learner's whole budget)
DETECTORS = ("ADWIN", "PageHinkley")
ON_DRIFT = ("log", "reset", "challenger")  # what a detection does besides its log line and count
_MODEL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # a challenger's (models/challengers.py)


def parse_on_drift(text: str) -> tuple[str, dict[str, str]]:
    """(the reaction of every model, {model name: its own reaction}) of an `--on-drift` value:
    comma-separated items, each a reaction of `ON_DRIFT` (at most one: the default, "log"
    without one) or NAME=REACTION for the model named NAME (the served model's name, or a
    challenger's). ValueError naming the item otherwise.

    >>> parse_on_drift("reset")
    ('reset', {})
    >>> parse_on_drift("challenger, c05=reset")
    ('challenger', {'c05': 'reset'})
    >>> parse_on_drift("c05=restart")
    Traceback (most recent call last):
    ...
    ValueError: on_drift 'c05=restart': 'restart' is not log, reset or challenger

    """
    default, own = None, {}
    for item in (part.strip() for part in str(text).split(",")):
        name, eq, reaction = item.rpartition("=")
        if reaction not in ON_DRIFT:
            raise ValueError(f"on_drift {text!r:.80}: {reaction!r:.40} is not "
                             f"{', '.join(ON_DRIFT[:-1])} or {ON_DRIFT[-1]}")
        if eq and not _MODEL_NAME.fullmatch(name):
            raise ValueError(f"on_drift {text!r:.80}: {name!r:.70} is not a model name (1-64 "
                             "of a-z A-Z 0-9 _ . -)")
        if (not eq and default is not None) or name in own:
            raise ValueError(f"on_drift {text!r:.80}: a reaction of "
                             f"{name or 'every model'} given twice")
        if eq:
            own[name] = reaction
        else:
            default = reaction
    return default or "log", own


def reactions(text: str) -> set[str]:
    """Every reaction an `--on-drift` value gives some model; ValueError as `parse_on_drift`.

    >>> sorted(reactions("log,c05=challenger"))
    ['challenger', 'log']

    """
    default, own = parse_on_drift(text)
    return {default, *own.values()}


def make_detector(name: str, params: dict):
    """A new detector of `river.drift` named `name` (one of `DETECTORS`) with keyword arguments
    `params` (PageHinkley's mode is "up" unless they say), or None for "none". ValueError
    naming the setting and the value otherwise.

    >>> make_detector("ADWIN", {"delta": 0.001})
    ADWIN (
      delta=0.001
      clock=32
      max_buckets=5
      min_window_length=5
      grace_period=10
    )
    >>> make_detector("none", {}) is None
    True
    >>> make_detector("ADWIN", {"delta": 2})
    Traceback (most recent call last):
    ...
    ValueError: drift_params {'delta': 2}: delta must be a probability: > 0 and < 1, got 2

    """
    if name == "none":
        if params:
            raise ValueError(f"drift_params {params!r:.80} are given but drift_detector is none")
        return None
    if name not in DETECTORS:
        raise ValueError(f"drift_detector must be one of {', '.join(DETECTORS)} or none, got "
                         f"{name!r:.60}")
    from river import drift

    if name == "PageHinkley":
        params = {"mode": "up", **params}
    for key, value in params.items():
        if why := _out_of_range(name, key, value):
            raise ValueError(f"drift_params {params!r:.80}: {key} {why}, got {value!r:.40}")
    try:
        detector = getattr(drift, name)(**params)
        detector.update(0.0)  # a value of the wrong type fails at the first update, not here
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise ValueError(f"drift_params {params!r:.80} are not {name}'s: "
                         f"{type(exc).__name__}: {exc}") from None
    return detector.clone()


# what River's detectors take without complaint but cannot use (a delta of 2 or -1 detected
# nothing; a negative threshold reset the model 541 times on a stream with one drift)
_BOUNDS = {
    ("ADWIN", "delta"): (0, 1, "a probability: > 0 and < 1"),
    ("PageHinkley", "delta"): (0, math.inf, ">= 0"),
    ("PageHinkley", "threshold"): (0, math.inf, "> 0"),
    ("PageHinkley", "alpha"): (0, 1, "a forgetting factor: > 0 and <= 1"),
}
_COUNTS = {"clock", "max_buckets", "min_window_length", "grace_period", "min_instances"}


def _out_of_range(name: str, key: str, value) -> str | None:
    """Why `value` cannot be parameter `key` of detector `name`, or None (unknown parameters
    are River's to refuse)."""
    if key == "mode":
        return None if value in ("up", "down", "both") else "must be up, down or both"
    if key not in _COUNTS and (name, key) not in _BOUNDS:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "must be a finite number"
    if key in _COUNTS:
        return None if isinstance(value, int) and value >= 1 else "must be a whole number >= 1"
    low, high, what = _BOUNDS[name, key]
    inside = (value >= low if key == "delta" and name == "PageHinkley" else value > low) and (
        value <= high if key == "alpha" else value < high)
    return None if inside else f"must be {what}"


def prediction_error(y_true, y_pred) -> float | None:
    """The error of prediction `y_pred` (a label, a class -> probability dict, a multilabel
    label -> bool dict or a number) of `y_true`; None when there is none to take (an empty
    prediction).

    >>> prediction_error(True, False), prediction_error("a", {"a": 0.7, "b": 0.3})
    (1.0, 0.0)
    >>> prediction_error({"x": True, "y": False}, {"x": True, "y": True})
    0.5
    >>> prediction_error(2.5, 1.0)
    1.5

    """
    if isinstance(y_true, dict):  # multilabel: the fraction of labels predicted wrong
        if not y_true:
            return None
        return sum(bool(y_pred.get(k)) != bool(v) for k, v in y_true.items()) / len(y_true)
    if isinstance(y_pred, dict):  # class probabilities: their most probable class
        if not y_pred:
            return None
        y_pred = max(y_pred, key=y_pred.get)
    if isinstance(y_true, (bool, str)) or isinstance(y_pred, (bool, str)):
        return float(y_pred != y_true)
    try:
        return abs(float(y_true) - float(y_pred))
    except (TypeError, ValueError):  # labels of another kind (a tuple, None)
        return float(y_pred != y_true)


class DriftWatch:
    """A drift `detector` fed with the errors of the labelled predictions; `rises` counts the
    drifts (the errors rose), `falls` the changes where they fell, `labels_since` the errors
    taken since the last of either (or since the watch started).

    >>> from river import drift
    >>> watch = DriftWatch(drift.ADWIN())
    >>> [watch.update(True, False) for _ in range(200)].count(None)  # a model learning nothing
    200
    >>> changes = [watch.update(True, True) for _ in range(200)]  # ... then everything
    >>> changes.index("fall"), watch.falls, watch.rises
    (23, 1, 0)
    >>> changes = [watch.update(True, i % 2 == 0) for i in range(400)]  # half wrong: a rise
    >>> changes.index("rise"), watch.rises, watch.labels_since
    (47, 1, 352)

    """

    def __init__(self, detector):
        self.detector = detector
        self.rises = self.falls = self.labels_since = 0

    def update(self, y_true, y_pred) -> str | None:
        """Feed the error of one labelled prediction: "rise" when the detector finds a drift,
        "fall" when it finds the errors fell, else None."""
        error = prediction_error(y_true, y_pred)
        if error is None:
            return None
        before = getattr(self.detector, "estimation", None)  # ADWIN's mean of its window
        self.detector.update(error)
        self.labels_since += 1
        if not self.detector.drift_detected:
            return None
        self.labels_since = 0
        after = getattr(self.detector, "estimation", None)  # ... of the window after its cut
        if before is not None and after is not None and after < before:
            self.falls += 1
            return "fall"
        self.rises += 1
        return "rise"

    def watches_with(self, detector) -> bool:
        """Whether this watch's detector is `detector`'s kind with its parameters (False for
        None)."""
        return (type(self.detector) is type(detector)
                and self.detector._get_params() == detector._get_params())

    def snapshot(self) -> dict:
        """The report's figures."""
        return {"detector": type(self.detector).__name__, "rises": self.rises,
                "falls": self.falls, "labels_since": self.labels_since}
