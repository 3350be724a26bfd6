"""State and event handling shared by the linear learners: weights, intercept, feature index.

A `SparseLinear` keeps its weights in a numpy float64 array addressed through a
`river_pa._features.FeatureIndex`, and its intercept as the weight of a constant feature of
value 1. It turns a feature dict into ``(positions, values)`` arrays, caching the positions of
the last key tuple (fixed-schema streams repeat it) and the margin of the last event, so that
``predict_one(x)`` followed by ``learn_one(x, y)`` computes ``w . x`` once.

"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_numeric_dtype

from river_pa import _kernels
from river_pa._features import Hashing, make_index, merge_duplicates, to_values

VARIANTS = {"PA": _kernels.PA, "PA-I": _kernels.PA_I, "PA-II": _kernels.PA_II}

_CACHE = ("_keys", "_pos", "_dups", "_vals", "_epos", "_val", "_margin", "_sq", "_version_seen")


def check_variant(variant: str) -> int:
    """The kernel code of a variant name, or a ValueError listing the valid names."""
    try:
        return VARIANTS[variant]
    except (KeyError, TypeError):
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}") from None


def check_positive(name: str, value) -> None:
    """Raise a ValueError naming `name` unless `value` is a finite number > 0."""
    if not isinstance(value, int | float) or not 0 < value < float("inf"):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def check_sample_weight(w) -> float:
    """The sample weight as a float; a ValueError unless it is finite and >= 0."""
    if not isinstance(w, int | float | np.number) or not 0 <= w < float("inf"):
        raise ValueError(f"sample weight w must be a finite number >= 0, got {w!r}")
    return float(w)


def frame_arrays(X: pd.DataFrame, index, learn: bool) -> tuple[np.ndarray, np.ndarray]:
    """(positions, values) of a DataFrame's columns through `index`, validated.

    Columns must be numeric or bool and finite (TypeError / ValueError naming the column,
    raised before `index` changes). With `learn` the column keys are inserted into `index`.
    Columns sharing a position (hash collisions) are summed, in order of first occurrence, as
    `merge_duplicates` does for one event. Returns positions (int64, cols) and a C-contiguous
    float64 matrix (rows x cols).

    """
    for col in X.columns:
        dtype = X[col].dtype
        if not (is_numeric_dtype(dtype) or is_bool_dtype(dtype)):
            raise TypeError(f"feature {col!r} has non-numeric dtype {dtype}")
    values = X.to_numpy(dtype=np.float64)
    finite = np.isfinite(values).all(axis=0)
    if not finite.all():
        col = X.columns[int(np.argmin(finite))]
        raise ValueError(f"feature {col!r} has non-finite values")
    keys = tuple(X.columns)
    pos = index.insert(keys) if learn else index.lookup(keys)
    if len(set(pos.tolist())) < len(pos):
        uniq, first, inverse = np.unique(pos, return_index=True, return_inverse=True)
        rank = np.argsort(np.argsort(first))
        merged = np.zeros((len(values), len(uniq)))
        for j in range(len(pos)):
            merged[:, rank[inverse[j]]] += values[:, j]
        pos, values = uniq[np.argsort(first)], merged
    return pos, np.ascontiguousarray(values)


class SparseLinear:
    """Weights over dict features: a numpy array, an intercept and a feature index.

    Subclasses set `_task` (a `river_pa._kernels` task code) and call `_setup` in `__init__`.

    """

    _task: int
    _INITIAL_CAPACITY = 64

    def _setup(self, variant, C, epsilon, learn_intercept, n_features):
        self._variant = check_variant(variant)
        check_positive("C", C)
        if not isinstance(epsilon, int | float) or not 0 <= epsilon < float("inf"):
            raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
        self._index = make_index(n_features)
        size = self._index.size if n_features else self._INITIAL_CAPACITY
        self._w = np.zeros(size)
        self.intercept = 0.0
        self._intercept_norm = 1.0 if learn_intercept else 0.0
        self._version = 0
        self._clear_cache()

    def _clear_cache(self):
        self._keys = self._vals = None
        self._pos = self._epos = self._val = None
        self._dups = False
        self._margin = self._sq = 0.0
        self._version_seen = -1

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in _CACHE:
            state.pop(name, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._clear_cache()

    # -- events ----------------------------------------------------------------------------

    def _positions(self, keys: tuple) -> np.ndarray:
        """Positions of `keys` for prediction, cached for the last key tuple."""
        if keys != self._keys:
            self._pos = self._index.lookup(keys)
            self._keys = keys
            self._dups = isinstance(self._index, Hashing) and len(set(self._pos.tolist())) < len(
                keys
            )
            self._vals = None
        return self._pos

    def _grow(self):
        size = self._index.size
        if size > len(self._w):
            w = np.zeros(max(size, 2 * len(self._w)))
            w[: len(self._w)] = self._w
            self._w = w

    def _event(self, x: dict, learn: bool = False):
        """(positions, values, margin, ||x||^2) of the event `x`, validated.

        With `learn`, keys never seen get positions (after validation, so a rejected event
        leaves the model unchanged). Unseen keys sit at the sink, of weight 0, until then, so
        the margin and the norm stay valid.

        """
        pos = self._positions(tuple(x))
        vals = tuple(x.values())
        if vals != self._vals or self._version_seen != self._version:
            val = to_values(x)
            if self._dups:
                pos, val = merge_duplicates(pos, val)
            s, q = _kernels.dot_sq(self._w, pos, val)
            self._vals, self._epos, self._val = vals, pos, val
            self._margin, self._sq = self.intercept + s, q
            self._version_seen = self._version
        if learn and not self._index.known(self._pos):
            self._pos = self._epos = self._index.insert(self._keys)
            self._grow()
        return self._epos, self._val, self._margin, self._sq

    def _margin_one(self, x: dict) -> float:
        return self._event(x)[2]

    def _learn_event(self, x: dict, y: float, w: float):
        w = check_sample_weight(w)
        if w == 0.0:
            return
        pos, val, margin, sq = self._event(x, learn=True)
        b, step = _kernels.update(
            self._task, self._variant, self._w, self.intercept, self._intercept_norm, pos, val,
            margin, sq, y, self.C * w, self._epsilon
        )
        if step != 0.0:
            self.intercept = b
            self._version += 1

    # -- batches ---------------------------------------------------------------------------

    def _batch(self, X: pd.DataFrame, learn: bool):
        """(positions, values) of a DataFrame's columns, validated; duplicates merged."""
        pos, values = frame_arrays(X, self._index, learn)
        if learn:
            self._grow()
        return pos, values

    def _margins_many(self, X: pd.DataFrame) -> np.ndarray:
        pos, values = self._batch(X, learn=False)
        return _kernels.margins_dense(self._w, self.intercept, pos, values)

    def _learn_batch(self, X: pd.DataFrame, y: np.ndarray, w) -> None:
        if len(y) != len(X):
            raise ValueError(f"X has {len(X)} rows but y has {len(y)}")
        if w is None:
            sw = np.ones(len(X))
        else:
            sw = np.asarray(w, dtype=np.float64)
            if len(sw) != len(X) or not (np.isfinite(sw).all() and (sw >= 0).all()):
                raise ValueError("sample weights w must be finite, >= 0 and one per row of X")
        pos, values = self._batch(X, learn=True)
        _, self.intercept = _kernels.learn_dense(
            self._task, self._variant, self.C, self._epsilon, self._w, self.intercept,
            self._intercept_norm, pos, values, y, sw
        )
        self._version += 1

    # -- inspection ------------------------------------------------------------------------

    @property
    def weights(self) -> dict:
        """The non-zero weights, by feature key (by position when hashing)."""
        keys = getattr(self._index, "positions", None)
        if keys is None:
            return {int(i): float(self._w[i]) for i in np.flatnonzero(self._w)}
        return {k: float(self._w[i]) for k, i in keys.items() if self._w[i] != 0.0}
