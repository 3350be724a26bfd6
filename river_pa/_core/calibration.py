"""Online calibration of a classifier's margins: Platt scaling fitted by Newton steps.

A hinge-loss learner's margin m is not a log-odds: the sigmoid of it is a fixed link that no
update fits. `Platt` fits P(True | m) = sigmoid(a m + b) (J. Platt 1999, Probabilistic Outputs
for Support Vector Machines) online, on the progressive margins: each labelled event's margin
is taken before the learner learns from it, so the calibrator never sees a margin the learner
has fitted to its own label. For K labels with scores s, the same regression in its softmax
form fits P(r | s) = softmax(a s)_r (one temperature 1/a; a bias per label would not transfer
between labels that come and go).

The parameters (a, b) start at (1, 0), the uncalibrated link, and follow online Newton
steps on the log loss: H <- H + the loss's Hessian at the event, theta <- theta - H^-1 grad,
H starting at the identity (a ridge that keeps the first steps short). This is written here
rather than borrowed from River's `linear_model.LogisticRegression` because an SGD step of fixed
learning rate is not invariant to the margin's scale (kernel margins reach 1e7, standardised
linear ones 1-10) and takes thousands of events to move a and b; the 2 x 2 Newton step is
invariant to a rescaling of m once H is past its ridge, costs a few float operations per event
and needs no learning rate.

"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["CALIBRATIONS", "Platt", "make_calibrator"]

CALIBRATIONS = (None, "platt")


def _sigmoid(z: float) -> float:
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class Platt:
    """Online Platt scaling of margins (binary) or temperature scaling of scores (multiclass).

    State: a, b and the three entries of the symmetric H (haa, hab, hbb), plain floats (numpy
    scalars would cost more than the rest of a linear learner's event).

    >>> cal = Platt()
    >>> cal.proba(2.0) == _sigmoid(2.0)   # before any label: the uncalibrated sigmoid
    True
    >>> for _ in range(200):            # margins twice as confident as the labels say
    ...     cal.learn(2.0, True); cal.learn(2.0, True); cal.learn(2.0, False)
    >>> round(cal.proba(2.0), 2)        # 2 of 3 events at m = 2 are True
    0.67

    """

    def __init__(self):
        self.a, self.b = 1.0, 0.0
        self.haa, self.hab, self.hbb = 1.0, 0.0, 1.0

    # -- binary: P(True) = sigmoid(a m + b) -------------------------------------------------

    def proba(self, m: float) -> float:
        """P(True) for the margin m."""
        return _sigmoid(self.a * m + self.b)

    def learn(self, m: float, y: bool) -> None:
        """One Newton step on the log loss of (m, y)."""
        if not abs(m) < math.inf:
            return
        p = self.proba(m)
        self._newton((p - y) * m, p - y, p * (1.0 - p), m, 1.0)

    # -- multiclass: P(r) = softmax(a s)_r ---------------------------------------------------

    def softmax(self, s: np.ndarray) -> np.ndarray:
        """Probabilities of the labels of scores `s` (float64, n)."""
        z = self.a * s
        e = np.exp(z - z.max())
        return e / e.sum()

    def learn_scores(self, s: np.ndarray, row: int) -> None:
        """One Newton step on the cross-entropy of label `row` under scores `s` (its temperature
        only; b stays 0)."""
        if len(s) < 2 or not np.isfinite(s).all():
            return
        p = self.softmax(s)
        mean = float(p @ s)
        var = max(float(p @ (s * s)) - mean * mean, 0.0)
        self._newton(mean - float(s[row]), 0.0, var, 1.0, 0.0)

    def _newton(self, ga: float, gb: float, h: float, fa: float, fb: float) -> None:
        """H += h f f^T for f = (fa, fb); (a, b) -= H^-1 (ga, gb)."""
        self.haa += h * fa * fa
        self.hab += h * fa * fb
        self.hbb += h * fb * fb
        det = self.haa * self.hbb - self.hab * self.hab
        self.a -= (self.hbb * ga - self.hab * gb) / det
        self.b -= (self.haa * gb - self.hab * ga) / det

    def __repr__(self) -> str:
        return f"Platt(a={self.a:.4g}, b={self.b:.4g})"


def make_calibrator(calibration) -> Platt | None:
    """A fresh calibrator for the `calibration` parameter (None: none); ValueError otherwise."""
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be None or 'platt', got {calibration!r}")
    return Platt() if calibration else None


def learn_rows(model, X, y, w=None) -> None:
    """`learn_many` of a calibrated learner: a `learn_one` loop over the rows of X (the
    calibrator needs each row's margin before the learner learns from that row, which the
    compiled batch loops do not return). A rejected row stops the loop: earlier rows stay
    learned."""
    weights = [1.0] * len(X) if w is None else list(w)
    for x, label, weight in zip(X.to_dict("records"), list(y), weights):
        model.learn_one(x, label, weight)
