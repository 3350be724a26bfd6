"""Multiclass Passive-Aggressive learner with one prototype per label.

Source: K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer (2006), Online
Passive-Aggressive Algorithms, JMLR 7: 551-585. Section 7 (multiclass with the single
most-violated constraint, multi-prototype form) and Section 8 (its cost-sensitive form, of
which the plain multiclass PA is the max-loss update with the 0/1 cost).

"""

from __future__ import annotations

import numpy as np
from river import base

from river_pa.multiclass import _numba
from river_pa.multiclass.base import ArgmaxPrediction, MultiPrototype, ScoringClassifier

__all__ = ["MarginClassifier", "PAMultiClassifier"]


class MarginClassifier(ArgmaxPrediction, MultiPrototype, base.MiniBatchClassifier):
    """Multi-prototype classifier whose label y must beat label r by a margin M[y, r].

    Subclasses give `_rule` (a `_multikernels` update rule) and `_pair_margin(y, r)`, the
    margin sqrt(rho(y, r)) for y != r. The margin matrix grows with the labels (amortised).

    """

    _multiclass = True
    _rule = _numba.MAX_LOSS

    def _pair_margin(self, y, r) -> float:
        raise AttributeError("subclasses define _pair_margin")

    def _setup(self, variant, C, learn_intercept, n_features):
        super()._setup(variant, C, learn_intercept, n_features)
        self._M = np.zeros((self._INITIAL_LABELS, self._INITIAL_LABELS))

    def _grow_labels(self, capacity: int) -> None:
        super()._grow_labels(capacity)
        M = np.zeros((capacity, capacity))
        M[: len(self._M), : len(self._M)] = self._M
        self._M = M

    def _check_new_labels(self, labels) -> list:
        """As `ScoringClassifier._check_new_labels`; also reads (and so validates) the costs
        of the pairs the new labels make."""
        new = super()._check_new_labels(labels)
        for i, label in enumerate(new):
            for r in [*self._classes, *new[:i]]:
                self._pair_margin(label, r), self._pair_margin(r, label)
        return new

    def _add_label(self, label) -> int:
        row = self._labels.get(label)
        if row is not None:
            return row
        ScoringClassifier._check_new_labels(self, [label])
        out = [self._pair_margin(label, r) for r in self._classes]
        into = [self._pair_margin(r, label) for r in self._classes]
        row = super()._add_label(label)
        self._M[row, :row] = out
        self._M[:row, row] = into
        return row

    # -- learning --------------------------------------------------------------------------

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        event = self._labelled_event(x, y, w)
        if event is None:
            return
        row, pos, val, sq, s = event
        tau = _numba.multiclass_step(
            self._variant, self.C * w, self._W, self._b, self._intercept_norm, pos, val, sq, s,
            self._n, row, self._M[row], self._rule
        )
        if tau != 0.0:
            self._version += 1

    def learn_many(self, X, y, w=None, *, columns=None) -> None:
        """Learn from the rows of X in order, exactly as a `learn_one` loop does.

        X: a DataFrame, a 2-D numpy array or a scipy.sparse matrix (`columns`: the feature keys
        of an array's columns, default their numbers); y and w pair with the rows by position.

        """
        batch = self._training_batch(X, y, w, columns)
        if batch is None:
            return
        labels, pos, values, sw = batch
        n_before = self._n
        rows = np.array([self._add_label(label) for label in labels], dtype=np.int64)
        n_at = np.maximum.accumulate(np.maximum(rows + 1, n_before)) if len(rows) else rows
        _numba.multiclass_dense(
            self._variant, self.C, self._W, self._b, self._intercept_norm, pos, values, rows,
            n_at, self._M, self._rule, sw
        )
        self._version += 1


class PAMultiClassifier(MarginClassifier):
    """Multiclass Passive-Aggressive classifier (PA, PA-I, PA-II), one prototype per label.

    Each label r has a weight vector w_r and an intercept b_r; the score of r is
    s_r = w_r . x + b_r and the prediction is the label of highest score (the first seen wins a
    tie). On an event (x, y) with s the highest-scoring *other* label, the loss is
    l = max(0, 1 - (s_y - s_s)) and the update w_y += tau x, w_s -= tau x (intercepts by tau)
    with ||Phi(x, y) - Phi(x, s)||^2 = 2 (||x||^2 + 1):

    * PA: tau = l / (2 (||x||^2 + 1))
    * PA-I: tau = min(C, l / (2 (||x||^2 + 1)))
    * PA-II: tau = l / (2 (||x||^2 + 1) + 1 / (2C))

    (Crammer et al. 2006, Section 7, the single most-violated constraint in the multi-prototype
    form.) The intercept is the weight of a constant feature of value 1 counted in ||x||^2, as
    in `PAClassifier`, so a hard PA step leaves y exactly 1 above s. With
    `learn_intercept=False` the "+ 1" terms vanish.

    Labels are any hashable values (str, int, bool, tuples, ...). A label seen for the first
    time gets a fresh zero prototype before the update, so it competes at once.
    `predict_proba_one` covers every label seen: P(r) = softmax(s)_r = exp(s_r) / sum exp(s_k),
    a fixed link of the scores (not a calibrated probability) without calibration, softmax(a s)
    with `calibration="temperature"` (then `learn_many` is a `learn_one` loop). Before any label is seen
    `predict_one` returns None and `predict_proba_one` {}.

    Batches: `learn_many`, `predict_many` and `predict_proba_many` take a pandas DataFrame, a
    2-D numpy array or a scipy.sparse matrix (`columns=` names an array's features once; by
    default they are the column numbers; a sparse row holds its stored entries); anything else
    is a TypeError. Targets and weights pair with the rows by position, not by pandas index
    (as in River). `learn_many` equals a `learn_one` loop over the rows.

    Parameters
    ----------
    variant
        "PA", "PA-I" or "PA-II".
    C
        Aggressiveness (> 0); unused by PA.
    learn_intercept
        Whether each label learns an intercept.
    n_features
        None for a growable vocabulary of feature keys; a power of two for the hashing trick, at most 2**26
        (`river_pa._core.features.MAX_FEATURES`; more raises ValueError).
    calibration
        None or "temperature": probabilities softmax(a s), the temperature 1/a fitted online on
        the progressive scores of the labelled events (`river_pa._core.calibration`).
    max_classes
        The most labels the learner will hold (default 1,000): a label past it raises
        `river_pa._core.validation.TooManyClassesError` (a ValueError) and changes nothing.
        Memory grows with the labels (a weight row each, and a labels x labels margin matrix), so whoever writes the labels
        bounds it through this.
    categorical
        Whether a string value is a category, the one-hot feature ``(key, value)`` of value 1,
        as in `PAClassifier` (River's ``OneHotEncoder`` in front, without it).

    Notes
    -----
    `learn_one(x, y, w)` takes a sample weight that scales C, as in `PAClassifier`; w = 0
    registers the label and changes no weight. Feature values must be real numbers (or
    strings with `categorical`): anything else raises TypeError, NaN and infinities ValueError, naming the feature; an unhashable
    label raises TypeError; the model is unchanged after a rejected event.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> import river_pa

    >>> model = preprocessing.StandardScaler() | river_pa.PAMultiClassifier(C=0.01)
    >>> evaluate.progressive_val_score(datasets.ImageSegments(), model, metrics.Accuracy())
    Accuracy: 86.01%

    One hard PA step leaves the true label exactly 1 above the other:

    >>> model = river_pa.PAMultiClassifier(variant="PA")
    >>> model.learn_one({"a": 1.0}, "cat")
    >>> model.learn_one({"a": 1.0}, "dog")
    >>> model.decision_function_one({"a": 1.0})
    {'cat': -0.5, 'dog': 0.5}
    >>> model.predict_one({"a": 1.0})
    'dog'

    With `categorical`, string values are one-hot features:

    >>> model = river_pa.PAMultiClassifier(variant="PA", categorical=True)
    >>> model.learn_one({"colour": "red", "size": 1.0}, "apple")
    >>> model.learn_one({"colour": "yellow", "size": 1.0}, "banana")
    >>> model.predict_one({"colour": "yellow", "size": 1.0})
    'banana'

    """

    def _pair_margin(self, y, r) -> float:
        return 1.0
