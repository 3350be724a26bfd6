"""State and event handling shared by the linear learners: weights, intercept, feature index.

A `SparseLinear` keeps its weights in a numpy float64 array addressed through a
`river_pa._core.features.FeatureIndex`, and its intercept as the weight of a constant feature of
value 1. With a vocabulary, a dict of str keys and float or int values goes to the C step
(`_dictstep.c`, an optional extension: one call reads the dict, the vocabulary and the weights,
bit for bit the Numba path's result). Anything else turns into ``(positions, values)`` arrays
for the Numba kernels, caching the positions of the last key tuple (fixed-schema streams repeat
it) and the margin of the last event, so that ``predict_one(x)`` followed by
``learn_one(x, y)`` computes ``w . x`` once.

"""

from __future__ import annotations

import numpy as np

from river_pa._core import jit
from river_pa._core.batch import frame_arrays
from river_pa._core.cache import EventCache
from river_pa._core.features import Vocabulary, as_array, cached_columns, make_index
from river_pa._core.validation import (
    check_csr,
    check_nonnegative,
    check_positive,
    check_sample_weight,
    check_sample_weights,
    check_variant,
)
from river_pa.linear_model import _numba
from river_pa.mixing import MixSpec

# the optional C step (pyproject.toml's ext-modules; see _dictstep.c): without it, the Numba
# path below
try:
    from river_pa.linear_model._dictstep import Scan, learn as _c_learn, margin as _c_margin
except ImportError:  # pragma: no cover - a build without a C compiler
    Scan = _c_learn = _c_margin = None

_SHARED = ("two columns of the batch share one weight (equal keys or a hash collision): learn "
           "them one event at a time")


def _overflow(name: str, what: str) -> ValueError:
    return ValueError(f"{name}: the step of {what} would take a weight or the intercept beyond "
                      "the float64 range; it is not taken (rescale the features or the target)")


class SparseLinear(EventCache):
    """Weights over dict features: a numpy array, an intercept and a feature index.

    Subclasses set `_task` (a `river_pa.linear_model._numba` task code) and call `_setup` in
    `__init__`. The event cache (`EventCache`) keeps the margin and ||x||^2 of the last event.

    """

    _task: int
    _INITIAL_CAPACITY = 64
    _PACKED = True
    _TRANSIENT = (*EventCache._TRANSIENT, "_margin", "_sq", "_dict_step")
    _MIX = MixSpec({"_w": ("feature",)}, scalars=("intercept",))

    def _setup(self, variant, C, epsilon, learn_intercept, n_features):
        self._variant = check_variant(variant)
        check_positive("C", C)
        check_nonnegative("epsilon", epsilon)
        self._index = make_index(n_features)
        size = self._index.size if n_features else self._INITIAL_CAPACITY
        self._w = np.zeros(size)
        self.intercept = 0.0
        self._intercept_norm = 1.0 if learn_intercept else 0.0
        self._version = 0
        self._clear_cache()

    def _clear_cache(self):
        super()._clear_cache()
        self._margin = self._sq = 0.0
        # plain dicts take the C step (a vocabulary, no one-hot encoding, the extension built),
        # which keeps the scan of predict_one's event here for learn_one's
        self._dict_step = (Scan() if _c_learn is not None and not self.categorical
                           and self._index.__class__ is Vocabulary else None)

    # -- events ----------------------------------------------------------------------------

    def _grow(self, size: int):
        """Make room for `size` positions, growing by half (amortised O(1))."""
        if size > len(self._w):
            w = np.zeros(max(size, len(self._w) + len(self._w) // 2))
            w[: len(self._w)] = self._w
            self._w = w

    def _on_event(self, pos, val) -> None:
        """Cache w . x + b and ||x||^2 (intercept excluded); unseen keys sit at the sink, of
        weight 0, so both stay valid when they get positions.

        The Numba path, for what the C step (`_c_step`) leaves: hashing, one-hot encoding,
        values other than float and int, keys other than str, errors. In Python this glue (two
        tuples, packing, cache checks, a Numba call of about 0.35 us) cost more than the
        arithmetic on events of a few dozen keys (issue 18), and a plain-Python loop over the
        weights was slower still from 2 keys on (0.65 vs 0.52 us at 2 keys, 1.9 vs 0.53 us at
        20); the C step reads the dict itself.

        """
        dot = _numba.dot_sq_packed if val.__class__ is bytes else _numba.dot_sq
        s, self._sq = dot(self._w, pos, val)
        self._margin = self.intercept + s

    def _margin_one(self, x: dict) -> float:
        if self._dict_step is not None and x.__class__ is dict:
            m = _c_margin(x, self._index.positions, self._w, self.intercept, self._dict_step)
            if m is not None:
                return m
        self._event(x)
        return self._margin

    def _learn_event(self, x: dict, y: float, w: float):
        if w.__class__ is not float or w != 1.0:
            w = check_sample_weight(w)
            if w == 0.0:
                return
        if self._dict_step is not None and x.__class__ is dict and self._c_step(x, y, w):
            return
        self._event(x)
        margin = self._margin
        # skip the kernel when the loss is 0 (no step): classification 1 - y m <= 0, i.e.
        # y m >= 1; regression |m - y| <= epsilon; exact rewrites of the kernels' tests
        passive = (y * margin >= 1.0 if self._task == _numba.CLASSIFY
                   else abs(margin - y) <= self._epsilon)
        if self._n_unseen:  # the keys' new positions hold 0, as the sink they sit at now does
            if not passive:
                self._check_step(y, w)
            self._insert_unseen(self._keys)
        if passive:
            return
        val = self._val
        kernel = _numba.update_packed if val.__class__ is bytes else _numba.update
        b, step = kernel(
            self._task, self._variant, self._w, self.intercept, self._intercept_norm, self._epos,
            val, self._margin, self._sq, y, self.C * w, self._epsilon
        )
        if step != 0.0:
            if step != step:
                raise _overflow(type(self).__name__, "this event")
            self.intercept = b
            self._version += 1

    def _c_step(self, x: dict, y: float, w: float) -> bool:
        """`_learn_event` by the C step, bit for bit; False when it left `x` to the Numba path
        (not a plain dict of str keys and finite float or int values, no room, overflow).
        After `predict_one(x)` it takes that scan's positions when `x` holds the same key
        objects in the same order and the vocabulary has not grown (it reads the values
        again): the lookups cost 1 us of 7 on a text stream of 30 keys in 2^18."""
        index = self._index
        done = _c_learn(x, index.positions, self._w, self.intercept, self._intercept_norm,
                        self._task, self._variant, self.C * w, self._epsilon, y, index.max_keys,
                        self._dict_step)
        if done is None:
            return False
        b, step, n_new = done
        if n_new:
            self._keys = None  # the cached key tuple's positions are stale
        if step != 0.0:
            self.intercept = b
            self._version += 1
        return True

    def _warm_numba_path(self, x: dict, y) -> None:
        """Compile (or load from Numba's cache) the Numba path's kernels, on a fresh clone
        and `x`: the C step leaves events to them (the first whose new keys pass the
        weights' room, numpy values, ...), and the first such event would pay for it (0.9 s
        of compiling). A fresh model learns `x` with its keys new and a step (a regressor's
        target put beyond epsilon): each kernel runs."""
        probe = self.clone()
        probe._dict_step = None
        probe.predict_one(x)
        probe.learn_one(x, y if self._task == _numba.CLASSIFY else self._epsilon + 1.0)

    def _check_step(self, y: float, w: float) -> None:
        """Raise before anything changes if the step on the cached event would leave float64."""
        if not _numba.step_fits(
                self._task, self._variant, self._w, self.intercept, self._intercept_norm,
                self._epos, as_array(self._val), self._margin, self._sq, y, self.C * w,
                self._epsilon):
            raise _overflow(type(self).__name__, "this event")

    # -- batches ---------------------------------------------------------------------------

    def _batch(self, X, learn: bool, columns):
        """(positions, batch) of a DataFrame, array or sparse matrix: see `frame_arrays`."""
        return frame_arrays(X, self._index, learn, allow_sparse=True, grow=self._grow,
                            columns=columns)

    def _margins_many(self, X, columns=None) -> np.ndarray:
        pos, values = self._batch(X, False, columns)
        if isinstance(values, tuple):
            return _numba.margins_csr(self._w, self.intercept, *values)
        kernel = _numba.margins_dense if values.flags.c_contiguous else _numba.margins_dense_f
        return kernel(self._w, self.intercept, pos, values)

    def _learn_batch(self, X, y: np.ndarray, w, columns=None) -> None:
        rows = X.shape[0]
        if len(y) != rows:
            raise ValueError(f"X has {rows} rows but y has {len(y)}")
        sw = check_sample_weights(w, rows)
        pos, values = self._batch(X, True, columns)
        args = (self._task, self._variant, self.C, self._epsilon, self._w, self.intercept,
                self._intercept_norm)
        if isinstance(values, tuple):
            _, self.intercept, bad = _numba.learn_csr(*args, *values, y, sw)
        else:
            kernel = _numba.learn_dense if values.flags.c_contiguous else _numba.learn_dense_f
            _, self.intercept, bad = kernel(*args, pos, values, y, sw)
        self._version += 1
        self._clear_cache()  # cached positions of keys the batch just inserted are stale
        if bad >= 0:
            raise _overflow(type(self).__name__, f"row {bad} (the rows before it are learned)")

    def progressive_csr(self, indptr, indices, data, y, keys, w=None) -> np.ndarray:
        """Progressive validation over a CSR batch in one compiled loop: for each row, its
        margin w . x + b before learning, then the PA update on that row.

        Parameters
        ----------
        indptr
            Integers (n + 1,): row i holds the entries ``indptr[i]:indptr[i + 1]``.
        indices
            Integers (nnz,): the column number of each entry, in 0..len(keys)-1, at most once
            per row.
        data
            Real numbers (nnz,), finite: the feature values.
        y
            n labels as `learn_one` takes them (the classifier: bool, 0/1 or -1/+1; the
            regressor: finite reals).
        keys
            The feature key of each column number (any sequence: ``keys[j]`` is column j's key;
            ``range(d)`` when the keys are the column numbers). Columns get weight positions in
            order of first appearance in the batch, as a `learn_one` loop would give them.
        w
            Optional n sample weights (finite, >= 0), as `learn_one`'s `w`.

        Returns
        -------
        np.ndarray
            The n margins (float64), each predicted before its row was learned.

        The weights, the intercept and the margins are bit for bit those of a
        ``predict_one``/``learn_one`` loop over the rows as dicts ``{keys[j]: value}`` in the
        rows' column order (`decision_function_one` for the classifier); a row of sample weight
        0 adds its keys to the vocabulary (with weight 0) where `learn_one` would skip it.
        Everything is validated before the model changes: TypeError for a wrong dtype,
        ValueError for a bad shape, a repeated or out-of-range column, a non-finite value, a
        bad label or weight, and for two columns of the batch that would share one weight
        (equal keys, or a hash collision with `n_features`): a learn_one loop would merge them
        in the dict, so the caller takes the per-event path for that batch.

        Examples
        --------

        >>> import river_pa
        >>> model = river_pa.PAClassifier(variant="PA")
        >>> model.progressive_csr([0, 1, 3], [0, 0, 1], [1.0, 1.0, 2.0], [True, False],
        ...                       keys=["a", "b"])
        array([0., 1.])
        >>> model.weights, model.intercept
        ({'a': 0.16666666666666669, 'b': -0.6666666666666666}, 0.16666666666666669)

        The first row, {"a": 1}, sits at margin 0, so the hard PA step (tau = 1 / ||x||^2 = 1/2,
        intercept included) puts it at margin 1: the second row's margin is 0.5 + 0.5.

        """
        indptr, data, columns, ranks = check_csr(indptr, indices, data, len(keys))
        n = len(indptr) - 1
        y = self._targets(y)
        if y.shape != (n,):
            raise ValueError(f"y must have one label per row: {len(y)} labels for {n} rows")
        sw = check_sample_weights(w, n)
        if isinstance(self._index, Vocabulary) and cached_columns(keys):
            try:  # one lookup per column never met before (a libsvm file's range(d) keys)
                pos = self._index.column_positions(keys, columns, True, self._grow)
            except ValueError:  # keys name a feature twice
                raise ValueError(_SHARED) from None
        else:
            col_keys = tuple(keys[j] for j in columns.tolist())
            pos, merged = self._index.lookup_unique(col_keys)
            if merged or len(set(col_keys)) < len(col_keys):
                raise ValueError(_SHARED)
            n_new = self._index.n_unseen(pos)
            self._index.check_room(n_new)  # past max_keys: nothing changes
            self._grow(self._index.size + n_new)
            pos = self._index.insert(col_keys)
        margins, self.intercept, bad = jit.kernel(_numba.learn_csr)(
            self._task, self._variant, float(self.C), self._epsilon, self._w, self.intercept,
            self._intercept_norm, indptr, pos[ranks], data, y, sw)
        self._version += 1
        self._clear_cache()
        if bad >= 0:
            raise _overflow(type(self).__name__, f"row {bad} (the rows before it are learned)")
        return margins

    # -- inspection ------------------------------------------------------------------------

    @property
    def weights(self) -> dict:
        """The non-zero weights, by feature key (by position when hashing)."""
        keys = getattr(self._index, "positions", None)
        if keys is None:
            return {int(i): float(self._w[i]) for i in np.flatnonzero(self._w)}
        return {k: float(self._w[i]) for k, i in keys.items() if self._w[i] != 0.0}
