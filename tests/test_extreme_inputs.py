"""Every learner, driven with extreme but accepted inputs (hypothesis), keeps a state it can
use: every number it holds stays finite, and an input it refuses leaves it unchanged (issue 11,
section 4: the library never keeps state it cannot use).

Extreme: feature values from 1e-300 to 1e149 in magnitude (the parameter-free learners accept
|x| < 1e150), targets up to 1e300, sample weights up to 1e300. A learner may refuse an event
(ValueError naming the field), but then its pickle is byte for byte what it was (after the
prediction on that event, which the full scale-invariant learner may use to refresh its
pseudo-inverse). Caches of the last event (a learner's `_TRANSIENT`) are not state: a margin
of 1e300 on x = 1e149 may be inf.

"""

from __future__ import annotations

import inspect
import math
import pickle
from decimal import Decimal

import hypothesis.strategies as st
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from river import base

import river_pa
from river_pa._core.validation import TooManyClassesError
from tests.test_estimators import params_id

MAGNITUDES = [0.0, 1e-300, 1e-10, 1.0, 3.0, 1e10, 1e100, 1e149]
values = st.sampled_from(MAGNITUDES).flatmap(lambda m: st.sampled_from([m, -m]))
events = st.dictionaries(st.sampled_from(["a", "b", "c"]), values, max_size=3)
weights = st.sampled_from([0.0, 1e-300, 0.5, 1.0, 1e10, 1e100, 1e300])
targets = st.sampled_from([0.0, 1e-300, 1.0, -7.5, 1e10, -1e100, 1e300, -1e300])
streams = st.lists(st.tuples(events, st.integers(0, 2), targets, weights), min_size=1,
                   max_size=12)


def _learners():
    for name in river_pa.__all__:
        cls = getattr(river_pa, name)
        if inspect.isclass(cls) and issubclass(cls, base.Estimator):
            for params in cls._unit_test_params():
                yield pytest.param(cls, params, id=f"{name}{params_id(params)}")


def _numbers(value):
    """Every float held in `value` (arrays, floats, dicts, lists, nested)."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            yield from value.ravel().tolist()
    elif isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _numbers(v)


def _predict(model, x):
    """What the learner predicts on x (computing it may refresh internal factorizations), or
    the ValueError it refuses x with."""
    try:
        if isinstance(model, river_pa.PASequenceTagger):
            model.predict_one([x, x])
        elif isinstance(model, base.AnomalyDetector):
            model.score_one(x)
        else:
            model.predict_one(x)
    except ValueError:
        pass


def _state(model) -> dict:
    """The learner's state: its attributes but the caches of the last event (never pickled)."""
    return {k: v for k, v in vars(model).items() if k not in getattr(model, "_TRANSIENT", ())}


def _learn(model, x, label, target, w):
    if isinstance(model, river_pa.PASequenceTagger):
        model.learn_one([x, x], [label, (label + 1) % 3])
    elif isinstance(model, base.AnomalyDetector):
        model.learn_one(x)
    elif isinstance(model, base.MultiLabelClassifier):
        model.learn_one(x, {"p": label == 1, "q": label == 2}, w)
    elif isinstance(model, base.Regressor):
        model.learn_one(x, target, w)
    elif getattr(model, "_multiclass", False):
        model.learn_one(x, label, w)
    else:
        model.learn_one(x, label == 1, w)


@pytest.mark.parametrize("cls, params", list(_learners()))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams)
@example(stream=[({"a": 1e-10}, 0, 0.0, 1e-300), ({"a": 1e149, "b": 1e149}, 0, 0.0, 1e-300)])
@example(stream=[({"c": 1.0}, 0, 0.0, 1e-300), ({"c": 1e10}, 0, 0.0, 1e-300),
                 ({"a": 0.0, "b": 1e-10, "c": 1e149}, 0, 0.0, 1e-300)])
def test_state_stays_finite(cls, params, stream):
    model = cls(**params)
    for x, label, target, w in stream:
        _predict(model, x)
        before = pickle.dumps(model)
        try:
            _learn(model, x, label, target, w)
        except ValueError:
            assert pickle.dumps(model) == before
        bad = [(k, v) for k, v in _state(model).items()
               if any(not math.isfinite(n) for n in _numbers(v))]
        assert not bad, f"after learning {x}, {label}, {target}, w={w}: {bad[0][0]}"


def test_a_new_direction_far_from_a_tiny_one_keeps_the_pseudo_inverse_finite():
    """S = 1e-20 on `a`, then x = (1e149, 1e149): S_t^+ is finite (entries 1e20) but beta =
    1 + x^T P x = 1e318 and ||r||^4 = 1e596 are not; P became NaN (issue 11, found by
    hypothesis once). Exactly, S_t^+ = [[1e20, -1e20], [-1e20, 1e20 + 1e-298]]."""
    model = river_pa.FullScaleInvariantRegressor(learn_intercept=False)
    model.learn_one({"a": 1e-10}, 0.0, 1e-300)
    model.learn_one({"a": 1e149, "b": 1e149}, 0.0, 1e-300)
    D = model._D[1:3]  # position 0 is the sink; the learner's units are x' = D x
    P = D[:, None] * model._P[1:3, 1:3] * D  # S^+ = D S'^+ D
    assert P == pytest.approx(np.array([[1e20, -1e20], [-1e20, 1e20]]), rel=1e-12)
    assert (model._N[1:3, 1:3] == 0).all()  # S has full rank on the two keys
    model.learn_one({"a": 1.0, "b": 2.0}, 1.0)
    assert math.isfinite(model.predict_one({"a": 1.0, "b": 2.0}))


def test_a_tiny_new_direction_next_to_a_huge_value_keeps_the_pseudo_inverse_finite():
    """b = 1e-10 on a fresh axis (||r|| = 1e-10) with c = 1e149 on a known one: the rank-one
    update's coefficient is about 1e302 and S_t^+ holds about 1e302 on (b, b), finite; formed
    as (c r_b / ||r||^2) r_b it overflowed (1e312) and P became inf, then NaN (found by
    hypothesis in a CI run)."""
    model = river_pa.FullScaleInvariantRegressor(alpha=2.0, learn_intercept=False)
    for x in ({"c": 1.0}, {"c": 1e10}, {"a": 0.0, "b": 1e-10, "c": 1e149}):
        model.predict_one(x)
        model.learn_one(x, 0.0, 1e-300)
    b = int(model._index.lookup(("b",))[0])
    assert np.isfinite(model._P).all() and np.isfinite(model._N).all()
    assert 1e301 < model._P[b, b] < 1e303  # exactly c (u_b r_b) with u_b r_b = 1
    assert math.isfinite(model.predict_one({"a": 1.0, "b": 2.0, "c": 3.0}))


@pytest.mark.parametrize("w", [1e-300, 1e-10, 1.0, 1e100, 1e300])
@pytest.mark.parametrize("cls, params", list(_learners()))
def test_values_of_1e149_with_tiny_and_huge_weights(cls, params, w):
    """Every learner, after a tiny first event, on x = 1e149 in a new direction, with
    weights from 1e-300 to 1e300 (a refusal changes nothing: checked in `_learn` callers)."""
    model = cls(**params)
    for x in ({"a": 1e-10}, {"a": 1e149, "b": 1e149}, {"a": -1e149, "b": 1e149},
              {"a": 1e149, "b": 1e-300}):
        _predict(model, x)
        before = pickle.dumps(model)
        try:
            _learn(model, x, 1, 1.0, w)
        except ValueError:
            assert pickle.dumps(model) == before
        bad = [k for k, v in _state(model).items()
               if any(not math.isfinite(n) for n in _numbers(v))]
        assert not bad, f"after learning {x} with w={w}: {bad}"


# -- constructor parameters: bools are no numbers, n_features is bounded ----------------------

NUMERIC_PARAMS = [
    (river_pa.PAClassifier, "C"), (river_pa.PARegressor, "C"), (river_pa.PARegressor, "epsilon"),
    (river_pa.PAMultiClassifier, "C"), (river_pa.PAMultiClassifier, "max_classes"),
    (river_pa.PACostSensitiveClassifier, "C"), (river_pa.PAMultiLabelClassifier, "C"),
    (river_pa.PAUniclass, "C"), (river_pa.PASequenceTagger, "C"),
    (river_pa.KernelPAClassifier, "C"), (river_pa.KernelPAClassifier, "budget"),
    (river_pa.KernelPAClassifier, "gamma"), (river_pa.KernelPAClassifier, "degree"),
    (river_pa.KernelPAClassifier, "coef0"), (river_pa.KernelPAClassifier, "max_classes"),
    (river_pa.FullScaleInvariantClassifier, "alpha"),
    (river_pa.CoordinateScaleInvariantRegressor, "alpha"),
]


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("cls, name", NUMERIC_PARAMS, ids=lambda v: getattr(v, "__name__", v))
def test_booleans_are_refused_for_numeric_parameters(cls, name, value):
    """``PAClassifier(C=True)`` was taken as C = 1 (and ``--model-params '{"C": true}'``)."""
    with pytest.raises(ValueError, match=f"^{name} must be .*got {value}$"):
        cls(**{name: value})


HASHED = [river_pa.PAClassifier, river_pa.PARegressor, river_pa.PAMultiClassifier,
          river_pa.PACostSensitiveClassifier, river_pa.PAMultiLabelClassifier]


@pytest.mark.parametrize("n", [2**27, 2**30, 2**40, True])
@pytest.mark.parametrize("cls", HASHED)
def test_n_features_is_bounded(cls, n):
    """2**40 died in numpy's _ArrayMemoryError, 2**30 reserved 8 GiB."""
    with pytest.raises(ValueError, match=f"^n_features must be .*got {n}$"):
        cls(n_features=n)
    assert cls(n_features=2**26).n_features == 2**26


def test_max_features_is_documented_in_every_hashed_learner():
    assert all("at most 2**26" in cls.__doc__ for cls in HASHED)


# -- refusals, each before anything changes ---------------------------------------------------

LABELLED = [(cls, params) for cls, params in (p.values for p in _learners())
            if not issubclass(cls, base.AnomalyDetector | river_pa.PASequenceTagger)]


def _first(cls):
    return next(cls._unit_test_params())


def _refused(model, learn, error, match) -> bool:
    """Whether `model` is unchanged (the same pickle bytes) after `learn()` raised `error`
    matching `match` (pytest.raises fails the test otherwise)."""
    before = pickle.dumps(model)
    with pytest.raises(error, match=match or None):
        learn()
    return pickle.dumps(model) == before


@pytest.mark.parametrize("label", [None, float("nan"), np.float64("nan"), pd.NA, pd.NaT])
@pytest.mark.parametrize("cls", sorted({cls for cls, _ in LABELLED}, key=str))
def test_missing_labels_are_refused(cls, label):
    model = cls(**_first(cls))
    y = {"p": label} if issubclass(cls, base.MultiLabelClassifier) else label
    assert _refused(model, lambda: model.learn_one({"a": 1.0}, y), ValueError,
                    "missing|NaN|finite|labels must be bool|must be True or False")


def test_missing_tags_are_refused():
    model = river_pa.PASequenceTagger()
    assert _refused(model, lambda: model.learn_one([{"a": 1.0}], [pd.NA]), ValueError,
                    "tag 0 must not be missing")


BINARY = [river_pa.PAClassifier, river_pa.RescaledExpClassifier,
          river_pa.CoordinateScaleInvariantClassifier, river_pa.FullScaleInvariantClassifier]


@pytest.mark.parametrize("label", [1 + 0j, np.complex128(1), np.array([1]), Decimal(1), "1", 2])
@pytest.mark.parametrize("cls", BINARY)
def test_binary_learners_take_only_binary_labels(cls, label):
    model = cls()
    assert _refused(model, lambda: model.learn_one({"a": 1.0}, label), ValueError, "binary")


@pytest.mark.parametrize("cls", [cls for cls, _ in LABELLED] + [river_pa.PAUniclass])
def test_features_must_be_a_dict(cls):
    model = cls()
    with pytest.raises(TypeError, match="x must be a dict, got list"):
        model.predict_one([1.0, 2.0]) if hasattr(model, "predict_one") else model.score_one([1.0])


@pytest.mark.parametrize("cls", [river_pa.FullScaleInvariantClassifier,
                                 river_pa.FullScaleInvariantRegressor,
                                 river_pa.CoordinateScaleInvariantRegressor,
                                 river_pa.RescaledExpRegressor])
def test_huge_sample_weights_and_targets_are_refused(cls):
    """Weights of 1e160 made the full learners predict NaN for ever and the coordinate-wise
    regressor inf; a target of 1e308 collapsed RescaledExpRegressor."""
    model = cls()
    y = True if issubclass(cls, base.Classifier) else 1.0
    model.learn_one({"a": 1.0, "b": 2.0}, y)
    far = True if issubclass(cls, base.Classifier) else -50.0  # a loss gradient of 1 or more
    assert _refused(model, lambda: model.learn_one({"a": 1.0, "b": 2.0}, far, 1e160), ValueError,
                    "sample weight w = 1e\\+160")
    if cls is river_pa.RescaledExpRegressor:  # squared loss: the gradient grows with y (the
        # others' absolute loss has gradients of at most 1, so a target of 1e308 is harmless)
        assert _refused(model, lambda: model.learn_one({"a": 1.0}, 1e308), ValueError,
                        "y = 1e\\+308")
    model.learn_one({"a": 1.0, "b": 2.0}, y)
    assert math.isfinite(model.predict_one({"a": 1.0, "b": 2.0}))


@pytest.mark.parametrize("g", [{"a": "1.5"}, {"a": 1 + 0j}, {"a": math.inf}, {"a": 1e200},
                               np.array(["1.5"])])
def test_rescaledexp_checks_every_gradient_coordinate(g):
    opt = river_pa.RescaledExp()
    opt.step({"a": 0.0}, {"a": 1.0})
    before = pickle.dumps(opt)
    with pytest.raises((TypeError, ValueError), match="gradient"):
        opt.step({"a": 0.0}, g)
    assert pickle.dumps(opt) == before


def test_an_event_too_wide_for_the_full_learner_changes_nothing():
    """1e6 keys need a 1e6 x 1e6 matrix: MemoryError, raised before the keys enter the
    vocabulary (they did)."""
    model = river_pa.FullScaleInvariantClassifier()
    model.learn_one({"a": 1.0}, True)
    wide = {f"k{i}": 1.0 for i in range(1_000_000)}
    assert _refused(model, lambda: model.learn_one(wide, True), MemoryError, "")
    assert model.predict_one({"a": 1.0}) is True


@pytest.mark.parametrize("cls", [river_pa.PAMultiClassifier, river_pa.PACostSensitiveClassifier,
                                 river_pa.KernelPAClassifier])
def test_a_bad_label_in_a_batch_changes_nothing(cls):
    """A pandas boolean y holding NA made PACostSensitiveClassifier.learn_many raise after the
    vocabulary grew; the others took NA as a class."""
    model = cls()
    model.learn_one({"a": 1.0}, True)
    X = pd.DataFrame({"a": [1.0, 2.0], "b": [0.5, 0.0]})
    y = pd.Series([True, pd.NA], dtype="boolean")
    assert _refused(model, lambda: model.learn_many(X, y), ValueError, "missing")


def nan_cost_for_z(y, r):
    return math.nan if "z" in (y, r) else 1.0


def test_a_bad_cost_in_a_batch_changes_nothing():
    model = river_pa.PACostSensitiveClassifier(cost=nan_cost_for_z)
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    assert _refused(model, lambda: model.learn_many(X, pd.Series(["x", "y", "z"])), ValueError,
                    r"cost\('z', 'x'\) must be a finite number")


# -- the class bound (issue 11, section 2) ----------------------------------------------------

BOUNDED = [river_pa.PAMultiClassifier, river_pa.PACostSensitiveClassifier,
           river_pa.KernelPAClassifier, river_pa.PAMultiLabelClassifier]


@pytest.mark.parametrize("cls", BOUNDED)
def test_max_classes_is_a_documented_bound(cls):
    assert cls().max_classes == 1000 and "max_classes" in cls.__doc__
    model = cls(max_classes=3)
    multilabel = issubclass(cls, base.MultiLabelClassifier)
    for label in "abc":
        model.learn_one({"x": 1.0}, {label: True} if multilabel else label)
    assert _refused(model, lambda: model.learn_one({"x": 1.0}, {"d": True} if multilabel else "d"),
                    TooManyClassesError, "label 'd' would be class number 4 of .*max_classes=3")
    X = pd.DataFrame({"x": [1.0, 2.0], "new": [1.0, 1.0]})
    Y = pd.DataFrame({"a": [True, False], "e": [False, True]}) if multilabel else \
        pd.Series(["a", "e"])
    assert _refused(model, lambda: model.learn_many(X, Y), TooManyClassesError, "label 'e'")
    model.learn_one({"x": 1.0}, {"a": True} if multilabel else "a")  # known labels still learn
    assert issubclass(TooManyClassesError, ValueError)
    with pytest.raises(ValueError, match="max_classes must be an int >= 1"):
        cls(max_classes=0)


def test_the_sequence_tagger_bounds_its_tags():
    """A stream of fresh tags grew the tagger's (tags x tags) transitions without bound."""
    assert river_pa.PASequenceTagger().max_classes == 1000
    assert "max_classes" in river_pa.PASequenceTagger.__doc__
    model = river_pa.PASequenceTagger(max_classes=3)
    tokens = [{"w": 1.0}, {"w": 2.0}]
    model.learn_one(tokens, ["a", "b"])
    model.learn_one(tokens, ["c", "c"])
    assert _refused(model, lambda: model.learn_one(tokens, ["a", "d"]), TooManyClassesError,
                    "label 'd' would be class number 4 of PASequenceTagger, .*max_classes=3")
    assert _refused(model, lambda: model.learn_one(tokens, ["e", "d"]), TooManyClassesError, "'e'")
    model.learn_one(tokens, ["b", "a"])  # known tags still learn
    assert model.tags == ["a", "b", "c"]
    with pytest.raises(ValueError, match="max_classes must be an int >= 1"):
        river_pa.PASequenceTagger(max_classes=0)
