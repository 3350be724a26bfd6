"""Mixing copies of a learner: the weighted average of their states (iterative parameter mixing).

Source: R. McDonald, K. Hall and G. Mann (2010), Distributed Training Strategies for the
Structured Perceptron, NAACL, Section 3 and Figure 3 (iterative parameter mixing): shards learn
their part of the stream, their weights are averaged, weighted by the events each learned since
the last mix, and every shard continues from the average. The perceptron's weights are sums of
updates; averaging them has a convergence bound and reaches about one learner's accuracy.

`mix(models, weights)` returns a new learner; its inputs are untouched. Each family says what
its state is through a class attribute `_MIX`: a `MixSpec` (which arrays, over which axes) or a
string, the reason it refuses. Every array, scalar and counter of the spec is mixed by the same
rule, the weighted mean over the copies of positive weight, after aligning them:

* feature axes: with a vocabulary, the union of the copies' keys (a key a copy never learned
  has weight 0 there); with hashing, position by position;
* label axes (classes, tags): the union of the labels (a label a copy never saw: a zero row);
* the union keeps the copies' common order when they all have the same one (the steady state
  of a fixed schema), else it is sorted (by type name, then `repr`), so the mix does not depend
  on the order of the copies, and each value is summed in sorted order of the copies'
  contributions: the same bits whatever the order. A value equal in every copy is kept as it
  is, so mixing copies that learned the same stream returns the same model.

Counters (events seen, which averaged weights divide by) take the weighted mean rounded up. A
calibrator (`calibration="temperature"`, `river_pa._core.calibration`) mixes its posterior
log-weights, its histogram's log-odds and its counts by the same weighted mean (a geometric
pooling of the copies' posteriors, renormalised); equal calibrators are kept as they are.

"""

from __future__ import annotations

import dataclasses
import math
import numbers
import pickle

import numpy as np

from river_pa._core.features import Hashing, canonical_order

__all__ = ["MixSpec", "check_mixable", "mix"]


@dataclasses.dataclass(frozen=True)
class MixSpec:
    """What a learner's state is, for `mix`.

    arrays
        {attribute: axes}, each axis "feature" (the positions of `_index`), "label" (the rows
        of the labels), "start+label" (a start row, then the labels' rows) or "chain" (the
        learner's `_n_chains` classifier chains, index by index); the array may be larger
        (grown amortised): only the part the axes cover is mixed.
    scalars
        Float attributes (an intercept).
    counts
        Integer attributes that count events (weighted mean rounded up).
    labels
        The attribute listing the labels in row order (None: no label axis).
    add_label
        The method that gives a new label its row (and whatever goes with it).

    Each learner grows its feature arrays with `_grow(size)`.

    """

    arrays: dict
    scalars: tuple = ()
    counts: tuple = ()
    labels: str | None = None
    add_label: str | None = None


def mix(models, weights):
    """The weighted average of copies of one learner: a new learner (the inputs unchanged).

    Parameters
    ----------
    models
        A non-empty sequence of learners of one class with equal hyper-parameters (its
        `_get_params()`), of a family that mixes (see the module docstring).
    weights
        One non-negative real number per model, not all zero: the events each copy learned
        since the last mix. A copy of weight 0 adds nothing (nor its keys or labels).

    Returns
    -------
    The mixed learner, of the models' class: with only one copy of positive weight, a copy
    of it.

    Raises
    ------
    ValueError
        For no models, models of different classes, a hyper-parameter that differs (named),
        a learner that cannot be mixed (named, with the reason), weights that are not one
        per model, negative, not finite or all zero.

    Examples
    --------

    Two learners that saw one event each, mixed 1:3:

    >>> import river_pa
    >>> a, b = river_pa.PAClassifier(variant="PA"), river_pa.PAClassifier(variant="PA")
    >>> a.learn_one({"x": 1.0}, True)
    >>> b.learn_one({"y": 1.0}, False)
    >>> a.weights, b.weights
    ({'x': 0.5}, {'y': -0.5})
    >>> m = river_pa.mix([a, b], [1, 3])
    >>> m.weights, m.intercept
    ({'x': 0.125, 'y': -0.375}, -0.25)
    >>> river_pa.mix([river_pa.PAClassifier(C=1.0), river_pa.PAClassifier(C=0.1)], [1, 1])
    Traceback (most recent call last):
    ...
    ValueError: mix: the copies differ in C (1.0 and 0.1): only copies of one model mix

    """
    models = list(models)
    spec = _check_models(models)
    w = _check_weights(weights, len(models))
    live = [(m, x) for m, x in zip(models, w.tolist()) if x > 0.0]
    if len(live) == 1:
        return pickle.loads(pickle.dumps(live[0][0]))
    models, w = [m for m, _ in live], np.array([x for _, x in live])
    out = models[0].clone()
    _mix_arrays(out, models, w, spec)
    for name in spec.scalars:
        setattr(out, name, float(_mean(np.array([getattr(m, name) for m in models]), w)))
    for name in spec.counts:
        mean = float(_mean(np.array([getattr(m, name) for m in models]), w))
        setattr(out, name, math.ceil(mean))
    if getattr(out, "_calibrator", None) is not None:
        out._calibrator = _mix_calibrators([m._calibrator for m in models], w)
    if hasattr(out, "_version"):
        out._version += 1
        out._clear_cache()
    return out


def _mix_arrays(out, models: list, w: np.ndarray, spec: MixSpec) -> None:
    """Give `out` the union of the models' keys and labels, and the weighted mean of each
    array of `spec`, every model's array aligned on `out`'s positions and rows (zero where a
    model lacks a key or a label)."""
    fpos = _merge_features(out, models)
    lpos = _merge_labels(out, models, spec)
    for name, axes in spec.arrays.items():
        shape = tuple(_extent(axis, out) for axis in axes)
        stack = np.zeros((len(models), *shape))
        for i, (m, f, l) in enumerate(zip(models, fpos, lpos)):
            perm = [_axis(axis, f, l, getattr(m, "_n_chains", 1)) for axis in axes]
            stack[i][np.ix_(*perm)] = getattr(m, name)[tuple(slice(len(q)) for q in perm)]
        getattr(out, name)[tuple(slice(n) for n in shape)] = _mean(stack, w)


def _check_weights(weights, n: int) -> np.ndarray:
    weights = list(weights)
    if len(weights) != n:
        raise ValueError(f"mix: {len(weights)} weights for {n} models: one weight per model")
    for x in weights:
        if (not isinstance(x, numbers.Real) or isinstance(x, bool) or not _finite(x)
                or x < 0):
            raise ValueError(f"mix: weights must be finite real numbers >= 0, got {x!r:.40}")
    if not any(weights):
        raise ValueError("mix: the weights are all zero (no copy learned since the last mix)")
    # scaled by a power of two (exact) that brings the largest into [0.5, 1): only the ratios
    # matter, and the sum cannot overflow nor the products underflow (1e308s and 5e-324s gave
    # wrong means)
    w = np.array([float(x) for x in weights])
    return np.ldexp(w, -math.frexp(w.max())[1])


def _finite(x) -> bool:
    try:
        return math.isfinite(x)
    except OverflowError:  # an int beyond a float's range
        return False


def _check_models(models: list) -> MixSpec:
    """The models' `MixSpec`; ValueError unless they can be mixed together."""
    if not models:
        raise ValueError("mix: no models to mix")
    cls = type(models[0])
    check_mixable(models[0])
    for m in models[1:]:
        if type(m) is not cls:
            raise ValueError(f"mix: the copies are of different classes ({cls.__name__} and "
                             f"{type(m).__name__}): only copies of one model mix")
    params = models[0]._get_params()
    for m in models[1:]:
        for name, value in m._get_params().items():
            if not _same(params[name], value):
                raise ValueError(f"mix: the copies differ in {name} ({params[name]!r} and "
                                 f"{value!r}): only copies of one model mix")
    return cls._MIX


def check_mixable(model) -> None:
    """ValueError naming the learner and why unless `mix` takes it (its class has a `MixSpec`).

    >>> import river_pa
    >>> check_mixable(river_pa.KernelPAClassifier())
    Traceback (most recent call last):
    ...
    ValueError: KernelPAClassifier cannot be mixed: its model is a set of support vectors with coefficients; the average of copies in the kernel's feature space is the union of their sets (up to N times the budget), which the learner cannot hold without a budget step that changes its predictions

    """
    spec = getattr(type(model), "_MIX", None)
    name = type(model).__name__
    if isinstance(spec, str):
        raise ValueError(f"{name} cannot be mixed: {spec}")
    if not isinstance(spec, MixSpec):
        raise ValueError(f"{name} cannot be mixed: mix takes river_pa's PAClassifier, "
                         "PARegressor, PAMultiClassifier, PACostSensitiveClassifier, "
                         "PAMultiLabelClassifier, PASequenceTagger and the coordinate-wise "
                         "scale-invariant learners (not a pipeline)")


def _same(a, b) -> bool:
    """Whether two hyper-parameter values are equal (objects without `==`, such as River's
    losses, by class and `repr`)."""
    try:
        if bool(a == b):
            return True
    except (TypeError, ValueError):
        pass
    return type(a) is type(b) and repr(a) == repr(b)


def _order(keys: dict) -> list:
    return sorted(keys, key=canonical_order)


def _merge_features(out, models: list) -> list:
    """Give `out` the union of the models' feature keys; each model's position -> position
    in `out` (int64 arrays over the model's positions, the sink 0 to 0)."""
    index = out._index
    if isinstance(index, Hashing):
        return [np.arange(index.size)] * len(models)
    first = models[0]._index.positions
    if all(m._index.positions == first for m in models[1:]):
        keys = list(first)
    else:
        keys = _order(dict.fromkeys(k for m in models for k in m._index.positions))
    index.insert(tuple(k for k in keys if k not in index.positions))
    out._grow(index.size)
    return [np.array([0, *index.lookup(tuple(m._index.positions))], dtype=np.int64)
            for m in models]


def _merge_labels(out, models: list, spec: MixSpec) -> list:
    """Give `out` the union of the models' labels; each model's row -> row in `out`."""
    if spec.labels is None:
        return [None] * len(models)
    lists = [getattr(m, spec.labels) for m in models]
    if all(x == lists[0] for x in lists[1:]):
        labels = list(lists[0])
    else:
        labels = _order(dict.fromkeys(label for x in lists for label in x))
    add = getattr(out, spec.add_label)
    for label in labels:
        add(label)
    rows = {label: r for r, label in enumerate(getattr(out, spec.labels))}
    return [np.array([rows[label] for label in x], dtype=np.int64) for x in lists]


def _axis(axis: str, features: np.ndarray, labels: np.ndarray, chains: int) -> np.ndarray:
    """A model's index -> `out`'s index along one axis."""
    if axis == "feature":
        return features
    if axis == "label":
        return labels
    if axis == "chain":
        return np.arange(chains)
    return np.concatenate([[0], 1 + labels]).astype(np.int64)  # "start+label"


def _extent(axis: str, out) -> int:
    """How far `out`'s state reaches along one axis."""
    if axis == "feature":
        return out._index.size
    if axis == "chain":
        return out._n_chains
    n = len(getattr(out, out._MIX.labels))
    return n if axis == "label" else n + 1


def _mean(stack: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The mean of `stack` (copies x ...) weighted by `w` (copies), summed in sorted order
    of the contributions (the same bits for any order of the copies); a value equal in every
    copy is kept (+0.0 for zeros of either sign)."""
    w = w.reshape(-1, *([1] * (stack.ndim - 1)))
    mean = np.sort(w * stack, axis=0).sum(axis=0) / math.fsum(w.ravel().tolist())
    lo, hi = stack.min(axis=0), stack.max(axis=0)
    return np.where(lo == hi, lo + 0.0, mean)


def _mix_calibrators(cals: list, w: np.ndarray):
    """The weighted mean of calibrators' states (see the module docstring)."""
    first = cals[0]
    if all(_equal_state(c, first) for c in cals[1:]):
        return pickle.loads(pickle.dumps(first))
    out = type(first)()
    for name, value in vars(first).items():
        if name not in ("t", "w"):  # the normalised weights: recomputed below
            stack = np.array([getattr(c, name) for c in cals], dtype=np.float64)
            mean = _mean(stack, w)
            setattr(out, name, float(mean) if np.ndim(value) == 0 else mean)
    if hasattr(out, "log_t"):  # MarginMixture: log_t normalised (its exp sums to 1)
        top = out.log_t.max()
        e = np.exp(out.log_t - top)
        out.log_t, out.t = out.log_t - (top + math.log(e.sum())), e / e.sum()
    else:  # Temperature: log_w with its top at 0, w normalised
        out.log_w = out.log_w - out.log_w.max()
        e = np.exp(out.log_w)
        out.w = e / e.sum()
    return out


def _equal_state(a, b) -> bool:
    return all(np.array_equal(v, getattr(b, k)) for k, v in vars(a).items())
