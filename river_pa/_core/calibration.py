"""Online calibration of a classifier's margins: a Bayesian mixture over temperatures.

A hinge-loss learner's margin m is not a log-odds: the sigmoid of it is a fixed link that no
update fits. `Temperature` predicts P(True | m) = sum_k w_k sigmoid(a_k m) for a binary learner
and P(r | s) = sum_k w_k softmax(a_k s)_r for a learner scoring K labels: the posterior
predictive of a one-dimensional logistic regression on the margin without intercept (Platt
1999 with its offset fixed at 0; in the multiclass form the temperature scaling of Guo et al.
2017, On Calibration of Modern Neural Networks, ICML), with the inverse temperature a on the
grid `GRID` (2^-24 .. 2^8 in steps of 2^(1/2), wide enough for kernel margins of 1e7) and
w_k its posterior weight. Every a_k > 0, so P(True) > 1/2 exactly when m > 0 and the most
probable label is the highest-scoring one: calibration never changes a prediction, and
accuracy is the same whichever of `predict_one` or `predict_proba_one` a metric reads.

The prior puts half its mass on a = 1, the uncalibrated link, and spreads the other half over
the rest of the grid. The weights follow Bayes' rule on the progressive margins (each labelled
event's margin is taken before the learner learns from it): w_k is proportional to the prior
times exp(-cumulative log loss of a_k). The log loss of such a mixture is at most that of any
grid point plus the log of the inverse of its prior weight (Cesa-Bianchi and Lugosi 2006,
Prediction, Learning, and Games, section 3.3 and chapter 9): over any stream, the calibrated
cumulative log loss exceeds the uncalibrated link's by at most ln 2 nats in total, and the
best grid temperature's by at most ln 128. No step size, no prior to scale, nothing that can
jump: the Newton-step fit it replaces (issue 19) moved a from 1 to about 100 on the second
event of a stream whose first margin was tiny, and made LogLoss up to 7x worse.

Written here rather than borrowed (River's `LogisticRegression` on the margin, scikit-learn's
`CalibratedClassifierCV`): an SGD step of fixed learning rate is not invariant to the margin's
scale and can diverge early, and scikit-learn's calibrators are batch fits. The mixture costs
one vector operation over the 65 grid points per labelled event.

"""

from __future__ import annotations

import numpy as np

__all__ = ["CALIBRATIONS", "GRID", "Temperature", "learn_rows", "make_calibrator"]

CALIBRATIONS = (None, "temperature")
# the inverse temperatures a_k: steps of 2^(1/2) (steps of 2^(1/4) or 2^(1/8) changed LogLoss
# and ECE by less than 0.001 on the binary sets: the mixture interpolates between neighbours)
GRID = 2.0 ** (np.arange(-48, 17) / 2.0)
_ONE = 48  # GRID[_ONE] = 1
_LOG_PRIOR = np.full(len(GRID), np.log(0.5 / (len(GRID) - 1)))
_LOG_PRIOR[_ONE] = np.log(0.5)


# numpy only, by hand: scipy.special's expit, softmax and logsumexp would add scipy's import
# (about 0.1 s) to every `import river_pa`, for three one-line formulas
def _sigmoids(z: np.ndarray) -> np.ndarray:
    return 0.5 + 0.5 * np.tanh(0.5 * z)  # no overflow for any finite z


def _softmax_rows(Z: np.ndarray) -> np.ndarray:
    e = np.exp(Z - Z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class Temperature:
    """Online calibration of a binary margin or of the scores of several labels by a Bayesian
    mixture over the inverse temperatures `GRID` (see the module docstring).

    State: `log_w`, the unnormalised log posterior weights (float64, 65), and `w`, the
    normalised weights (float64, 65), both plain numpy arrays (they pickle).

    >>> cal = Temperature()
    >>> cal.a                           # the prior's mode: the uncalibrated link
    1.0
    >>> m = np.log(3) / 2               # 3 events of 4 at m and at -m are right:
    >>> for _ in range(300):            # sigmoid(a m) = 3/4 at a = 2
    ...     for y in [True, True, True, False]:
    ...         cal.learn(m, y); cal.learn(-m, not y)
    >>> cal.a, round(cal.proba(m), 3)
    (2.0, 0.75)
    >>> cal.proba(-1e-9) < 0.5 < cal.proba(1e-9)   # the cut stays at m = 0
    True

    """

    def __init__(self):
        self.log_w = _LOG_PRIOR.copy()
        self.w = np.exp(self.log_w)

    @property
    def a(self) -> float:
        """The most probable inverse temperature (1 before any label)."""
        return float(GRID[self.w.argmax()])

    def _update(self, losses: np.ndarray) -> None:
        """Bayes' rule: log w_k -= loss_k, then normalise (the top weight's log kept at 0)."""
        log_w = self.log_w - losses
        log_w -= log_w.max()
        self.log_w = log_w
        w = np.exp(log_w)
        self.w = w / w.sum()

    # -- binary: P(True) = sum_k w_k sigmoid(a_k m) -----------------------------------------

    def proba(self, m: float) -> float:
        """P(True) for the margin m."""
        return float(self.w @ _sigmoids(GRID * m))

    def learn(self, m: float, y: bool) -> None:
        """Bayes' rule for the labelled margin (m, y); a margin that is 0 or not finite
        carries no information (every a_k gives it 1/2, or it overflows)."""
        if m == 0.0 or not np.isfinite(m):
            return
        self._update(np.logaddexp(0.0, (-m if y else m) * GRID))

    # -- several labels: P(r) = sum_k w_k softmax(a_k s)_r ------------------------------------

    def softmax(self, s: np.ndarray) -> np.ndarray:
        """Probabilities of the labels of scores `s` (float64, n)."""
        return self.w @ _softmax_rows(np.multiply.outer(GRID, s))

    def softmax_rows(self, S: np.ndarray) -> np.ndarray:
        """`softmax` of every row of S (float64, rows x n), as an array of the same shape."""
        live = np.flatnonzero(self.w > 1e-300)  # the others add nothing a float can hold
        return np.einsum("k,kij->ij", self.w[live],
                         _softmax_rows(np.multiply.outer(GRID[live], S)))

    def learn_scores(self, s: np.ndarray, row: int) -> None:
        """Bayes' rule for label `row` under the scores `s` (ignored with fewer than two
        labels or a score that is not finite)."""
        if len(s) < 2 or not np.isfinite(s).all():
            return
        Z = np.multiply.outer(GRID, s)
        top = Z.max(axis=1)
        log_norm = top + np.log(np.exp(Z - top[:, None]).sum(axis=1))
        self._update(log_norm - Z[:, row])

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
