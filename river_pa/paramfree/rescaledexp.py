"""RescaledExp: hyperparameter-free online convex optimization.

Source: A. Cutkosky and K. Boahen, Online Convex Optimization with Unconstrained Domains and
Losses, NIPS 2016 (arXiv:1703.02622, 2017; ../shared/papers/rescaledexp-cutkosky-boahen2017.txt).
Algorithm 1 (rescaledexp), Algorithm 2 (re-centred rescaledexp, Appendix C.3), coordinate-wise
updates (Appendix C.2). The state of every instance is

* L_t: the current guess of max ||g||, set to the first non-zero ||g||; when ||g_t|| > 2 L_t the
  epoch ends: L_{t+1} = ||g_t|| and FTRL restarts (sums and M reset, w_{t+1} = 0);
* g_{t*:t} and ||g||^2_{t*:t}: the gradient sums since the epoch began (t*);
* M_t = max(M_{t-1}, ||g_{t*:t}|| / p - ||g||^2_{t*:t}) with p = 1 / L_t;
* eta_t = 1 / (k sqrt(2 (M_t + ||g||^2_{t*:t}))) with k = sqrt(2);
* w_{t+1} = -g_{t*:t} / ||g_{t*:t}|| (exp(eta_t ||g_{t*:t}||) - 1), the FTRL argmin with the
  regulariser psi(w) / eta_t, psi(w) = (||w|| + 1) log(||w|| + 1) - ||w||.

The re-centred variant adds a centre w_star to the FTRL point and moves it at each restart. The
paper's prose (Section 4.2) re-centres "about the previous prediction point" while Algorithm 2
as printed sets w_star <- w_{t-1}; both are offered (`center="last_play"`: w_star = w_t, the
weights played on the round whose gradient triggered the restart; `center="play_before_last"`:
w_star = w_{t-1}, as printed). Algorithm 2's reset "w_{t+1} <- 0" is read as resetting the FTRL
part, so the next play is w_star itself.

Overflow guard: see `river_pa.paramfree._numba` (the exponent is capped at
log(sqrt(DBL_MAX)) ~ 354.9, reached only after about 250,000 consecutive same-sign gradients of
the epoch's largest size; below it the update is exact). Gradients below ~1e-154, whose squares
underflow, use the bound eta_t ||g_{t*:t}|| <= sqrt(||g_{t*:t}|| / L_t) / 2 (exact on an epoch's
first round; see `exponent_rescaledexp`).

"""

from __future__ import annotations

import math

import numpy as np
from river import optim

from river_pa.paramfree import _numba
from river_pa._core.features import Vocabulary, to_values
from river_pa.paramfree.base import BinaryMixin, ParamFreeLinear, RegressionMixin
from river_pa._core.cache import TransientCache

__all__ = ["RescaledExp", "RescaledExpClassifier", "RescaledExpRegressor"]

CENTERS = {
    None: _numba.CENTER_NONE,
    "last_play": _numba.CENTER_LAST,
    "play_before_last": _numba.CENTER_BEFORE_LAST,
}


def check_center(center) -> int:
    """The kernel code of a re-centring rule, or a ValueError listing the valid ones."""
    try:
        return CENTERS[center]
    except (KeyError, TypeError):
        raise ValueError(f"center must be one of {list(CENTERS)}, got {center!r}") from None


class _RescaledExpState:
    """Rows of RescaledExp state (one per coordinate) and the scalars of the full variant."""

    def _setup_state(self, coordinatewise, center, capacity):
        if not isinstance(coordinatewise, bool):
            raise ValueError(f"coordinatewise must be a bool, got {coordinatewise!r}")
        self._center = check_center(center)
        self._st = np.zeros((capacity, _numba.N_STATE))
        self._sc = np.zeros(3)

    def _grow_rows(self, size):
        if size > len(self._st):
            st = np.zeros((max(size, 2 * len(self._st)), _numba.N_STATE))
            st[: len(self._st)] = self._st
            self._st = st

    def _apply(self, pos, val, gm, bias):
        """One round on the gradient gm * x (+ gm on the row `bias`)."""
        if self.coordinatewise:
            _numba.rescaledexp_coordinates(self._st, pos, val, gm, bias, self._center)
        else:
            _numba.rescaledexp_full(self._st, self._sc, pos, val, gm, bias, self._center)


class RescaledExp(_RescaledExpState, TransientCache, optim.base.Optimizer):
    """The RescaledExp optimizer (Cutkosky and Boahen 2016, Algorithms 1 and 2): no learning rate.

    For River's linear models, e.g. `linear_model.LogisticRegression(optimizer=RescaledExp())`.
    Note that River's linear models learn their intercept apart, with `intercept_lr` (a fixed
    learning rate): use `RescaledExpClassifier` / `RescaledExpRegressor` for a model in which
    nothing at all is tuned.

    Parameters
    ----------
    coordinatewise
        True (the paper's linear experiments, Appendix C.2): one independent 1-D instance per
        feature, each with its own L, epochs and M, untouched on rounds where its gradient
        is 0. False: one instance on the whole vector with Euclidean norms (the dimension-free
        Algorithm 1), which rewrites every weight it has seen on each step.
    center
        None: Algorithm 1 (restart at 0). "last_play" or "play_before_last": Algorithm 2,
        re-centred at the weights played on the restart round (w_t) or one round before
        (w_{t-1}, as printed in Appendix C.3).

    Notes
    -----
    `step(w, g)` accepts dicts, `river.utils.VectorDict` (including the masked ones River's
    models pass, where only the event's keys are visible) and numpy arrays (index i is the
    feature key i). The full-vector variant also writes in `look_ahead`, so every weight River
    reads while computing a gradient is the current one; a masked VectorDict hides the other
    keys, whose stored weights River's `predict_one` may then read one step late. Gradients must
    be finite (ValueError naming the key otherwise, nothing changed). State: numpy arrays and a
    `Vocabulary` (plain dicts): picklable. The inherited `lr` is an unused placeholder (1.0).

    Examples
    --------

    >>> from river import datasets, evaluate, linear_model, metrics, optim
    >>> import river_pa

    >>> model = linear_model.LogisticRegression(optimizer=river_pa.RescaledExp())
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 84.00%

    The first non-zero gradient sets L = |g|, so the first move is exp(1/2) - 1 against it:

    >>> opt = river_pa.RescaledExp()
    >>> w = opt.step({"a": 0.0}, {"a": 2.0})
    >>> round(w["a"], 6)
    -0.648721

    """

    _TRANSIENT = ("_keys", "_pos")  # the position cache of the last key tuple

    def __init__(self, coordinatewise: bool = True, center: str | None = None):
        super().__init__(lr=1.0)
        self.coordinatewise = coordinatewise
        self.center = center
        self._setup_state(coordinatewise, center, 64)
        self._index = Vocabulary()
        self._keys = None
        self._pos = None

    def _positions(self, keys: tuple) -> np.ndarray:
        if keys != self._keys:
            self._pos = self._index.insert(keys)
            self._keys = keys
            self._grow_rows(self._index.size)
        return self._pos

    def _write(self, w, keys):
        """w[key] = the current weight of `key`, for the keys the optimizer knows."""
        pos = self._index.lookup(tuple(keys))
        for k, p, v in zip(keys, pos.tolist(), self._st[pos, _numba.W].tolist()):
            if p:
                w[k] = v

    def __repr__(self) -> str:
        # River's Optimizer.__repr__ prints vars(self): here the whole state and the index
        return f"{type(self).__name__}({self._get_params()})"

    def look_ahead(self, w):
        if not self.coordinatewise and not isinstance(w, np.ndarray):
            self._write(w, list(w.keys()))
        return w

    def step(self, w, g):
        if isinstance(g, np.ndarray):
            if g.ndim != 1 or g.dtype.kind not in "iufb":
                raise TypeError(f"the gradient must be a 1-D array of real numbers, got "
                                f"{g.dtype} of shape {g.shape}")
            keys = tuple(range(len(g)))
            val = np.asarray(g, dtype=np.float64)
        else:
            keys = tuple(g.keys())
            try:
                val = to_values(g)
            except TypeError as err:
                raise TypeError(f"gradient: {err}") from None
            except ValueError:
                val = np.full(len(keys), math.nan)  # the message below names the coordinate
        ok = np.abs(val) < _numba.MAX_ABS_VALUE  # False for NaN too: the state sums g and g^2
        if not ok.all():
            j = int(np.argmin(ok))
            value = g[keys[j]] if not isinstance(g, np.ndarray) else val[j]
            raise ValueError(f"gradient of {keys[j]!r} is not finite or too large (|g| must stay "
                             f"below {_numba.MAX_ABS_VALUE:g}): {value!r}")
        pos = self._positions(keys)
        self._apply(pos, val, 1.0, -1)
        if isinstance(w, np.ndarray):
            w[:] = self._st[pos, _numba.W]
        elif self.coordinatewise:
            for k, v in zip(keys, self._st[pos, _numba.W].tolist()):
                w[k] = v
        else:
            self._write(w, list(dict.fromkeys((*w.keys(), *keys))))
        self.n_iterations += 1
        return w


class _RescaledExpLinear(_RescaledExpState, ParamFreeLinear):
    """A linear model trained by RescaledExp, intercept included."""

    _MIX = ("its state restarts in epochs (the sums of gradients, M and w reset whenever a "
            "gradient exceeds twice the guess L of max |g|), at different events in each copy: "
            "a mean of sums from different epochs is no state the algorithm reaches, and its "
            "regret bound would not hold")

    def __init__(
        self,
        loss: optim.losses.Loss | None = None,
        coordinatewise: bool = True,
        center: str | None = None,
        learn_intercept: bool = True,
    ):
        self.loss = loss
        self.coordinatewise = coordinatewise
        self.center = center
        self.learn_intercept = learn_intercept
        self._setup_state(coordinatewise, center, self._INITIAL_CAPACITY)
        self._setup(loss, learn_intercept)

    def _grow(self, size: int):
        self._grow_rows(size)

    def _raw(self, pos, val):
        return _numba.rescaledexp_margin(self._st, pos, val, self._bias)

    def _update(self, pos, val, y_hat, g):
        self._apply(pos, val, g, self._bias)

    def _weight_vector(self):
        return self._st[:, _numba.W]

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"coordinatewise": False, "center": "last_play"}
        yield {"center": "play_before_last", "learn_intercept": False}


class RescaledExpClassifier(_RescaledExpLinear, BinaryMixin):
    """A binary linear classifier trained by RescaledExp: nothing to tune, intercept included.

    y_hat = w . x + b; each round the loss gradient g = dl/dy_hat gives the gradient g x on the
    weights and g on the intercept b (a constant feature of value 1), all fed to RescaledExp
    (Cutkosky and Boahen 2016, Algorithm 1; Algorithm 2 with `center`; one 1-D instance per
    coordinate by default, Appendix C.2). See `RescaledExp` for the update and the overflow guard.

    Parameters
    ----------
    loss
        A `river.optim.losses.BinaryLoss`; None means `Log()`. The paper's experiments use
        `Hinge()` (Section 4.1).
    coordinatewise
        One RescaledExp instance per coordinate (True) or one on the whole vector (False).
    center
        None (Algorithm 1), "last_play" or "play_before_last" (Algorithm 2, see `RescaledExp`).
    learn_intercept
        Whether to learn the intercept (as a constant feature, by the same rule).
    calibration
        None or "temperature": P(True) calibrated online on the progressive predictions y_hat
        (`river_pa._core.calibration.MarginMixture`: a mixture of sigmoid(a y_hat) over
        inverse temperatures a and of a histogram of them); without it, the loss's mean
        function. Predictions unchanged.

    Notes
    -----
    Labels: bool, 0/1 or -1/+1. `learn_one(x, y, w)` scales the gradient by the sample weight w
    (w = 0: nothing happens). Without calibration `predict_proba_one` applies the loss's mean
    function (the logistic sigmoid for every River binary loss) to y_hat. Features never seen have weight 0 at
    prediction. Bad feature values raise TypeError/ValueError naming the feature; the model is
    unchanged after a rejected event. Values must be finite with |x| < 1e150 (so x^2 and its
    sums stay finite float64; larger is a ValueError); tiny ones (x^2 underflowing) are fine. Vocabulary state in plain dicts, the rest numpy: picklable.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, optim
    >>> import river_pa

    >>> model = river_pa.RescaledExpClassifier(loss=optim.losses.Hinge())
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 86.32%

    """

    def __init__(self, loss=None, coordinatewise: bool = True, center: str | None = None,
                 learn_intercept: bool = True, calibration: str | None = None):
        super().__init__(loss, coordinatewise, center, learn_intercept)
        self._setup_calibration(calibration)


class RescaledExpRegressor(_RescaledExpLinear, RegressionMixin):
    """A linear regressor trained by RescaledExp: nothing to tune, intercept included.

    As `RescaledExpClassifier`, with a `river.optim.losses.RegressionLoss` (None means
    `Squared()`; `Absolute()` keeps the gradients bounded, which Theorem 2's bound prefers:
    growing squared-loss gradients start new epochs). Targets must be finite real numbers.

    Examples
    --------

    RescaledExp is not scale-invariant: standardise features of very different scales.

    >>> from river import datasets, evaluate, metrics, optim, preprocessing
    >>> import river_pa

    >>> model = preprocessing.StandardScaler() | river_pa.RescaledExpRegressor(
    ...     loss=optim.losses.Absolute())
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 1.667822

    """

    _default_loss = optim.losses.Squared()
