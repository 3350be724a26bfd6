"""Kernel Passive-Aggressive classifier (binary and multiclass), with an optional budget.

Sources: K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer (2006), Online
Passive-Aggressive Algorithms, JMLR 7: 551-585, Sections 7 and 10.3 (kernel multiclass PA on
USPS); Z. Wang and S. Vucetic (2010), Online Passive-Aggressive Algorithms on a Budget,
AISTATS, JMLR W&CP 9: 908-915 (BPA-S budget maintenance); F. Orabona, J. Keshet and B. Caputo
(2009), Bounded Kernel-Based Online Learning, JMLR 10: 2643-2666 (the Projectron's projection).

"""

from __future__ import annotations

import math

import numpy as np
from river import base

from river_pa._core.calibration import make_calibrator
from river_pa.kernel import _numba
from river_pa._core.features import Vocabulary
from river_pa._core.batch import frame_arrays
from river_pa._core.validation import check_count, check_finite, check_positive, check_variant
from river_pa.multiclass.base import MAX_CLASSES, ArgmaxPrediction, ScoringClassifier


class _PositionNames:
    """The feature keys at a batch's positions, read from the vocabulary only when an error
    names one (listing the vocabulary per batch would cost O(vocabulary))."""

    def __init__(self, index: Vocabulary, pos: np.ndarray):
        self.index, self.pos = index, pos

    def __getitem__(self, j: int):
        return self.index.keys()[int(self.pos[j]) - 1]

__all__ = ["KernelPAClassifier"]

KERNELS = {"linear": _numba.LINEAR, "poly": _numba.POLY, "rbf": _numba.RBF}
BUDGET_RULES = {"projectron": _numba.PROJECTRON, "BPA-S": _numba.BPA_S}


def _grown(a: np.ndarray, shape: tuple) -> np.ndarray:
    """A zero array of `shape` with `a` copied into its leading corner."""
    out = np.zeros(shape)
    out[tuple(slice(0, n) for n in a.shape)] = a
    return out


class KernelPAClassifier(ArgmaxPrediction, ScoringClassifier, base.MiniBatchClassifier):
    """Kernel multiclass Passive-Aggressive classifier (PA, PA-I, PA-II), optionally on a budget.

    The score of label r is f_r(x) = sum_i a_ir K(v_i, x) over the support vectors v_i; the
    prediction is the label of highest score. On an event (x, y) with s the highest-scoring
    other label and loss l = max(0, 1 - (f_y(x) - f_s(x))), the update adds x as a support
    vector with coefficient +tau for y and -tau for s, with ||Phi(x, y) - Phi(x, s)||^2 =
    2 K(x, x) and tau as in `PAMultiClassifier` (Crammer et al. 2006, Section 7, in kernel
    form; Section 10.3 runs it on USPS). There is no intercept (coef0 plays that role for the
    polynomial kernel).

    Binary streams (bool or any two labels) use the same rule with two labels: the difference
    f_True - f_False then follows the binary kernel PA exactly for PA, and PA-I / PA-II with
    aggressiveness 2C.

    Without a budget every update adds a support vector, so memory and time per event grow
    with the number of mistakes and margin errors: the limitation the paper names. With
    `budget=B`, memory is fixed at B vectors and time per event flat once B are held; what
    happens then is the `budget_rule`:

    - "projectron" (default; Orabona et al. 2009, the Projectron's projection with the budget
      as its only limit): x is no longer added; the step is taken along the projection of
      Phi(x) onto the span of the support vectors, whose coordinates are d = K^-1 k(x) (K the
      support vectors' kernel matrix, kept inverted as they are added), with tau the PA step
      of ||P Phi(x)||^2 = k(x) . d: the exact PA projection inside the span. Cost O(B^2) per
      update and a B x B matrix (2 MB at B = 500).
    - "BPA-S" (Wang and Vucetic 2010): each new vector replaces the support vector v_i whose
      removal costs the least after its contribution is projected onto the new one: the new
      vector's coefficients get a_i K(v_i, x) / K(x, x) added, and the lost weight norm
      ||a_i||^2 (K(v_i, v_i) - K(v_i, x)^2 / K(x, x)) is the smallest. Cost O(B).

    Measured on stationary digit streams ((x . v)^3, C = 100, budget 500, one pass,
    `examples/kernel_budget.py`): on USPS in file order the projectron's error is 6.24%
    (quarters 8.6, 6.9, 4.7, 4.8%) against 4.66% unbounded, BPA-S's 7.64% (8.1, 7.2, 8.0,
    7.2%); on mnist-5k 13.1% (18.7, 12.6, 9.9, 11.0%) vs 9.7% unbounded, BPA-S 16.2% with a
    last quarter of 19.2%: BPA-S forgets as the stream goes on, the projectron does not.

    Batches: `learn_many`, `predict_many` and `predict_proba_many` take a pandas DataFrame, a
    2-D numpy array or a scipy.sparse matrix (`columns=` names an array's features once; by
    default they are the column numbers; a sparse row holds its stored entries); anything else
    is a TypeError. Targets and weights pair with the rows by position, not by pandas index
    (as in River). `learn_many` equals a `learn_one` loop over the rows.

    Parameters
    ----------
    kernel
        "linear" (x . v), "poly" ((coef0 + gamma x . v) ** degree) or "rbf"
        (exp(-gamma ||x - v||^2)).
    degree
        Degree of the polynomial kernel (an int >= 1).
    gamma
        Scale of the dot product (poly) or inverse width (rbf), > 0.
    coef0
        Constant term of the polynomial kernel (finite).
    variant
        "PA", "PA-I" or "PA-II".
    C
        Aggressiveness (> 0); unused by PA.
    budget
        None (unbounded) or the largest number of support vectors (an int >= 1).
    budget_rule
        "projectron" or "BPA-S": what a full budget does (see above); unused without a budget.
    calibration
        None or "temperature": probabilities softmax(a f(x)) with a fitted online on the progressive
        scores of the labelled events (`river_pa._core.calibration`); `predict_one` unchanged.
    max_classes
        The most labels the learner will hold (default 1,000): a label past it raises
        `river_pa._core.validation.TooManyClassesError` (a ValueError) and changes nothing.
        Memory grows with the labels (a coefficient column each per support vector), so
        whoever writes the labels bounds it through this.

    Notes
    -----
    Support vectors are stored as dense rows over the feature positions of a growing
    vocabulary (position 0, the sink of keys never learned, is always 0), their coefficients
    as a (vectors x labels) matrix, both grown amortised; kernel rows are computed in Numba.
    Sample weights scale C as in `PAClassifier`; probabilities are softmax(scores) over every
    label seen (a fixed link, not calibrated; with large kernel values they are close to 0/1)
    unless `calibration="temperature"`; with calibration, `learn_many` is a `learn_one` loop.
    Bad feature values raise TypeError / ValueError naming the feature and leave the model
    unchanged; so does an event whose ||x||^2 or K(x, x) overflows float64 (e.g. |x| >~ 1e154,
    or a polynomial kernel of a large degree), which would turn the model's state into inf/NaN.

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> import river_pa

    >>> model = preprocessing.StandardScaler() | river_pa.KernelPAClassifier(
    ...     kernel="rbf", gamma=0.3, C=1.0, budget=200)
    >>> evaluate.progressive_val_score(datasets.ImageSegments(), model, metrics.Accuracy())
    Accuracy: 88.91%

    XOR is not linearly separable; with the kernel (1 + x . v)^2 two hard PA passes learn it:

    >>> model = river_pa.KernelPAClassifier(kernel="poly", degree=2, coef0=1.0, variant="PA")
    >>> xor = [({"a": a, "b": b}, a != b) for a in (-1.0, 1.0) for b in (-1.0, 1.0)]
    >>> for x, y in xor * 2:
    ...     model.learn_one(x, y)
    >>> [model.predict_one(x) for x, _ in xor]
    [False, True, True, False]

    """

    _multiclass = True
    _INITIAL_SUPPORT = 16
    _INITIAL_CAPACITY = 64
    _TRANSIENT = (*ScoringClassifier._TRANSIENT, "_krow")
    _MIX = ("its model is a set of support vectors with coefficients; the average of copies in "
            "the kernel's feature space is the union of their sets (up to N times the budget), "
            "which the learner cannot hold without a budget step that changes its predictions")

    def __init__(
        self,
        kernel: str = "poly",
        degree: int = 3,
        gamma: float = 1.0,
        coef0: float = 0.0,
        variant: str = "PA-I",
        C: float = 1.0,
        budget: int | None = None,
        budget_rule: str = "projectron",
        calibration: str | None = None,
        max_classes: int = MAX_CLASSES,
    ):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.variant = variant
        self.C = C
        self.budget = budget
        self.budget_rule = budget_rule
        self.calibration = calibration
        self._calibrator = make_calibrator(calibration)
        if budget_rule not in BUDGET_RULES:
            raise ValueError(f"budget_rule must be one of {sorted(BUDGET_RULES)}, got "
                             f"{budget_rule!r}")
        self.max_classes = max_classes
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {sorted(KERNELS)}, got {kernel!r}")
        check_count("degree", degree)
        check_positive("gamma", gamma)
        check_finite("coef0", coef0)
        check_count("budget", budget, allow_none=True)
        check_positive("C", C)
        self._variant = check_variant(variant)
        self._kind = KERNELS[kernel]
        self._rule = BUDGET_RULES[budget_rule]
        self._index = Vocabulary()
        rows = self._INITIAL_SUPPORT if budget is None else min(self._INITIAL_SUPPORT, budget)
        self._St = np.zeros((self._INITIAL_CAPACITY, rows))  # feature x support vector
        self._svsq = np.zeros(rows)
        self._kd = np.zeros(rows)
        self._A = np.zeros((rows, self._INITIAL_LABELS))
        self._Kinv = np.zeros((rows, rows) if self._keeps_inverse else (0, 0))
        self._ones = np.ones(self._INITIAL_LABELS)
        self._n_sv = 0
        self._setup_labels()
        self._clear_cache()

    @classmethod
    def _unit_test_params(cls):
        yield {"kernel": "rbf", "gamma": 0.1, "budget": 50}
        yield {"kernel": "poly", "degree": 2, "gamma": 0.01, "coef0": 1.0, "variant": "PA-II",
               "budget": 30}
        yield {"kernel": "linear", "variant": "PA", "C": 0.5}
        yield {"kernel": "rbf", "gamma": 0.1, "budget": 20, "budget_rule": "BPA-S"}

    def _unit_test_skips(self):
        if self.budget is None:
            # Without a budget every margin error adds a support vector: memory grows with the
            # stream by design (the limitation Crammer et al. 2006 name); use `budget`.
            return {"check_bounded_memory_growth"}
        return set()

    def _clear_cache(self):
        super()._clear_cache()
        self._krow = None

    def __setstate__(self, state):
        if "_S" in state:  # pickled before the support vectors were stored as columns
            state["_St"] = np.ascontiguousarray(state.pop("_S").T)
        super().__setstate__(state)

    @property
    def n_support(self) -> int:
        """The number of support vectors held."""
        return self._n_sv

    @property
    def _keeps_inverse(self) -> bool:
        return self.budget is not None and self._rule == _numba.PROJECTRON

    @property
    def _kernel_params(self) -> tuple:
        return self._kind, self.degree, float(self.gamma), float(self.coef0)

    # -- growth ----------------------------------------------------------------------------

    def _grow_labels(self, capacity: int) -> None:
        self._A = _grown(self._A, (len(self._A), capacity))
        self._ones = np.ones(capacity)

    def _grow(self, size: int):
        positions, rows = self._St.shape
        if size > positions:
            self._St = _grown(self._St, (max(size, 2 * positions), rows))

    def _reserve_support(self):
        """Room for one more support vector (none needed once the budget is full)."""
        rows = self._St.shape[1]
        if self._n_sv < rows or self.budget is not None and rows >= self.budget:
            return
        new = 2 * rows if self.budget is None else min(2 * rows, self.budget)
        self._St = _grown(self._St, (self._St.shape[0], new))
        self._svsq = _grown(self._svsq, (new,))
        self._kd = _grown(self._kd, (new,))
        self._A = _grown(self._A, (new, self._A.shape[1]))
        if self._keeps_inverse:
            self._Kinv = _grown(self._Kinv, (new, new))

    # -- events ----------------------------------------------------------------------------

    def _kernel_scores(self, pos, val, qx):
        k = np.empty(self._n_sv)
        _numba.kernel_row(*self._kernel_params, self._St, self._svsq, self._n_sv, pos,
                              val, qx, k)
        s = np.empty(self._n)
        _numba.label_scores(self._A, self._n_sv, self._n, k, s)
        return k, s

    def _checked_sq_norm(self, keys, val) -> float:
        """||x||^2, or a ValueError naming the largest feature when ||x||^2 or K(x, x)
        overflows float64 (before anything changes)."""
        qx = _numba.sq_norm(val)
        if qx < math.inf and self._kind != _numba.POLY:  # K(x, x) = ||x||^2 or 1
            return qx
        kxx = _numba.kernel_value(self._kind, qx, qx, qx, *self._kernel_params[1:])
        if not abs(qx) + abs(kxx) < math.inf:
            j = int(np.argmax(np.abs(val)))
            raise ValueError(
                f"feature {keys[j]!r} has value {float(val[j])!r}, too large: ||x||^2 = {qx!r} "
                f"and K(x, x) = {kxx!r} must be finite float64 (rescale the features)"
            )
        return qx

    def _score_event(self, pos, val):
        qx = self._checked_sq_norm(self._keys, val)
        self._krow, s = self._kernel_scores(pos, val, qx)
        return qx, s

    def _step(self, pos, val, qx, k, s, row, w):
        self._reserve_support()
        self._n_sv, tau = _numba.kernel_step(
            self._variant, self.C * w, *self._kernel_params, self._St, self._svsq, self._kd,
            self._A, self._Kinv, self._n_sv, self.budget or 0, self._rule, pos, val, qx, k, s,
            self._n, row, self._ones
        )
        if tau != 0.0:
            self._version += 1

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        event = self._labelled_event(x, y, w)
        if event is not None:
            row, pos, val, qx, s = event
            self._step(pos, val, qx, self._krow, s, row, float(w))

    def learn_many(self, X, y, w=None, *, columns=None) -> None:
        """Learn from the rows of X in order, exactly as a `learn_one` loop does.

        X: a DataFrame, a 2-D numpy array or a scipy.sparse matrix (`columns`: the feature keys
        of an array's columns, default their numbers); y and w pair with the rows by position.

        """
        batch = self._training_batch(X, y, w, columns)
        if batch is None:
            return
        labels, pos, values, sw = batch
        names = _PositionNames(self._index, pos)
        qxs = [self._checked_sq_norm(names, val) for val in values]
        for i, label in enumerate(labels):
            row = self._add_label(label)
            if sw[i] > 0.0:
                val = values[i]
                qx = qxs[i]
                k, s = self._kernel_scores(pos, val, qx)
                self._step(pos, val, qx, k, s, row, float(sw[i]))
        self._version += 1

    def _scores_many(self, X, columns=None) -> np.ndarray:
        pos, values = frame_arrays(X, self._index, learn=False, columns=columns)
        return _numba.kernel_scores_dense(*self._kernel_params, self._St, self._svsq,
                                              self._A, self._n_sv, self._n, pos, values)
