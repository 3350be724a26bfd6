"""`river_pa.mix`: identity on copies of one stream, self-mix, order of the copies, a
hand-computed mix, pickling, refusals with their messages."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import preprocessing

import river_pa
from river_pa.mixing import mix

KEYS = [f"f{i}" for i in range(12)]


def _x(rng) -> dict:
    keys = rng.choice(KEYS, size=rng.integers(1, 5), replace=False)
    return {str(k): float(rng.normal()) for k in keys}


def _binary(rng, n):
    return [(x, sum(x.values()) + 0.3 * rng.normal() > 0) for x in (_x(rng) for _ in range(n))]


def _multiclass(rng, n):
    return [(x, ["a", "b", "c"][int(rng.integers(3))]) for x in (_x(rng) for _ in range(n))]


def _regression(rng, n):
    return [(x, 2.0 * x.get("f0", 0.0) + sum(x.values())) for x in (_x(rng) for _ in range(n))]


def _multilabel(rng, n):
    return [(x, {label: bool(rng.integers(2)) for label in ("u", "v", "w")})
            for x in (_x(rng) for _ in range(n))]


def _sentences(rng, n):
    out = []
    for _ in range(n):
        words = [str(w) for w in rng.choice(KEYS, size=rng.integers(1, 5))]
        out.append(([{"w=" + w: 1.0} for w in words], ["N" if w < "f6" else "V" for w in words]))
    return out


LEARNERS = {
    "PAClassifier": (lambda: river_pa.PAClassifier(C=0.1), _binary),
    "PAClassifier-hashed": (lambda: river_pa.PAClassifier(n_features=2**5), _binary),
    "PAClassifier-calibrated": (lambda: river_pa.PAClassifier(calibration="temperature"),
                                _binary),
    "PARegressor": (lambda: river_pa.PARegressor(C=0.1), _regression),
    "PAMultiClassifier": (lambda: river_pa.PAMultiClassifier(calibration="temperature"),
                          _multiclass),
    "PACostSensitiveClassifier": (lambda: river_pa.PACostSensitiveClassifier(),
                                  _multiclass),
    "PAMultiLabelClassifier": (lambda: river_pa.PAMultiLabelClassifier(), _multilabel),
    "PASequenceTagger": (lambda: river_pa.PASequenceTagger(), _sentences),
    "CoordinateScaleInvariantClassifier": (
        lambda: river_pa.CoordinateScaleInvariantClassifier(), _binary),
    "CoordinateScaleInvariantRegressor": (
        lambda: river_pa.CoordinateScaleInvariantRegressor(), _regression),
}


def _learned(name: str, seed: int, n: int = 30):
    make, stream = LEARNERS[name]
    model = make()
    for x, y in stream(np.random.default_rng(seed), n):
        model.learn_one(x, y)
    return model


def _state(model) -> dict:
    """The model's pickled attributes, but for `_version` (a count of changes, for caches)."""
    state = model.__getstate__() if hasattr(model, "__getstate__") else vars(model)
    return {k: pickle.dumps(v) for k, v in state.items() if k != "_version"}


def _outputs(name: str, model) -> list:
    """What the model says on fixed probe events: predictions, and probabilities or scores."""
    _, stream = LEARNERS[name]
    out = []
    for x, y in stream(np.random.default_rng(12345), 20):
        out.append(model.predict_one(x))
        if hasattr(model, "predict_proba_one"):
            out.append(model.predict_proba_one(x))
        if hasattr(model, "score_one") and all(t in model.tags for t in y):
            out.append(model.score_one(x, y))
    return out


@pytest.mark.parametrize("name", LEARNERS)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), copies=st.integers(2, 4))
def test_copies_of_one_stream_mix_to_the_same_model(name, seed, copies):
    models = [_learned(name, seed) for _ in range(copies)]
    mixed = mix(models, [1.0] * copies)
    assert mixed is not models[0]
    assert _outputs(name, mixed) == _outputs(name, models[0])
    assert _state(mixed) == _state(models[0])


@pytest.mark.parametrize("name", LEARNERS)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), w=st.floats(0.1, 100.0))
def test_a_model_mixed_with_itself_is_unchanged(name, seed, w):
    model = _learned(name, seed)
    before = pickle.dumps(model)
    mixed = mix([model, model], [w, 1.0])
    assert pickle.dumps(model) == before  # the input is untouched
    assert _outputs(name, mixed) == _outputs(name, model)


@pytest.mark.parametrize("name", LEARNERS)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), data=st.data())
def test_the_mix_does_not_depend_on_the_order_of_the_copies(name, seed, data):
    n = data.draw(st.integers(2, 5))
    models = [_learned(name, seed + i, n=5 + 7 * i) for i in range(n)]
    weights = data.draw(st.lists(st.integers(1, 50), min_size=n, max_size=n))
    order = data.draw(st.permutations(range(n)))
    mixed = mix(models, weights)
    shuffled = mix([models[i] for i in order], [weights[i] for i in order])
    assert _state(mixed) == _state(shuffled)
    assert _outputs(name, mixed) == _outputs(name, shuffled)


@pytest.mark.parametrize("name", LEARNERS)
def test_a_mixed_model_pickles_and_keeps_learning(name):
    mixed = mix([_learned(name, 1), _learned(name, 2, n=10), _learned(name, 3, n=5)], [3, 1, 0])
    copy = pickle.loads(pickle.dumps(mixed))
    assert _outputs(name, copy) == _outputs(name, mixed)
    _, stream = LEARNERS[name]
    for x, y in stream(np.random.default_rng(7), 10):
        mixed.learn_one(x, y)
        copy.learn_one(x, y)
    assert _outputs(name, copy) == _outputs(name, mixed)


def test_two_classifiers_mixed_one_to_three_by_hand():
    a, b = river_pa.PAClassifier(variant="PA-I", C=0.2), river_pa.PAClassifier(variant="PA-I",
                                                                                 C=0.2)
    a.learn_one({"x": 1.0, "y": 2.0}, True)  # margin 0, loss 1, ||x||^2 = 6: tau = min(0.2, 1/6)
    b.learn_one({"y": 1.0, "z": -1.0}, False)  # ||x||^2 = 3: tau = 0.2
    assert a.weights == {"x": 1 / 6, "y": 2 / 6} and a.intercept == 1 / 6
    assert b.weights == {"y": -0.2, "z": 0.2} and b.intercept == -0.2
    m = mix([a, b], [1, 3])
    assert m.weights == {"x": (1 / 6) / 4, "y": (2 / 6 + 3 * -0.2) / 4, "z": 3 * 0.2 / 4}
    assert m.intercept == (1 / 6 + 3 * -0.2) / 4
    assert m.decision_function_one({"x": 1.0, "z": 2.0}) == pytest.approx(
        m.intercept + m.weights["x"] + 2 * m.weights["z"], abs=1e-15)


def test_multiclass_labels_and_features_are_merged():
    a, b = river_pa.PAMultiClassifier(variant="PA"), river_pa.PAMultiClassifier(variant="PA")
    a.learn_one({"x": 1.0}, "cat")
    b.learn_one({"y": 1.0}, "dog")
    b.learn_one({"y": 1.0}, "cat")
    m = mix([a, b], [1, 1])
    assert m.classes == ["cat", "dog"]
    for label in ("cat", "dog"):
        for key in ("x", "y"):
            expect = (a.weights.get(label, {}).get(key, 0.0)
                      + b.weights[label].get(key, 0.0)) / 2
            assert m.weights[label].get(key, 0.0) == expect
    assert m.predict_one({"x": 1.0}) == "cat"


@pytest.mark.parametrize("model, message", [
    (river_pa.KernelPAClassifier(),
     "KernelPAClassifier cannot be mixed: its model is a set of support vectors"),
    (river_pa.RescaledExpClassifier(), "RescaledExpClassifier cannot be mixed: its state "
                                       "restarts in epochs"),
    (river_pa.FullScaleInvariantRegressor(), "FullScaleInvariantRegressor cannot be mixed: "
                                             "its state is S = sum x x^T"),
    (river_pa.PAUniclass(), "PAUniclass cannot be mixed: mix takes river_pa's PAClassifier"),
    (preprocessing.StandardScaler() | river_pa.PAClassifier(),
     "Pipeline cannot be mixed: mix takes river_pa's PAClassifier"),
])
def test_learners_that_do_not_mix_refuse_by_name(model, message):
    with pytest.raises(ValueError, match="^" + message.replace("^", r"\^")):
        mix([model, model], [1, 1])


@pytest.mark.parametrize("models, weights, message", [
    ([river_pa.PAClassifier(C=1.0), river_pa.PAClassifier(C=0.5)], [1, 1],
     r"mix: the copies differ in C \(1.0 and 0.5\): only copies of one model mix"),
    ([river_pa.PAClassifier(), river_pa.PAClassifier(n_features=2**4)], [1, 1],
     r"mix: the copies differ in n_features \(None and 16\)"),
    ([river_pa.PAClassifier(), river_pa.PARegressor()], [1, 1],
     r"mix: the copies are of different classes \(PAClassifier and PARegressor\)"),
    ([], [], "mix: no models to mix"),
    ([river_pa.PAClassifier()] * 2, [1], "mix: 1 weights for 2 models"),
    ([river_pa.PAClassifier()] * 2, [1, -1], r"mix: weights must be finite real numbers >= 0, "
                                             "got -1"),
    ([river_pa.PAClassifier()] * 2, [1, float("nan")], "mix: weights must be finite"),
    ([river_pa.PAClassifier()] * 2, [10**400, 1], "mix: weights must be finite"),
    ([river_pa.PAClassifier()] * 2, [0, 0.0], "mix: the weights are all zero"),
])
def test_bad_mixes_refuse_with_their_reason(models, weights, message):
    with pytest.raises(ValueError, match=message):
        mix(models, weights)


@pytest.mark.parametrize("weights", [[2.0**1023] * 2, [2.0**-1074] * 2, [2.0**-1070] * 2])
def test_only_the_ratio_of_the_weights_counts_at_the_ends_of_the_floats(weights):
    """Weights of 2**1023 overflowed their sum and weights of 5e-324 underflowed their
    products (a mean of -0.5 for -0.3): scaled by a power of two first, they mix as [1, 1]
    does, to the bit (powers of two scale exactly)."""
    a, b = river_pa.PAClassifier(), river_pa.PAClassifier()
    a.learn_one({"x": 1.0, "y": -1.0}, True)
    b.learn_one({"x": -1.0, "y": 0.5}, False)
    assert mix([a, b], weights).weights == mix([a, b], [1, 1]).weights
