"""Event handling shared by the parameter-free linear estimators.

A `ParamFreeLinear` maps dict features to rows of numpy state arrays through a
`river_pa._core.features.Vocabulary` (position 0 is the zero sink for keys never learned), keeps the
intercept as a constant feature of value 1 at its own row (so it is learned by the same rule as
the weights), validates every input before touching the model (feature values must be finite
and of magnitude below `MAX_ABS_VALUE` = 1e150, so their squares and sums of squares stay
finite: a ValueError names the largest one otherwise), and turns the loss (one of
`river.optim.losses`) into the scalar gradient dl/dy_hat that every learner here consumes.

Subclasses set `_default_loss` and implement `_raw(pos, val) -> y_hat` (never mutating; keys
never learned sit at position 0, the sink; NaN when a value has |x| >= MAX_ABS_VALUE, which
the kernels check in the loop they already run over the values), `_update(pos, val, y_hat, g)` (one round given the
loss gradient g = w dl/dy_hat, positions already inserted) and `_grow()`.

"""

from __future__ import annotations

import numpy as np
from river import base, optim

from river_pa._core.calibration import make_calibrator
from river_pa._core.features import Vocabulary, as_array
from river_pa.paramfree._numba import MAX_ABS_VALUE, max_abs
from river_pa._core.cache import EventCache
from river_pa._core.validation import check_sample_weight, check_target, encode_binary_label

def check_magnitudes(keys: tuple, val: np.ndarray) -> None:
    """Raise a ValueError naming the largest feature value of an event (keys, float values)
    when its magnitude is >= MAX_ABS_VALUE."""
    if max_abs(val) < MAX_ABS_VALUE:
        return
    j = int(np.argmax(np.abs(val)))
    raise ValueError(
        f"feature {keys[j]!r} has value {float(val[j])!r}, too large for this learner: its "
        f"state sums squared values, so |value| must stay below {MAX_ABS_VALUE:g} (rescale the "
        "feature)"
    )


class Intercept:
    """The key of the constant feature inside a learner's vocabulary (equal to every instance,
    so it survives pickling)."""

    def __eq__(self, other):
        return isinstance(other, Intercept)

    def __hash__(self):
        return hash("river_pa.Intercept")

    def __repr__(self):
        return "Intercept()"


class ParamFreeLinear(EventCache):
    """Vocabulary, intercept row, loss and the predict/learn plumbing of a linear learner.

    The event cache (`EventCache`) keeps the raw prediction y_hat of the last event until the
    model next learns; unseen keys predict as fresh coordinates, so y_hat does not change when
    they get a position.

    """

    _default_loss: optim.losses.Loss
    _loss_kind: type
    _INITIAL_CAPACITY = 64
    _TRANSIENT = (*EventCache._TRANSIENT, "_raw_cache")

    def _setup(self, loss, learn_intercept: bool):
        if loss is not None and not isinstance(loss, self._loss_kind):
            raise ValueError(
                f"loss must be a river.optim.losses.{self._loss_kind.__name__}, got {loss!r}"
            )
        self._loss = self._default_loss if loss is None else loss
        self._index = Vocabulary()
        self._bias = int(self._index.insert((Intercept(),))[0]) if learn_intercept else -1
        self._version = 0
        self._clear_cache()

    def _clear_cache(self):
        super()._clear_cache()
        self._raw_cache = 0.0

    @property
    def _n_coordinates(self) -> int:
        """Coordinates seen so far (the intercept included): the vocabulary without its sink."""
        return self._index.size - 1

    def _on_event(self, pos, val) -> None:
        y_hat = self._raw(pos, val)
        if y_hat != y_hat:  # NaN: what `_raw` returns for a value of |x| >= MAX_ABS_VALUE
            check_magnitudes(self._keys, as_array(val))
            raise ValueError(f"{type(self).__name__} cannot predict this event within float64 "
                             "(its prediction is not a number): rescale the features")
        self._raw_cache = y_hat

    def _raw_one(self, x: dict) -> float:
        self._event(x)
        return self._raw_cache

    def _learn(self, x: dict, y, w) -> None:
        if w.__class__ is not float or w != 1.0:
            w = check_sample_weight(w)
            if w == 0.0:
                return
        self._event(x)
        y_hat = self._raw_cache
        g = self._gradient(y, y_hat, w)
        self._check_step(g, y, w)
        if self._n_unseen:  # y_hat stays: unseen keys predict as fresh coordinates
            self._insert_unseen(self._keys)
        self._update(self._epos, self._val, y_hat, g)
        self._version += 1

    def _check_step(self, g: float, y, w: float) -> None:
        """Raise a ValueError, before anything changes, unless |g x| < MAX_ABS_VALUE for every
        value x of the cached event (and for the intercept's 1): the state sums g x and its
        squares, which must stay finite. Large sample weights and targets lead here."""
        if abs(g) < 1.0:  # |x| < MAX_ABS_VALUE already (the common case: no kernel call)
            return
        if abs(g) * max(1.0, max_abs(as_array(self._val))) < MAX_ABS_VALUE:
            return
        raise ValueError(
            f"y = {y!r} with sample weight w = {w!r} gives the loss gradient g = {g!r}: too "
            f"large for {type(self).__name__}, whose state sums g x and its squares, so |g x| "
            f"must stay below {MAX_ABS_VALUE:g} (rescale the target, the weight or the features)"
        )

    def _gradient(self, y, y_hat: float, w: float) -> float:
        """w * dl(y, y_hat)/dy_hat, as a float."""
        return float(self._loss.gradient(y, y_hat)) * w

    @property
    def weights(self) -> dict:
        """The weights the learner would play now on an event with these keys, by key."""
        w = self._weight_vector()
        return {
            k: float(w[i]) for k, i in self._index.positions.items() if not isinstance(k, Intercept)
        }

    @property
    def intercept(self) -> float:
        """The weight of the constant feature (0.0 without an intercept)."""
        return float(self._weight_vector()[self._bias]) if self._bias >= 0 else 0.0


class BinaryMixin(base.Classifier):
    """Binary labels (bool, 0/1 or -1/+1) and probabilities from the loss's mean function, or
    from the online calibration of y_hat (`river_pa._core.calibration.MarginMixture`) when the
    classifier's `calibration` is "temperature"
    (its constructor calls `_setup_calibration`)."""

    _loss_kind = optim.losses.BinaryLoss
    _default_loss = optim.losses.Log()

    def _setup_calibration(self, calibration) -> None:
        self.calibration = calibration
        self._calibrator = make_calibrator(calibration, binary=True)

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        try:
            label = encode_binary_label(y) > 0.0
        except ValueError:
            raise ValueError(
                f"{type(self).__name__} is binary: labels must be bool, 0/1 or -1/+1, got {y!r}"
            ) from None
        if self._calibrator is not None and check_sample_weight(w):
            self._calibrator.learn(self._raw_one(x), label)  # x validated first
        self._learn(x, label, w)

    def predict_proba_one(self, x: dict) -> dict:
        y_hat = self._raw_one(x)
        if self._calibrator is None:
            p = float(self._loss.mean_func(y_hat))
        else:
            p = self._calibrator.proba(y_hat)
        return {False: 1.0 - p, True: p}

    def predict_one(self, x: dict) -> bool:
        return self._raw_one(x) > 0.0

    def decision_function_one(self, x: dict) -> float:
        """The raw prediction y_hat = w . x (the intercept included)."""
        return self._raw_one(x)


class RegressionMixin(base.Regressor):
    """Real targets; the prediction is the raw y_hat."""

    _loss_kind = optim.losses.RegressionLoss

    def learn_one(self, x: dict, y: float, w: float = 1.0) -> None:
        self._learn(x, check_target(y), w)

    def predict_one(self, x: dict) -> float:
        return self._raw_one(x)
