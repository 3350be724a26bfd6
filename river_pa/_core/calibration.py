"""Online calibration of a classifier's margins: temperature scaling fitted by Newton steps.

A hinge-loss learner's margin m is not a log-odds: the sigmoid of it is a fixed link that no
update fits. `Temperature` fits P(True | m) = sigmoid(a m) for a binary learner and
P(r | s) = softmax(a s)_r for a learner scoring K labels: a one-dimensional logistic
regression on the margin, without intercept (Platt 1999 with its offset fixed at 0; in the
multiclass form the temperature scaling of Guo et al. 2017, On Calibration of Modern Neural
Networks, ICML). With no offset, P(True) > 1/2 exactly when m > 0 and the most probable label
is the highest-scoring one: calibration never changes a prediction, so accuracy is the same
whichever of `predict_one` or `predict_proba_one` a metric reads. (An offset b, tried on
Phishing, a9a, elec2 and mushrooms, lowered LogLoss further on a9a only, 0.416 vs 0.431, and
changed predictions on all four.)

a is fitted online on the progressive margins: each labelled event's margin is taken before
the learner learns from it, so the calibrator never sees a margin fitted to its own label.
a starts at 1, the uncalibrated link, and follows Newton steps on the log loss,
a <- max(a - g / H, A_MIN) with H the running sum of the events' second derivatives, started
at that of one pseudo-event at a = 1 of the first event's scale (m^2 / 4: a prior that keeps
the first steps short) and a kept > 0 (a <= 0 would reverse or erase the ranking). An event's
curvature p (1 - p) m^2 vanishes when its margin saturates the sigmoid; it is floored at
`CURVATURE_FLOOR` m^2, so a saturated, wrong margin (a kernel learner's reach 1e7) moves the
event's log-odds by at most 1 / CURVATURE_FLOOR instead of by its margin.

This is written here rather than borrowed from River's `linear_model.LogisticRegression`: an
SGD step of fixed learning rate is not invariant to the margin's scale (kernel margins reach
1e7, standardised linear ones 1-10) and takes thousands of events to move a, while the Newton
step is invariant to a rescaling of m, needs no learning rate and costs a few float
operations per event.

"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["CALIBRATIONS", "Temperature", "learn_rows", "make_calibrator"]

CALIBRATIONS = (None, "temperature")
CURVATURE_FLOOR = 0.05  # of the largest curvature of the log loss, 1/4
A_MIN = 1e-6


def _sigmoid(z: float) -> float:
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class Temperature:
    """Online temperature scaling of a binary margin or of the scores of several labels.

    State: `a` (the inverse temperature) and `h` (the accumulated curvature), plain floats
    (numpy scalars would cost more than the rest of a linear learner's event).

    >>> cal = Temperature()
    >>> cal.proba(2.0) == _sigmoid(2.0)   # before any label: the uncalibrated sigmoid
    True
    >>> for _ in range(300):            # 3 events of 4 at m = 2 and at m = -2 are right
    ...     for m, y in [(2.0, True), (2.0, True), (2.0, True), (2.0, False)]:
    ...         cal.learn(m, y); cal.learn(-m, not y)
    >>> round(cal.proba(2.0), 3)        # sigmoid(2 a) = 3/4: a = ln(3) / 2
    0.75

    """

    def __init__(self):
        self.a = 1.0
        self.h = 0.0

    # -- binary: P(True) = sigmoid(a m) --------------------------------------------------------

    def proba(self, m: float) -> float:
        """P(True) for the margin m."""
        return _sigmoid(self.a * m)

    def learn(self, m: float, y: bool) -> None:
        """One Newton step on the log loss of (m, y)."""
        scale = m * m
        if not 0.0 < scale < math.inf:  # no information (m = 0 or m^2 underflows), or overflow
            return
        p = self.proba(m)
        self._newton((p - y) * m, max(p * (1.0 - p), CURVATURE_FLOOR) * scale, scale)

    # -- several labels: P(r) = softmax(a s)_r ------------------------------------------------

    def softmax(self, s: np.ndarray) -> np.ndarray:
        """Probabilities of the labels of scores `s` (float64, n)."""
        z = self.a * s
        e = np.exp(z - z.max())
        return e / e.sum()

    def learn_scores(self, s: np.ndarray, row: int) -> None:
        """One Newton step on the cross-entropy of label `row` under the scores `s`."""
        if len(s) < 2 or not np.isfinite(s).all():
            return
        scale = float(s.max() - s.min()) ** 2
        if not 0.0 < scale < math.inf:
            return
        p = self.softmax(s)
        mean = float(p @ s)
        spread = float(p @ (s - mean) ** 2)  # d2/da2, floored at a share of the range^2
        self._newton(mean - float(s[row]), max(spread, CURVATURE_FLOOR * scale), scale)

    def _newton(self, g: float, h: float, scale: float) -> None:
        """a <- a - g / H after H += h; H starts at scale / 4 (see the module docstring)."""
        self.h += h + (0.25 * scale if self.h == 0.0 else 0.0)
        self.a = max(self.a - g / self.h, A_MIN)

    def __repr__(self) -> str:
        return f"Temperature(a={self.a:.4g})"


def make_calibrator(calibration) -> Temperature | None:
    """A fresh calibrator for the `calibration` parameter (None: none); ValueError otherwise."""
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be None or 'temperature', got {calibration!r}")
    return Temperature() if calibration else None


def _rows(X, columns):
    """The rows of a DataFrame, a 2-D numpy array or a scipy.sparse matrix as feature dicts (an
    array's columns keyed by `columns`, default their numbers; a sparse row holds its stored
    entries only, as the compiled batch paths read it)."""
    if hasattr(X, "to_dict"):
        return X.to_dict("records")
    keys = list(range(X.shape[1])) if columns is None else list(columns)
    if hasattr(X, "tocsr"):
        X = X.tocsr()
        return [
            {keys[j]: v for j, v in zip(X.indices[lo:hi].tolist(), X.data[lo:hi].tolist())}
            for lo, hi in zip(X.indptr[:-1].tolist(), X.indptr[1:].tolist())
        ]
    return [dict(zip(keys, row)) for row in np.asarray(X, dtype=np.float64).tolist()]


def learn_rows(model, X, y, w=None, columns=None) -> None:
    """`learn_many` of a calibrated learner: a `learn_one` loop over the rows of X (the
    calibrator needs each row's margin before the learner learns from that row, which the
    compiled batch loops do not return). A rejected row stops the loop: earlier rows stay
    learned."""
    weights = [1.0] * X.shape[0] if w is None else list(w)
    for x, label, weight in zip(_rows(X, columns), list(y), weights):
        model.learn_one(x, label, weight)
