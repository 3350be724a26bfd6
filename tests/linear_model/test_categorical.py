"""`categorical=True` (issue 23): a string value is the one-hot feature (key, value) of value 1,
exactly what River's `OneHotEncoder` in front of the same learner gives."""

from __future__ import annotations

import json
import numbers
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from river import compose, preprocessing

from benchmarks.streams import categorical, elec2_categorical
from river_pa import (
    PAClassifier,
    PACostSensitiveClassifier,
    PAMultiClassifier,
    PAMultiLabelClassifier,
    PARegressor,
)
from river_pa._core.categorical import one_hot
from river_pa._core.features import Hashing


def river_one_hot(model, drop_zeros=True):
    """The River pipeline `categorical=True` equals: strings (and lists of them) one-hot
    encoded, numbers passed through. The union lists the numbers last because River's union
    outputs its last transformer's features first: the learner then sees the numbers first,
    in the event's order, and sums in that order, as `categorical=True` does."""
    strings = compose.SelectType(str, list, set) | preprocessing.OneHotEncoder(
        drop_zeros=drop_zeros)
    return compose.TransformerUnion(strings, compose.SelectType(numbers.Number)) | model


def river_name(key):
    return key if isinstance(key, str) else f"{key[0]}_{key[1]}"


def run_both(ours, theirs, stream, score) -> list:
    """Progressive validation of both: the events whose scores (`score(model, x)`, before
    learning) differ, as (event, ours, River's) (the first 5; none when equal event for
    event)."""
    differ = []
    for i, (x, y) in enumerate(stream):
        mine, river = score(ours, x), score(theirs, x)
        if mine != river and len(differ) < 5:
            differ.append((i, mine, river))
        ours.learn_one(x, y)
        theirs.learn_one(x, y)
    return differ


def margin(model, x):
    if isinstance(model, compose.Pipeline):
        return model[-1].decision_function_one(model[0].transform_one(x))
    return model.decision_function_one(x)


def test_the_stream_has_numbers_strings_and_lists():
    stream = categorical(500)
    kinds = {type(v) for x, _ in stream for v in x.values()}
    assert kinds == {float, str, list}
    assert len({x["item"] for x, _ in stream}) == 84  # new categories all along (Zipf)
    assert {len(x["tags"]) for x, _ in stream} == {0, 1, 2}


@pytest.mark.parametrize("n_features", [None, 2**18])
@pytest.mark.parametrize("variant", ["PA", "PA-I", "PA-II"])
def test_classifier_equals_river_one_hot_encoder_in_front(variant, n_features):
    stream = categorical(800)
    ours = PAClassifier(variant=variant, C=0.1, n_features=n_features, categorical=True)
    theirs = river_one_hot(PAClassifier(variant=variant, C=0.1, n_features=n_features))
    if n_features:  # both namings are collision-free here, so the sums are the same
        keys = {k for x, _ in stream for k in one_hot(x)}
        assert not Hashing(n_features).lookup_unique(tuple(keys))[1]
        assert not Hashing(n_features).lookup_unique(tuple(map(river_name, keys)))[1]
    assert run_both(ours, theirs, stream, margin) == []
    assert ours.intercept == theirs[-1].intercept
    if n_features is None:
        assert {river_name(k): v for k, v in ours.weights.items()} == theirs[-1].weights
        assert len(ours.weights) > 100  # 3 numbers and the categories met
    else:
        assert sorted(ours.weights.values()) == sorted(theirs[-1].weights.values())


def test_predictions_equal_river_default_one_hot_encoder():
    """River's default encoder also sends a 0 for every category seen before: the same
    features, summed in another order, so the weights agree to the last bits only."""
    stream = categorical(600)
    ours = PAClassifier(categorical=True)
    theirs = river_one_hot(PAClassifier(), drop_zeros=False)
    assert run_both(ours, theirs, stream, lambda m, x: m.predict_one(x)) == []
    river = theirs[-1].weights
    for key, w in ours.weights.items():
        assert w == pytest.approx(river[river_name(key)], rel=1e-12, abs=1e-12)


def test_regressor_and_multiclass_equal_river_one_hot_encoder_in_front():
    stream = categorical(500)
    target = [(x, float(x["x0"] * 3 + (x["device"] == "d1"))) for x, _ in stream]
    assert run_both(PARegressor(categorical=True), river_one_hot(PARegressor()), target,
                    lambda m, x: m.predict_one(x)) == []
    labels = [(x, x["device"]) for x, _ in stream]  # the device is a feature: learnable
    for cls in (PAMultiClassifier, PACostSensitiveClassifier):
        ours, theirs = cls(categorical=True), river_one_hot(cls())
        assert run_both(ours, theirs, labels, lambda m, x: m.predict_proba_one(x)) == []
        assert ours.predict_one({"device": "d3"}) == "d3"


def test_multilabel_equals_river_one_hot_encoder_in_front():
    stream = [(x, {"a": x["device"] == "d1", "b": bool(x["tags"])})
              for x, _ in categorical(300)]
    assert run_both(PAMultiLabelClassifier(categorical=True),
                    river_one_hot(PAMultiLabelClassifier()), stream,
                    lambda m, x: m.predict_one(x)) == []


def test_elec2_with_its_time_as_categories_equals_river(shared_data):
    stream = elec2_categorical()[:3000]
    assert {type(v) for v in stream[0][0].values()} == {float, str}
    ours = PAClassifier(categorical=True)
    theirs = river_one_hot(PAClassifier())
    assert run_both(ours, theirs, stream, margin) == []
    assert ("weekday", "Sun") in ours.weights and ("slot", "23:30") in ours.weights


def test_a_pa_step_by_hand():
    """PA-I (C = 0.25): ||x||^2 = 1 (intercept) + 0.5^2 + 1 + 1 + 1 = 4.25, the hinge loss of
    the fresh model 1, tau = min(0.25, 1 / 4.25) = 0.2353 (1/4.25)."""
    model = PAClassifier(variant="PA-I", C=0.25, categorical=True)
    model.learn_one({"age": 0.5, "country": "FR", "tags": ["a", "b", "a"]}, False)
    tau = 1 / 4.25
    assert model.weights == {"age": -0.5 * tau, ("country", "FR"): -tau, ("tags", "a"): -tau,
                             ("tags", "b"): -tau}
    assert model.intercept == -tau
    assert model.decision_function_one({"country": "FR"}) == -2 * tau
    assert model.decision_function_one({"country": "DE", "tags": []}) == -tau


def test_without_the_option_a_string_is_a_type_error_naming_feature_and_value():
    model = PAClassifier()
    model.learn_one({"age": 1.0}, True)
    before = pickle.dumps(model)
    with pytest.raises(TypeError, match=r"^feature 'country' has a non-numeric value 'FR' of "
                                        r"type str$"):
        model.learn_one({"age": 1.0, "country": "FR"}, True)
    with pytest.raises(TypeError, match="feature 'country'"):
        PAMultiClassifier().predict_one({"country": "FR"})
    assert pickle.dumps(model) == before


def test_none_and_non_string_lists_stay_type_errors_with_the_option():
    model = PAClassifier(categorical=True)
    with pytest.raises(TypeError, match="feature 'country' has a non-numeric value None"):
        model.learn_one({"age": 1.0, "country": None}, True)
    with pytest.raises(TypeError, match=r"feature 'tags' has a non-numeric value \['a', 1\]"):
        model.learn_one({"tags": ["a", 1]}, True)
    assert model.weights == {} and model.intercept == 0.0


def test_numbers_are_unchanged_by_the_option():
    stream = [({f"f{j}": v for j, v in enumerate(row)}, row[0] > row[1])
              for row in np.random.default_rng(5).normal(size=(300, 4)).tolist()]
    assert run_both(PAClassifier(categorical=True), PAClassifier(), stream, margin) == []


def test_a_numpy_string_is_its_str():
    model = PAClassifier(variant="PA", categorical=True)
    model.learn_one({"country": np.str_("FR")}, True)
    assert list(model.weights) == [("country", "FR")]
    assert type(list(model.weights)[0][1]) is str


def test_pickle_and_clone_keep_the_option():
    model = PAClassifier(variant="PA", categorical=True)
    model.learn_one({"country": "FR"}, True)
    loaded = pickle.loads(pickle.dumps(model))
    assert loaded.categorical
    assert loaded.decision_function_one({"country": "FR"}) == 1.0
    loaded.learn_one({"country": "DE"}, False)
    fresh = model.clone()
    fresh.learn_one({"country": "DE"}, True)
    assert list(loaded.weights) == [("country", "FR"), ("country", "DE")]
    assert list(fresh.weights) == [("country", "DE")]


def test_the_hashed_position_of_a_category_is_the_same_in_another_process():
    code = (
        "from river_pa import PAClassifier; import json\n"
        "m = PAClassifier(variant='PA', n_features=2**16, categorical=True)\n"
        "m.learn_one({'country': 'FR', 'device': 'phone'}, True)\n"
        "print(json.dumps(sorted(m.weights)))"
    )
    here = PAClassifier(variant="PA", n_features=2**16, categorical=True)
    here.learn_one({"country": "FR", "device": "phone"}, True)
    for seed in ("1", "4242"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env={**os.environ, "PYTHONHASHSEED": seed})
        assert json.loads(out.stdout) == sorted(here.weights)
    assert sorted(here.weights) == sorted(Hashing(2**16).lookup((("country", "FR"),
                                                            ("device", "phone")))[:2].tolist())


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_the_option_must_be_a_bool(value):
    with pytest.raises(ValueError, match="categorical must be True or False"):
        PAClassifier(categorical=value)


def test_the_examples_native_learner_predicts_as_their_pipeline(monkeypatch):
    """docs/serving/pipelines.md: `examples/categorical_pipeline.py`'s `native`
    (categorical=True) and `model` (OneHotEncoder in front) on `produce_elec2.py --data
    agrawal`, prediction for prediction."""
    from pathlib import Path

    from river_pa.registry import make_model

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)  # where --model examples.categorical_pipeline:... is found
    monkeypatch.syspath_prepend(str(root / "examples"))
    from produce_elec2 import agrawal

    pipeline = make_model("examples.categorical_pipeline:model")
    native = make_model("examples.categorical_pipeline:native")
    for x, y in agrawal(2000):
        assert native.predict_one(x) == pipeline.predict_one(x)
        pipeline.learn_one(x, y)
        native.learn_one(x, y)
