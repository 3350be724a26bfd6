"""Passive-Aggressive uniclass prediction: online centre estimation as an anomaly detector.

Source: K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer (2006), Online
Passive-Aggressive Algorithms, JMLR 7: 551-585. Section 6 (uniclass prediction, fixed radius,
and the learned radius by the reduction to a fixed radius B in n+1 dimensions).

"""

from __future__ import annotations

import math

import numpy as np
from river import base

from river_pa.anomaly import _numba
from river_pa._core.cache import EventCache
from river_pa._core.features import Vocabulary
from river_pa._core.validation import check_nonnegative, check_positive, check_variant

__all__ = ["PAUniclass"]


class PAUniclass(EventCache, base.AnomalyDetector):
    """Passive-Aggressive uniclass learner: a centre that follows the stream, within a radius.

    The centre w starts at 0. Each event is a point y (its features; a feature absent from the
    event is a 0 coordinate) with the epsilon-insensitive loss l = max(0, ||w - y|| - epsilon).
    `learn_one` moves the centre towards y by tau along (y - w) / ||y - w||:

    * PA: tau = l (the projection of w onto the ball of radius epsilon around y)
    * PA-I: tau = min(C, l)
    * PA-II: tau = l / (1 + 1/(2C))

    (Crammer et al. 2006, Section 6: the binary step sizes with ||x||^2 = 1.)

    With ``epsilon=None`` the radius is learned, bounded by `B`, through the paper's reduction:
    a fixed-radius-B problem in n+1 dimensions, with points (y, 0) and initial centre (0, B).
    The radius used at each step is epsilon_t = sqrt(B^2 - w_{n+1}^2): it starts at 0, never
    decreases and never exceeds B. The loss is then the reduced problem's,
    sqrt(||w - y||^2 + w_{n+1}^2) - B, positive exactly when ||w - y|| > epsilon_t.

    Every step costs O(number of features in the event), whatever the number of features seen:
    the centre is stored as a scale times an array (absent coordinates shrink together) and
    ||w||^2 is kept up to date.

    Parameters
    ----------
    variant
        "PA", "PA-I" or "PA-II".
    C
        Aggressiveness (> 0): the largest move of PA-I, the slack penalty of PA-II; unused by PA.
    epsilon
        The fixed radius (>= 0), in the features' units; None to learn it (then `B` is needed).
    B
        The upper bound of the learned radius (> 0); only with ``epsilon=None``.

    Attributes
    ----------
    center : dict
        The non-zero centre coordinates by feature name.
    radius : float
        epsilon, or the current learned radius epsilon_t.

    `score_one(x)` is the Euclidean distance ||w - y|| from the centre to the event: higher is
    more anomalous, and the event is inside the ball exactly when the score is <= `radius`
    (so ``ThresholdFilter(threshold=epsilon)`` flags the points the fixed-radius model counts
    as losses). `loss_one(x)` is the loss the next `learn_one(x)` would suffer. Features are
    not rescaled: put a scaler before the detector when their units differ.

    Feature values must be real numbers: anything else raises TypeError, NaN and infinities
    ValueError, naming the feature; the model is unchanged after a rejected event.

    Examples
    --------

    One hard PA step moves the centre onto the sphere of radius epsilon around the point:

    >>> from river_pa import PAUniclass
    >>> model = PAUniclass(variant="PA", epsilon=5.0)
    >>> model.learn_one({"a": 6.0, "b": 8.0})
    >>> model.center
    {'a': 3.0, 'b': 4.0}
    >>> model.score_one({"a": 6.0, "b": 8.0}), model.score_one({"b": 4.0})
    (5.0, 3.0)

    On the bundled Shuttle data, behind River's MinMaxScaler (which returns NaN for a feature
    it has not learned yet, hence `learn_during_predict`), and with a quantile filter:

    >>> from river import anomaly, compose, datasets, metrics, preprocessing
    >>> detector = preprocessing.MinMaxScaler() | anomaly.QuantileFilter(
    ...     PAUniclass(variant="PA-I", C=0.05, epsilon=0.2), q=0.95
    ... )
    >>> auc = metrics.ROCAUC()
    >>> with compose.learn_during_predict():
    ...     for x, y in datasets.Shuttle().take(10_000):
    ...         auc.update(y, detector.score_one(x))
    ...         detector.learn_one(x)
    >>> auc
    ROCAUC: 96.47%

    A learned radius starts at 0 and grows (never beyond B); {'a': 0.2} falls inside the ball:

    >>> model = PAUniclass(variant="PA-I", C=0.1, epsilon=None, B=1.0)
    >>> for x in [{"a": 0.5}, {"a": 0.7}, {"a": 0.2}]:
    ...     model.learn_one(x)
    ...     print(round(model.radius, 4))
    0.4134
    0.5587
    0.5587

    """

    def __init__(
        self,
        variant: str = "PA-I",
        C: float = 1.0,
        epsilon: float | None = 1.0,
        B: float | None = None,
    ):
        self.variant = variant
        self.C = C
        self.epsilon = epsilon
        self.B = B
        self._variant = check_variant(variant)
        check_positive("C", C)
        if epsilon is None:
            if B is None:
                raise ValueError("B (the bound of the learned radius) is needed when epsilon=None")
            check_positive("B", B)
            self._radius, self._extra = float(B), float(B)
        else:
            check_nonnegative("epsilon", epsilon, allow_none=True)
            if B is not None:
                raise ValueError("B bounds a learned radius: give it only with epsilon=None")
            self._radius, self._extra = float(epsilon), 0.0
        self._index = Vocabulary()
        self._v = np.zeros(16)
        self._scale = 1.0
        self._sq = 0.0
        self._version = 0  # the cache keeps positions and values only: nothing to invalidate
        self._clear_cache()

    @classmethod
    def _unit_test_params(cls):
        yield {"variant": "PA-I", "C": 1.0, "epsilon": 10.0}
        yield {"variant": "PA", "epsilon": None, "B": 50.0}
        yield {"variant": "PA-II", "C": 0.5, "epsilon": 0.0}

    # -- events ----------------------------------------------------------------------------

    def _on_event(self, pos, val) -> None:
        pass

    def _grow(self, size: int):
        if size > len(self._v):
            v = np.zeros(max(size, 2 * len(self._v)))
            v[: len(self._v)] = self._v
            self._v = v

    def _distance_sq(self, x: dict) -> float:
        """||w - y||^2 over the n feature coordinates."""
        self._event(x)
        diff, rest = _numba.distance_sq(self._v, self._scale, self._sq, self._epos, self._val)
        return diff + rest

    def learn_one(self, x: dict) -> None:
        self._event(x, learn=True)
        self._scale, self._sq, self._extra, _, _ = _numba.learn(
            self._variant, float(self.C), self._radius, self._v, self._scale, self._sq,
            self._extra, self._epos, self._val,
        )

    def score_one(self, x: dict) -> float:
        """The distance ||w - y|| from the centre to the event (>= 0; higher = more anomalous)."""
        return math.sqrt(self._distance_sq(x))

    def loss_one(self, x: dict) -> float:
        """The epsilon-insensitive loss of the centre on `x` (in n+1 dimensions if learned)."""
        dist = math.sqrt(self._distance_sq(x) + self._extra * self._extra)
        return max(0.0, dist - self._radius)

    # -- inspection ------------------------------------------------------------------------

    @property
    def center(self) -> dict:
        """The non-zero coordinates of the centre, by feature name."""
        return {
            k: float(self._scale * self._v[i])
            for k, i in self._index.positions.items()
            if self._v[i] != 0.0
        }

    @property
    def radius(self) -> float:
        """epsilon, or the learned radius sqrt(B^2 - w_{n+1}^2) (0 before any step)."""
        if self.epsilon is not None:
            return self._radius
        return math.sqrt(max(self._radius**2 - self._extra**2, 0.0))
