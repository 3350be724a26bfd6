"""River's binary and regression metrics over arrays of margins, in compiled code.

`MarginMetrics(names, task)` follows River's metric objects to the bit: the same
running statistics updated in the same order with the same floating-point operations
(`stats.Mean`'s incremental mean for LogLoss, MAE, MSE and RMSE; `stats.Var` and a residual
sum for R2; confusion counts for Accuracy, Precision, Recall and F1), and the same formulas
in `get`. The margins are what a river_pa linear model predicts before learning each event:
the classifier's probability is River's `sigmoid(margin)`; its label is `margin > 0` when
River would call `predict_one` (every metric needs labels) and the arg-max of
``{False: 1 - p, True: p}`` otherwise, as `river.metrics.Metrics.update` does.

`RiverMarginMetrics` feeds River's own metric objects from margins instead, for any metric
outside `SUPPORTED`.

"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from river_pa._core import jit

__all__ = ["MarginMetrics", "RiverMarginMetrics", "SUPPORTED"]

# The compiled metrics; for classification, whether River's metric object needs labels
# (River calls predict_one when every metric does, predict_proba_one otherwise).
SUPPORTED = {
    "binary": {"Accuracy": True, "Precision": True, "Recall": True, "F1": True,
               "LogLoss": False},
    "regression": {"MAE": None, "MSE": None, "RMSE": None, "R2": None},
}


# State slots.
_TP, _FP, _FN, _TN, _LOG_N, _LOG_MEAN = range(6)
_ABS_N, _ABS_MEAN, _SQ_N, _SQ_MEAN, _VAR_N, _VAR_MEAN, _VAR_S, _RSS = range(8)


@njit(cache=True)
def _sigmoid(m):
    """river.utils.math.sigmoid."""
    if m < -30:
        return 0.0
    if m > 30:
        return 1.0
    return 1 / (1 + math.exp(-m))


@njit(cache=True)
def _update_binary(state, y, margins, use_proba):
    """Add events (y = +-1, margins) to the binary state (confusion counts, LogLoss mean)."""
    for i in range(margins.shape[0]):
        p = _sigmoid(margins[i])
        pred = p > 1 - p if use_proba else margins[i] > 0.0
        truth = y[i] > 0.0
        if truth:
            state[_TP if pred else _FN] += 1.0
        else:
            state[_FP if pred else _TN] += 1.0
        q = max(min(p, 1 - 1e-15), 1e-15)  # river.metrics.base._clamp_proba
        loss = -math.log(q) if truth else -math.log(1 - q)
        state[_LOG_N] += 1.0
        state[_LOG_MEAN] += (1.0 / state[_LOG_N]) * (loss - state[_LOG_MEAN])


@njit(cache=True)
def _update_regression(state, y, margins):
    """Add events to the regression state (|e| and e^2 means, Var of y, residual sum)."""
    for i in range(margins.shape[0]):
        t = y[i]
        p = margins[i]
        state[_ABS_N] += 1.0
        state[_ABS_MEAN] += (1.0 / state[_ABS_N]) * (abs(t - p) - state[_ABS_MEAN])
        state[_SQ_N] += 1.0
        state[_SQ_MEAN] += (1.0 / state[_SQ_N]) * ((t - p) ** 2 - state[_SQ_MEAN])
        mean_old = state[_VAR_MEAN]
        state[_VAR_N] += 1.0
        state[_VAR_MEAN] += (1.0 / state[_VAR_N]) * (t - state[_VAR_MEAN])
        state[_VAR_S] += 1.0 * (t - mean_old) * (t - state[_VAR_MEAN])
        state[_RSS] += (t - p) * (t - p) * 1.0


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def _binary_values(s: list) -> dict:
    tp, fp, fn, tn = s[_TP], s[_FP], s[_FN], s[_TN]
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    b2 = 1.0**2
    return {
        "Accuracy": _ratio(tp + tn, tp + fp + fn + tn),
        "Precision": precision,
        "Recall": recall,
        "F1": _ratio((1 + b2) * precision * recall, b2 * precision + recall),
        "LogLoss": s[_LOG_MEAN],
    }


def _regression_values(s: list) -> dict:
    n = s[_VAR_N]
    r2 = 0.0
    if n > 1:
        total = (n - 1) * (s[_VAR_S] / (n - 1))
        r2 = 1 - (s[_RSS] / total) if total else 0.0
    mse = s[_SQ_MEAN]
    return {"MAE": s[_ABS_MEAN], "MSE": mse, "RMSE": mse**0.5, "R2": r2}


class MarginMetrics:
    """Running River metrics over margins, updated a batch at a time.

    >>> import numpy as np
    >>> m = MarginMetrics(["Accuracy", "LogLoss"], "binary")
    >>> m.update(np.array([1.0, -1.0, 1.0]), np.array([0.5, 0.2, -1.0]))
    >>> {k: round(v, 6) for k, v in m.values().items()}
    {'Accuracy': 0.333333, 'LogLoss': 0.861826}

    """

    def __init__(self, names: list[str], task: str, use_proba: bool | None = None):
        table = SUPPORTED.get(task, {})
        unknown = [n for n in names if n not in table]
        if unknown:
            raise ValueError(f"no compiled {task} metric {unknown[0]!r}")
        self.names = list(names)
        self.task = task
        if use_proba is None:  # as River decides
            use_proba = task == "binary" and not all(table[n] for n in names)
        self.use_proba = use_proba
        self._state = np.zeros(6 if task == "binary" else 8)

    def update(self, y: np.ndarray, margins: np.ndarray) -> None:
        """Add events: `y` the targets (+1/-1 for binary), `margins` the predictions."""
        if self.task == "binary":
            jit.kernel(_update_binary)(self._state, y, margins, self.use_proba)
        else:
            jit.kernel(_update_regression)(self._state, y, margins)

    def values(self) -> dict:
        """Each metric's current value, by name."""
        compute = _binary_values if self.task == "binary" else _regression_values
        values = compute(self._state.tolist())
        return {name: values[name] for name in self.names}


class RiverMarginMetrics:
    """Any River metrics fed from margins event by event (names outside `SUPPORTED`).

    Same interface as `MarginMetrics`; slower (one Python call per event and metric) but
    exact for every River metric that works with a binary classifier or a regressor.

    """

    def __init__(self, metrics: list, task: str, use_proba: bool | None = None):
        self.metrics = metrics
        self.task = task
        if use_proba is None:  # as River decides
            use_proba = task == "binary" and not all(m.requires_labels for m in metrics)
        self.use_proba = use_proba

    def update(self, y: np.ndarray, margins: np.ndarray) -> None:
        from river.utils.math import sigmoid

        if self.task == "regression":
            for t, p in zip(y.tolist(), margins.tolist()):
                for m in self.metrics:
                    m.update(t, p)
            return
        for t, margin in zip((y > 0).tolist(), margins.tolist()):
            p = sigmoid(margin)
            proba = {False: 1.0 - p, True: p}
            label = p > 1.0 - p if self.use_proba else margin > 0.0
            for m in self.metrics:
                m.update(t, label if m.requires_labels else proba)

    def values(self) -> dict:
        return {type(m).__name__: m.get() for m in self.metrics}
