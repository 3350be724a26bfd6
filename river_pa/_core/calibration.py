"""Online calibration of a classifier's margins: Bayesian mixtures over temperatures, and for a
binary margin a histogram expert on top of them.

A hinge-loss learner's margin m is not a log-odds: the sigmoid of it is a fixed link that no
update fits. Both calibrators predict with a Bayesian mixture of experts (Cesa-Bianchi and
Lugosi 2006, Prediction, Learning, and Games, section 3.3 and chapter 9): each expert's
weight is its prior times exp(-its cumulative log loss on the progressive margins; each
labelled event's margin is taken before the learner learns from it). The log loss of such a
mixture over any stream is at most any expert's plus the log of the inverse of that expert's
prior weight, and the experts may themselves learn from the past (the bound needs nothing
else). Both mixtures put half the prior on the uncalibrated link, so over any stream the
calibrated cumulative log loss exceeds the uncalibrated link's by at most ln 2 nats in total.
No step size, nothing that can jump: the Newton-step fit of issue 19 moved a from 1 to about
100 on the second event of a stream whose first margin was tiny, and made LogLoss up to 7x
worse.

Several labels (`Temperature`): P(r | s) = sum_k w_k softmax(a_k s)_r over the inverse
temperatures a_k on the grid `GRID` (2^-24 .. 2^8 in steps of 2^(1/2), wide enough for kernel
margins of 1e7), the temperature scaling of Guo et al. 2017 (On Calibration of Modern Neural
Networks, ICML) as a posterior predictive. Prior: 1/2 on a = 1, 1/2 spread over the rest.

One binary margin (`MarginMixture`): 66 experts. 65 are the temperatures, sigmoid(a_k m) (Platt
1999 with its offset fixed at 0); prior 1/2 on a = 1, 1/4 spread over the other 64. A
temperature only rescales the margin: it cannot fit a link that is not a sigmoid nor a
class-dependent shift, and on a9a and elec2 its 10-bin ECE stayed above 0.03. The 66th expert
(prior 1/4) calibeats the temperature mixture (Foster and Hart 2023, Calibeating: beating
forecasters at their own game, Theoretical Economics; Gupta and Ramdas 2023, Online Platt
Scaling with Calibeating, ICML, its "tracking" calibeater): it puts the margin in one of `BINS`
equal-width bins of |2 p - 1| on each side of 0, p the temperature mixture's P(True), and
predicts the bin's past frequency of True with `STRENGTH` pseudo-events at p (a Beta prior
centred on the temperatures: (hits + STRENGTH p) / (events + STRENGTH)), so it starts as the
temperatures and ends as an online histogram binning of them. Bounds: at most ln 2 nats worse
than the link, ln 4 than the histogram expert, ln 256 than any grid temperature.

Predictions never change: every temperature a_k > 0 and the histogram expert is clipped to
the side of 1/2 its margin is on, so P(True) > 1/2 exactly when m > 0 (1/2 at m = 0), and
accuracy is the same whichever of `predict_one` or `predict_proba_one` a metric reads. Where
the labels are mostly False among margins slightly above 0 (a cut in the wrong place, as on
a9a for about 5% of the events), P(True) stays just above 1/2: the cost of keeping the labels.

Written here rather than borrowed (River's `LogisticRegression` on the margin, scikit-learn's
`CalibratedClassifierCV` or `IsotonicRegression`): an SGD step of fixed learning rate is not
invariant to the margin's scale and can diverge early, and scikit-learn's calibrators are
batch fits. The binary mixture costs 3 vector operations over the 65 temperatures per
prediction and 7 per label (the temperatures' posterior gives their mixture's likelihood, the
histogram is scalar arithmetic): 71-73k predictions and labels a second here, 0.83-0.94x the
temperatures alone (two timings in CPU time on busy cores).

"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["BINS", "CALIBRATIONS", "GRID", "MarginMixture", "STRENGTH", "Temperature",
           "learn_rows", "make_calibrator"]

CALIBRATIONS = (None, "temperature")
# the inverse temperatures a_k: steps of 2^(1/2) (steps of 2^(1/4) or 2^(1/8) changed LogLoss
# and ECE by less than 0.001 on the binary sets: the mixture interpolates between neighbours)
GRID = 2.0 ** (np.arange(-48, 17) / 2.0)
_ONE = 48  # GRID[_ONE] = 1
_LOG_PRIOR = np.full(len(GRID), np.log(0.5 / (len(GRID) - 1)))
_LOG_PRIOR[_ONE] = np.log(0.5)
# the binary mixture: the temperatures, then the histogram expert
BINS = 10  # per side of m = 0 (5 and 20 gave the same ECE counts within 1 run in 18)
STRENGTH = 2.0  # pseudo-events at the temperatures' p per bin (0.5 gave the same within 1 run)
# prior 1/4 on the histogram and 3/4 on the temperatures, among which 2/3 on a = 1: 1/2 in all
_LOG_ODDS_HISTOGRAM = -np.log(3.0)
_LOG_PRIOR_T = np.full(len(GRID), np.log(1 / 3 / (len(GRID) - 1)))
_LOG_PRIOR_T[_ONE] = np.log(2 / 3)
_HALF_GRID = GRID / 2
_ABOVE_HALF, _BELOW_HALF = float(np.nextafter(0.5, 1.0)), float(np.nextafter(0.5, 0.0))
_CERTAIN = 1.0 - 2.0**-40  # the histogram's largest P: a miss costs it at most 27.7 nats


# numpy only, by hand: scipy.special's expit, softmax and logsumexp would add scipy's import
# (about 0.1 s) to every `import river_pa`, for one-line formulas
def _softmax_rows(Z: np.ndarray) -> np.ndarray:
    e = np.exp(Z - Z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _bayes(log_w: np.ndarray, losses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bayes' rule: (log w_k - loss_k with the top one at 0, the normalised weights)."""
    log_w = log_w - losses
    log_w -= log_w.max()
    w = np.exp(log_w)
    return log_w, w / w.sum()


class Temperature:
    """Online calibration of the scores of several labels by a Bayesian mixture over the
    inverse temperatures `GRID` (see the module docstring).

    State: `log_w`, the unnormalised log posterior weights (float64, 65), and `w`, the
    normalised weights (float64, 65), both plain numpy arrays (they pickle).

    >>> cal = Temperature()
    >>> cal.a                           # the prior's mode: the uncalibrated link
    1.0
    >>> s = np.array([np.log(3) / 2, 0.0])   # the top label is right 3 times in 4:
    >>> for _ in range(300):                 # softmax(a s)[0] = 3/4 at a = 2
    ...     for row in [0, 0, 0, 1]:
    ...         cal.learn_scores(s, row)
    >>> cal.a, cal.softmax(s).round(3).tolist()
    (2.0, [0.75, 0.25])

    """

    def __init__(self):
        self.log_w = _LOG_PRIOR.copy()
        self.w = np.exp(self.log_w)

    @property
    def a(self) -> float:
        """The most probable inverse temperature (1 before any label)."""
        return float(GRID[self.w.argmax()])

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
        self.log_w, self.w = _bayes(self.log_w, log_norm - Z[:, row])

    def __repr__(self) -> str:
        return f"Temperature(a={self.a:.4g})"


class MarginMixture:
    """Online calibration of a binary margin: a Bayesian mixture of the temperatures `GRID`
    and of a histogram expert that calibeats them (see the module docstring).

    The 66 experts' posterior is kept in two levels, which Bayes' rule gives exactly: the
    temperatures among themselves, and the histogram against the temperatures' mixture. State
    (plain numpy arrays and floats: they pickle): `log_t` and `t`, the log and the normalised
    weights of the temperatures among themselves (float64, 65); `log_odds`, the histogram's
    posterior log-odds against them; `hits` and `events`, the labels True and the labelled
    events of each histogram bin (float64, 2 `BINS`: m < 0, then m > 0, each by |2 p - 1|
    rising).

    >>> cal = MarginMixture()
    >>> cal.a, round(cal.proba(1.0), 4)   # the link's sigmoid(1) = 0.7311, pulled towards
    (1.0, 0.6967)
    >>> # 1/2 by the small temperatures
    >>> m = np.log(3) / 2               # 3 events of 4 at m and at -m are right:
    >>> for _ in range(300):            # sigmoid(a m) = 3/4 at a = 2
    ...     for y in [True, True, True, False]:
    ...         cal.learn(m, y); cal.learn(-m, not y)
    >>> cal.a, round(cal.proba(m), 3)
    (2.0, 0.75)
    >>> for _ in range(300):            # then 3 in 5 at m, all at 2 m: no temperature fits
    ...     for y in [True, True, True, False, False]:
    ...         cal.learn(m, y); cal.learn(2 * m, True)
    >>> round(cal.proba(m), 2), round(cal.proba(2 * m), 2), round(float(cal.w[-1]), 2)
    (0.6, 1.0, 1.0)
    >>> cal.proba(-1e-300) < 0.5 < cal.proba(1e-300), cal.proba(0.0)  # the cut stays at 0
    (True, 0.5)

    """

    def __init__(self):
        self.log_t = _LOG_PRIOR_T.copy()
        self.t = np.exp(self.log_t)
        self.log_odds = float(_LOG_ODDS_HISTOGRAM)
        self.hits = np.zeros(2 * BINS)
        self.events = np.zeros(2 * BINS)

    @property
    def a(self) -> float:
        """The most probable inverse temperature (1 before any label)."""
        return float(GRID[self.t.argmax()])

    @property
    def w(self) -> np.ndarray:
        """The 66 experts' posterior weights: the temperatures, then the histogram."""
        h = 0.5 + 0.5 * math.tanh(0.5 * self.log_odds)
        return np.append((1.0 - h) * self.t, h)

    def _histogram(self, m: float, p: float) -> tuple[float, int]:
        """(the histogram expert's P(True), its bin) for the margin m (not 0) at which the
        temperatures give P(True) = p; on the side of 1/2 of m, and never 0 or 1."""
        j = min(int(abs(2.0 * p - 1.0) * BINS), BINS - 1) + (BINS if m > 0 else 0)
        q = float(self.hits[j] + STRENGTH * p) / float(self.events[j] + STRENGTH)
        if m > 0:
            return min(max(q, _ABOVE_HALF), _CERTAIN), j
        return max(min(q, _BELOW_HALF), 1.0 - _CERTAIN), j

    def proba(self, m: float) -> float:
        """P(True) for the margin m: above 1/2 exactly when m > 0 (1/2 for 0 or NaN)."""
        if not (m > 0.0 or m < 0.0):
            return 0.5
        p = 0.5 + 0.5 * float(self.t @ np.tanh(_HALF_GRID * m))  # sum_k t_k sigmoid(a_k m)
        q = self._histogram(m, p)[0]
        p += (0.5 + 0.5 * math.tanh(0.5 * self.log_odds)) * (q - p)
        return max(p, _ABOVE_HALF) if m > 0 else min(p, _BELOW_HALF)  # rounding

    def learn(self, m: float, y: bool) -> None:
        """Bayes' rule for the labelled margin (m, y), then its bin's counts; a margin that is
        0 or not finite carries no information (every a_k gives it 1/2, or it overflows)."""
        if m == 0.0 or not math.isfinite(m):
            return
        log_t = self.log_t - np.logaddexp(0.0, (-m if y else m) * GRID)
        top = log_t.max()
        e = np.exp(log_t - top)
        total = e.sum()
        log_like = float(top + np.log(total))  # ln P(y) of the temperatures' mixture
        p = math.exp(log_like) if y else -math.expm1(log_like)  # their P(True) before
        q, j = self._histogram(m, p)
        self.log_odds += math.log(q if y else 1.0 - q) - log_like
        self.log_t, self.t = log_t - log_like, e / total
        self.hits[j] += y
        self.events[j] += 1.0

    def __repr__(self) -> str:
        return f"MarginMixture(a={self.a:.4g}, histogram weight={float(self.w[-1]):.3g})"


def make_calibrator(calibration, binary: bool = False) -> MarginMixture | Temperature | None:
    """A fresh calibrator for the `calibration` parameter (None: none) of a learner of one
    binary margin (`binary`) or of the scores of several labels; ValueError otherwise."""
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be None or 'temperature', got {calibration!r}")
    if not calibration:
        return None
    return MarginMixture() if binary else Temperature()


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
