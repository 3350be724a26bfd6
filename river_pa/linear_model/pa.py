"""Binary classification and regression Passive-Aggressive learners.

Source: K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer (2006), Online
Passive-Aggressive Algorithms, JMLR 7: 551-585. Sections 3 (binary classification, Figure 1) and
5 (regression with the epsilon-insensitive loss).

"""

from __future__ import annotations

import numpy as np
from river import base
from river.utils.math import sigmoid

from river_pa._core.batch import as_series
from river_pa._core.calibration import learn_rows, make_calibrator
from river_pa._core.categorical import check_categorical
from river_pa.linear_model import _numba
from river_pa.linear_model.base import SparseLinear, check_sample_weight
from river_pa._core.validation import (
    check_target,
    check_targets,
    encode_binary_label,
    encode_binary_labels,
)

__all__ = ["PAClassifier", "PARegressor", "encode_binary_label"]


class PAClassifier(SparseLinear, base.MiniBatchClassifier):
    """Passive-Aggressive binary classifier (PA, PA-I, PA-II) over dict features.

    On each event the weights move the least distance that puts the example at margin 1
    (PA), or as close to it as the aggressiveness `C` allows (PA-I, PA-II):
    w <- w + tau y x with the hinge loss l = max(0, 1 - y (w . x + b)) and

    * PA: tau = l / ||x||^2
    * PA-I: tau = min(C, l / ||x||^2)
    * PA-II: tau = l / (||x||^2 + 1 / (2C))

    (Crammer et al. 2006, Section 3, Figure 1.) The intercept b is the weight of a constant
    feature of value 1 and counts in ||x||^2 (which is 1 + the sum of squared values), so every
    step is the paper's exact projection: after a hard PA step the example sits at margin 1.
    River's and scikit-learn's PA add the step to the intercept but leave it out of the norm,
    so their steps overshoot (margin 1.2 or 2.0 after one hard step).

    Parameters
    ----------
    variant
        "PA", "PA-I" or "PA-II".
    C
        Aggressiveness (> 0): the largest step of PA-I, the slack penalty of PA-II. Unused by PA.
    learn_intercept
        Whether to learn the intercept (the constant feature).
    n_features
        None for a growable vocabulary of feature keys; a power of two for the hashing trick
        over that many positions (a stable CRC-32 hash: the same in every process), at most 2**26
        (`river_pa._core.features.MAX_FEATURES`; more raises ValueError).
    calibration
        None or "temperature": P(True) from a Bayesian mixture of sigmoid(a m) over inverse
        temperatures a and of a histogram of them, fitted online on the progressive margins of
        the labelled events (`river_pa._core.calibration.MarginMixture`); predictions unchanged.
    categorical
        Whether a string value is a category: ``{"country": "FR"}`` is then the feature
        ``("country", "FR")`` of value 1 (a list or set of strings, one such feature per
        string), in the vocabulary or hashed, exactly what River's ``OneHotEncoder`` in front
        of the string features would give (`river_pa._core.categorical.one_hot`). Numbers are
        unchanged; None stays a TypeError. Without it a string value is a TypeError.

    Notes
    -----
    Labels may be bool, 0/1 or -1/+1: all three give the same model. Any other label raises a
    ValueError that points to `PAMultiClassifier`. `learn_one(x, y, w)` takes a sample weight
    that scales C: PA-I uses tau = min(w C, l / ||x||^2), PA-II tau = l / (||x||^2 + 1/(2 w C));
    hard PA makes the full projection for any w > 0; w = 0 does nothing.

    Without calibration, `predict_proba_one` maps the margin m = w . x + b to P(True) =
    1 / (1 + exp(-m)), a fixed logistic link (not a calibrated probability: PA optimises the
    hinge loss); with `calibration="temperature"` it is calibrated online on the margins each
    event had before it was learned, and above 1/2 exactly when m > 0. `predict_one` is True
    exactly when m > 0.
    With calibration, `learn_many` is a `learn_one` loop.

    Feature values must be real numbers (int, float, bool, numpy scalars), or strings with
    `categorical`: anything else raises TypeError, NaN and infinities raise ValueError, both naming the feature; the model is
    unchanged after a rejected event. An empty dict is valid: the intercept alone predicts.

    `learn_many(X, y, w)` runs the rows of a batch in order in compiled code and leaves exactly
    the weights of a `learn_one` loop over its rows as dicts; `predict_many` and
    `predict_proba_many` equal `predict_one` and `predict_proba_one` row by row. X is a pandas
    DataFrame (River's convention; dense numeric columns, or only pandas sparse columns of fill
    value 0: each row is then the dict of its non-zero entries), a 2-D numpy array (each row
    the dict of all its columns) or a scipy.sparse matrix (each row the dict of its stored
    entries, in their stored order); for arrays the feature keys are ``columns=`` (given once
    per call) or the column numbers, and the predictions come back as numpy arrays. The
    vocabulary is looked up once per column. With hash collisions inside a row, its sums may
    differ from `learn_one` in the last bits. `progressive_csr` is the predict-then-learn loop
    over CSR arrays in one call.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics
    >>> import river_pa

    >>> model = river_pa.PAClassifier(variant="PA-I", C=0.1)
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 87.52%

    One hard PA step puts the example exactly at margin 1:

    >>> model = river_pa.PAClassifier(variant="PA")
    >>> model.learn_one({"a": 1.0}, True)
    >>> model.predict_one({"a": 1.0}), model.weights, model.intercept
    (True, {'a': 0.5}, 0.5)

    With `categorical`, a string value is a one-hot feature, with no encoder in front: here
    ||x||^2 = 1 + 2^2 + 1 (the intercept, "age" and ("country", "FR")), so tau = 1/6:

    >>> model = river_pa.PAClassifier(variant="PA", categorical=True)
    >>> model.learn_one({"age": 2.0, "country": "FR"}, True)
    >>> model.weights
    {'age': 0.3333333333333333, ('country', 'FR'): 0.16666666666666666}
    >>> model.predict_one({"age": 2.0, "country": "FR"}), model.predict_one({"country": "DE"})
    (True, True)
    >>> river_pa.PAClassifier().learn_one({"country": "FR"}, True)
    Traceback (most recent call last):
    ...
    TypeError: feature 'country' has a non-numeric value 'FR' of type str

    """

    _task = _numba.CLASSIFY
    _epsilon = 0.0

    def __init__(
        self,
        variant: str = "PA-I",
        C: float = 1.0,
        learn_intercept: bool = True,
        n_features: int | None = None,
        calibration: str | None = None,
        categorical: bool = False,
    ):
        self.variant = variant
        self.C = C
        self.learn_intercept = learn_intercept
        self.n_features = n_features
        self.calibration = calibration
        check_categorical(categorical)
        self.categorical = categorical
        self._calibrator = make_calibrator(calibration, binary=True)
        self._setup(variant, C, 0.0, learn_intercept, n_features)

    @classmethod
    def _unit_test_params(cls):
        yield {"variant": "PA-I", "C": 0.1}
        yield {"variant": "PA"}
        yield {"variant": "PA-II", "C": 0.5, "learn_intercept": False, "n_features": 2**12}
        yield {"calibration": "temperature"}
        yield {"categorical": True}
        yield {"categorical": True, "n_features": 2**12}

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        label = encode_binary_label(y)
        if self._calibrator is None or not check_sample_weight(w):
            return self._learn_event(x, label, w)
        margin = self._margin_one(x)  # the progressive margin, before the step
        self._learn_event(x, label, w)  # a refused event (e.g. too many new keys) changes
        self._calibrator.learn(margin, label > 0.0)  # nothing, the calibrator included

    _targets = staticmethod(encode_binary_labels)

    def predict_proba_one(self, x: dict) -> dict:
        m = self._margin_one(x)
        p = float(sigmoid(m)) if self._calibrator is None else self._calibrator.proba(m)
        return {False: 1.0 - p, True: p}  # float(): River's sigmoid is the int 0/1 past |m| > 30

    def predict_one(self, x: dict) -> bool:
        return self._margin_one(x) > 0.0

    def decision_function_one(self, x: dict) -> float:
        """The margin w . x + b."""
        return self._margin_one(x)

    def learn_many(self, X, y, w=None, *, columns=None) -> None:
        """Learn from the rows of X in order, exactly as a `learn_one` loop does.

        X: a DataFrame, a 2-D numpy array or a scipy.sparse matrix (see the class docstring);
        `columns`: the feature keys of an array's columns (default: the column numbers).

        """
        if self._calibrator is not None:
            learn_rows(self, X, y, w, columns)
            return
        self._learn_batch(X, encode_binary_labels(y), w, columns)

    def predict_proba_many(self, X, *, columns=None):
        """P(False), P(True) per row: a DataFrame for a DataFrame X, else an (n, 2) array."""
        # River's scalar sigmoid, row by row: bit-for-bit the probabilities of predict_proba_one
        link = sigmoid if self._calibrator is None else self._calibrator.proba
        m = self._margins_many(X, columns)
        p = np.fromiter(map(link, m.tolist()), np.float64, len(m))
        if not _is_frame(X):
            return np.column_stack([1.0 - p, p])
        import pandas as pd

        return pd.DataFrame({False: 1.0 - p, True: p}, index=X.index, columns=[False, True])

    def predict_many(self, X, *, columns=None):
        """The predicted labels: a Series for a DataFrame X, else a bool array."""
        return as_series(X, self._margins_many(X, columns) > 0.0)


class PARegressor(SparseLinear, base.MiniBatchRegressor):
    """Passive-Aggressive regressor with the epsilon-insensitive loss (PA, PA-I, PA-II).

    With the prediction m = w . x + b and the loss l = max(0, |m - y| - epsilon), the update
    w <- w + sign(y - m) tau x projects the weights onto the slab |w . x - y| <= epsilon (PA),
    with tau as in `PAClassifier` (Crammer et al. 2006, Section 5). The intercept is a constant
    feature counted in ||x||^2, so one hard PA step lands the prediction exactly on the slab's
    edge. River's own PARegressor maps the target to 2y - 1 (a classification leftover) and
    predicts 9.0 where this one predicts 5.0 in the example below.

    Parameters
    ----------
    variant
        "PA", "PA-I" or "PA-II".
    C
        Aggressiveness (> 0); unused by PA.
    epsilon
        Insensitivity (>= 0), in the target's units.
    learn_intercept
        Whether to learn the intercept.
    n_features
        None for a vocabulary, a power of two for the hashing trick, at most 2**26
        (`river_pa._core.features.MAX_FEATURES`; more raises ValueError).
    categorical
        Whether a string value is a one-hot feature, as in `PAClassifier`.

    Notes
    -----
    Sample weights, bad input, empty dicts and batches behave as in `PAClassifier`; a
    non-numeric target raises TypeError, a non-finite one ValueError.

    Examples
    --------

    >>> import river_pa
    >>> model = river_pa.PARegressor(variant="PA", epsilon=0.0, learn_intercept=False)
    >>> model.learn_one({"a": 1.0}, 5.0)
    >>> model.predict_one({"a": 1.0})
    5.0

    >>> from river import datasets, evaluate, metrics
    >>> model = river_pa.PARegressor(variant="PA-I", C=0.01, epsilon=0.1)
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.227029

    """

    _task = _numba.REGRESS

    def __init__(
        self,
        variant: str = "PA-I",
        C: float = 1.0,
        epsilon: float = 0.1,
        learn_intercept: bool = True,
        n_features: int | None = None,
        categorical: bool = False,
    ):
        self.variant = variant
        self.C = C
        self.epsilon = epsilon
        self.learn_intercept = learn_intercept
        self.n_features = n_features
        check_categorical(categorical)
        self.categorical = categorical
        self._setup(variant, C, epsilon, learn_intercept, n_features)

    @property
    def _epsilon(self) -> float:
        return float(self.epsilon)

    @classmethod
    def _unit_test_params(cls):
        yield {"variant": "PA-I", "C": 0.01}
        yield {"variant": "PA", "epsilon": 0.0}
        yield {"variant": "PA-II", "C": 0.1, "learn_intercept": False, "n_features": 2**12}
        yield {"categorical": True, "n_features": 2**12}

    def learn_one(self, x: dict, y: float, w: float = 1.0) -> None:
        self._learn_event(x, check_target(y), w)

    _targets = staticmethod(check_targets)

    def predict_one(self, x: dict) -> float:
        return self._margin_one(x)

    def learn_many(self, X, y, w=None, *, columns=None) -> None:
        """Learn from the rows of X in order, exactly as a `learn_one` loop does (X as in
        `PAClassifier.learn_many`)."""
        self._learn_batch(X, check_targets(y), w, columns)

    def predict_many(self, X, *, columns=None):
        """The predictions: a Series for a DataFrame X, else a float64 array."""
        return as_series(X, self._margins_many(X, columns))


def _is_frame(X) -> bool:
    return type(X).__module__.startswith("pandas")


