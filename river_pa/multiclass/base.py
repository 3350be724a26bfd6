"""State and event handling shared by the multi-prototype linear learners.

A `MultiPrototype` keeps one weight row per label in a float64 matrix (label rows x feature
positions) and one intercept per label, addressed through a `river_pa._core.features.FeatureIndex`
exactly as `SparseLinear` addresses its weight vector (position 0 is the sink of unseen keys).
Labels map to rows through a plain dict, in order of first appearance; the matrix grows
amortised (doubling) in both directions. The intercept of a label is the weight of a constant
feature of value 1, so it counts in ||x||^2, as in `PAClassifier`.

Like `SparseLinear`, it caches the positions of the last key tuple and the scores of the last
event, so that ``predict_one(x)`` followed by ``learn_one(x, y)`` scores ``x`` once, and it
validates an event completely before changing anything.

"""

from __future__ import annotations

import numpy as np

from river_pa._core.calibration import learn_rows, make_calibrator
from river_pa.mixing import MixSpec
from river_pa.multiclass import _numba
from river_pa._core.features import make_index
from river_pa._core.cache import EventCache
from river_pa._core.categorical import check_categorical
from river_pa._core.batch import as_series, frame_arrays, row_index
from river_pa._core.validation import (
    MAX_CLASSES,
    check_class_room,
    check_count,
    check_label,
    check_positive,
    check_sample_weight,
    check_sample_weights,
    check_variant,
)



def softmax(s: np.ndarray) -> np.ndarray:
    """exp(s - max s), normalised (float64, same shape)."""
    e = np.exp(s - s.max())
    return e / e.sum()


def label_weights(W: np.ndarray, labels: dict, index) -> dict:
    """The non-zero weights of the rows of W (label rows x positions), {label: {feature key
    (position when hashing): weight}}."""
    keys = getattr(index, "positions", None)
    out = {}
    for label, row in labels.items():
        w = W[row]
        if keys is None:
            out[label] = {int(i): float(w[i]) for i in np.flatnonzero(w)}
        else:
            out[label] = {k: float(w[i]) for k, i in keys.items() if w[i] != 0.0}
    return out


class ScoringClassifier(EventCache):
    """A label set with one score per label, and the event cache around the scores.

    Subclasses create `_index` and call `_setup_labels` and `_clear_cache` in their setup, and
    define `_grow_labels(capacity)` (room for that many label rows), `_grow()` (room for every
    feature position), `_score_event(pos, val)` -> (||x||^2, scores of the n labels) and
    `_scores_many(X)` (rows x n). The event cache (`EventCache`) keeps ||x||^2 and the scores
    of the last event until the model changes.

    """

    _INITIAL_LABELS = 4
    _TRANSIENT = (*EventCache._TRANSIENT, "_sq", "_scores")

    def _setup_labels(self):
        check_count("max_classes", self.max_classes)
        self._labels: dict = {}
        self._classes: list = []
        self._label_capacity = self._INITIAL_LABELS
        self._version = 0

    def _clear_cache(self):
        super()._clear_cache()
        self._scores = None
        self._sq = 0.0

    def _on_event(self, pos, val) -> None:
        self._sq, self._scores = self._score_event(pos, val)

    @property
    def _n(self) -> int:
        return len(self._classes)

    def _add_label(self, label) -> int:
        """The row of `label`, giving it a fresh (zero) row first if it is new."""
        row = self._labels.get(label)
        if row is not None:
            return row
        self._check_new_labels([label])  # raises before any change
        row = self._n
        if row == self._label_capacity:
            self._label_capacity *= 2
            self._grow_labels(self._label_capacity)
        self._labels[label] = row
        self._classes.append(label)
        self._version += 1
        return row

    def _check_new_labels(self, labels) -> list:
        """The distinct labels of `labels` not seen yet, in order; nothing changes.

        TypeError for an unhashable label, ValueError for a missing one (see `check_label`),
        `TooManyClassesError` when they would take the learner past `max_classes` classes.

        """
        for label in labels:
            check_label(label)
        new = [label for label in dict.fromkeys(labels) if label not in self._labels]
        check_class_room(self, self._n, new)
        return new

    def _scores_one(self, x: dict) -> np.ndarray:
        self._event(x)
        return self._scores

    def _labelled_event(self, x: dict, y, w):
        """(label row, positions, values, ||x||^2, scores) of a training event, or None when
        the sample weight is 0. `x` is validated before the label can change the model; a new
        label gets its row (with w = 0 too) and new keys their positions, after the check that
        the keys fit (`TooManyFeaturesError` left the new label in place)."""
        w = check_sample_weight(w)
        self._event(x)
        if w:
            self._index.check_room(self._n_unseen)
        row = self._add_label(y)
        if w == 0.0:
            return None
        if self._version_seen != self._version:  # a new label: the scores get its row
            self._event(x, learn=True)
        elif self._n_unseen:  # what `_event(x, learn=True)` does on the event just scored
            self._insert_unseen(self._keys)
        if self._calibrator is not None:  # the progressive scores, before the step
            self._calibrator.learn_scores(self._scores, row)
        return row, self._epos, self._val, self._sq, self._scores

    def _batch(self, X, n_targets: int, w, columns=None):
        """Validated (positions, values, sample weights) of a batch (a DataFrame, a 2-D numpy
        array or a scipy.sparse matrix, see `frame_arrays`), keys inserted."""
        rows = X.shape[0]
        if n_targets != rows:
            raise ValueError(f"X has {rows} rows but y has {n_targets}")
        sw = check_sample_weights(w, rows)
        pos, values = frame_arrays(X, self._index, learn=True, grow=self._grow, columns=columns)
        return pos, values, sw

    def _training_batch(self, X, y, w, columns):
        """(labels, positions, values, sample weights) of a training batch, validated before
        any change; None once a calibrated learner has learned it as a `learn_one` loop (its
        calibrator needs each row's scores before that row is learned)."""
        if self._calibrator is not None:
            learn_rows(self, X, y, w, columns)
            return None
        labels = list(y)
        self._check_new_labels(labels)
        return (labels, *self._batch(X, len(labels), w, columns))

    @property
    def classes(self) -> list:
        """Labels seen so far, in row order."""
        return list(self._classes)


class ArgmaxPrediction:
    """Single-label prediction from the scores of a `ScoringClassifier`: the label of highest
    score (the first seen wins a tie); probabilities softmax(scores) over every label seen, or
    softmax(a scores) with `_calibrator` (a fitted online); None and {} before any label."""

    def decision_function_one(self, x: dict) -> dict:
        """{label: score} for every label seen."""
        return dict(zip(self._classes, self._scores_one(x).tolist()))

    def predict_proba_one(self, x: dict) -> dict:
        s = self._scores_one(x)
        if not len(s):
            return {}
        p = softmax(s) if self._calibrator is None else self._calibrator.softmax(s)
        return dict(zip(self._classes, p.tolist()))

    def predict_one(self, x: dict):
        s = self._scores_one(x)
        if not len(s):
            return None
        return self._classes[_numba.argmax(s, len(s))]

    def predict_proba_many(self, X, *, columns=None) -> pd.DataFrame:
        """A column of probabilities per label seen, on X's index (0..n-1 for an array)."""
        S = self._scores_many(X, columns)
        if S.shape[1] and self._calibrator is not None:
            S = self._calibrator.softmax_rows(S)
        elif S.shape[1]:
            S = np.exp(S - S.max(axis=1, keepdims=True))
            S /= S.sum(axis=1, keepdims=True)
        import pandas as pd

        return pd.DataFrame(S, index=row_index(X), columns=self.classes)

    def predict_many(self, X, *, columns=None):
        """The predicted labels: a Series for a DataFrame X, else an object array (None
        before any label)."""
        S = self._scores_many(X, columns)
        if not S.shape[1]:
            return as_series(X, np.full(S.shape[0], None, dtype=object))
        classes = np.empty(self._n, dtype=object)
        classes[:] = self._classes
        return as_series(X, classes[S.argmax(axis=1)])


class MultiPrototype(ScoringClassifier):
    """Weight rows per label over dict features, with the constructor of the linear learners."""

    _INITIAL_CAPACITY = 64
    # the pair margins M of MarginClassifier follow from the labels: `_add_label` sets them
    _MIX = MixSpec({"_W": ("label", "feature"), "_b": ("label",)}, labels="_classes",
                   add_label="_add_label")

    def __init__(
        self,
        variant: str = "PA-I",
        C: float = 1.0,
        learn_intercept: bool = True,
        n_features: int | None = None,
        calibration: str | None = None,
        max_classes: int = MAX_CLASSES,
        categorical: bool = False,
    ):
        self.variant = variant
        self.C = C
        self.learn_intercept = learn_intercept
        self.n_features = n_features
        self.calibration = calibration
        self._calibrator = make_calibrator(calibration)
        self.max_classes = max_classes
        check_categorical(categorical)
        self.categorical = categorical
        self._setup(variant, C, learn_intercept, n_features)

    @classmethod
    def _unit_test_params(cls):
        yield {"variant": "PA-I", "C": 0.1}
        yield {"variant": "PA"}
        yield {"variant": "PA-II", "C": 0.5, "learn_intercept": False, "n_features": 2**12}
        yield {"categorical": True, "n_features": 2**12}

    def _setup(self, variant, C, learn_intercept, n_features):
        self._variant = check_variant(variant)
        check_positive("C", C)
        self._index = make_index(n_features)
        size = self._index.size if n_features else self._INITIAL_CAPACITY
        self._W = np.zeros((self._INITIAL_LABELS, size))
        self._b = np.zeros(self._INITIAL_LABELS)
        self._intercept_norm = 1.0 if learn_intercept else 0.0
        self._setup_labels()
        self._clear_cache()

    def _grow_labels(self, capacity: int) -> None:
        W = np.zeros((capacity, self._W.shape[1]))
        W[: len(self._W)] = self._W
        self._W = W
        self._b = np.concatenate([self._b, np.zeros(capacity - len(self._b))])

    def _grow(self, size: int):
        cols = self._W.shape[1]
        if size > cols:
            W = np.zeros((self._W.shape[0], max(size, 2 * cols)))
            W[:, :cols] = self._W
            self._W = W

    def _score_event(self, pos, val):
        s = np.empty(self._n)
        return _numba.scores(self._W, self._b, self._n, pos, val, s), s

    def _scores_many(self, X, columns=None) -> np.ndarray:
        pos, values = frame_arrays(X, self._index, learn=False, columns=columns)
        return _numba.scores_dense(self._W, self._b, self._n, pos, values)

    # -- inspection ------------------------------------------------------------------------

    @property
    def weights(self) -> dict:
        """The non-zero weights, {label: {feature key (position when hashing): weight}}."""
        return label_weights(self._W, self._labels, self._index)

    @property
    def intercepts(self) -> dict:
        """{label: intercept}."""
        return {label: float(self._b[row]) for label, row in self._labels.items()}

