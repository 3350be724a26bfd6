"""PAMultiClassifier: hand-computed updates, batches, bad input, str labels."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from river import datasets, preprocessing
from sklearn.datasets import load_iris

import river_pa


def test_hard_step_puts_true_label_one_above_the_runner_up():
    model = river_pa.PAMultiClassifier(variant="PA")
    x = {"a": 1.0, "b": -2.0}
    model.learn_one(x, 0)
    model.learn_one(x, 1)  # scores 0, 0: loss 1, ||x||^2 + 1 = 6, tau = 1 / 12
    assert model.weights == {0: {"a": -1 / 12, "b": 2 / 12}, 1: {"a": 1 / 12, "b": -2 / 12}}
    assert model.intercepts == {0: -1 / 12, 1: 1 / 12}
    s = model.decision_function_one(x)
    assert s[1] - s[0] == pytest.approx(1.0)
    model.learn_one(x, 2)  # new label at 0 beats the runner-up 0 (label 0 at -0.5): vs 1
    s = model.decision_function_one(x)
    assert s[2] - s[1] == pytest.approx(1.0) and s[0] == pytest.approx(-0.5)


@pytest.mark.parametrize("variant, tau", [("PA-I", 0.05), ("PA-II", 1 / (12 + 1 / 0.1))])
def test_soft_steps(variant, tau):
    model = river_pa.PAMultiClassifier(variant=variant, C=0.05)
    x = {"a": 1.0, "b": -2.0}
    model.learn_one(x, "u")
    model.learn_one(x, "v")  # loss 1 over 2 (||x||^2 + 1) = 12
    assert model.intercepts["v"] == pytest.approx(tau)
    assert model.weights["v"]["b"] == pytest.approx(-2 * tau)


def test_without_intercept_the_norm_is_twice_x():
    model = river_pa.PAMultiClassifier(variant="PA", learn_intercept=False)
    model.learn_one({"a": 2.0}, "u")
    model.learn_one({"a": 2.0}, "v")  # tau = 1 / (2 * 4)
    assert model.weights == {"u": {"a": -0.25}, "v": {"a": 0.25}}
    assert model.intercepts == {"u": 0.0, "v": 0.0}


def test_predictions_before_and_after_learning():
    model = river_pa.PAMultiClassifier()
    assert model.predict_one({"a": 1.0}) is None and model.predict_proba_one({"a": 1.0}) == {}
    model.learn_one({"a": 1.0}, "x")
    assert model.predict_proba_one({"a": 1.0}) == {"x": 1.0}
    model.learn_one({"a": -1.0}, "y")
    s = model.decision_function_one({"a": 1.0})
    p = model.predict_proba_one({"a": 1.0})
    e = np.exp([s["x"], s["y"]])
    assert p["x"] == pytest.approx(e[0] / e.sum()) and sum(p.values()) == pytest.approx(1.0)


def test_str_labels_multiclass_stream():
    """River issue #1106: a binary PA given str labels; PAMultiClassifier learns them."""
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    order = np.random.default_rng(0).permutation(len(y))
    stream = [(dict(enumerate(X[i])), names[i].item()) for i in order]
    with pytest.raises(ValueError, match="PAMultiClassifier"):
        river_pa.PAClassifier().learn_one(*stream[0])
    model = preprocessing.StandardScaler() | river_pa.PAMultiClassifier(C=0.1)
    mistakes = []
    for x, label in stream:
        mistakes.append(model.predict_one(x) != label)
        model.learn_one(x, label)
    assert set(model[-1].classes) == {"setosa", "versicolor", "virginica"}
    assert np.mean(mistakes[-100:]) <= 0.12  # the last 100 of 150 events


def _frame(rows):
    return pd.DataFrame([x for x, _ in rows]), pd.Series([y for _, y in rows])


@pytest.mark.parametrize("params", [{"variant": "PA-I", "C": 0.1},
                                    {"variant": "PA-II", "n_features": 2**4}])
def test_learn_many_is_bit_for_bit_a_learn_one_loop(params):
    rows = list(datasets.ImageSegments().take(120))
    weights = np.random.default_rng(1).random(120)
    one, many = river_pa.PAMultiClassifier(**params), river_pa.PAMultiClassifier(**params)
    for (x, y), w in zip(rows, weights):
        one.learn_one(x, y, w)
    for lo in range(0, 120, 40):  # labels appear for the first time inside batches
        X, y = _frame(rows[lo: lo + 40])
        many.learn_many(X, y, pd.Series(weights[lo: lo + 40]))
    assert one.classes == many.classes
    n = len(one.classes)
    assert np.array_equal(one._W[:n, : one._index.size], many._W[:n, : many._index.size])
    assert np.array_equal(one._b[:n], many._b[:n])
    X, _ = _frame(rows)
    assert many.predict_many(X).tolist() == [one.predict_one(x) for x, _ in rows]


@pytest.mark.parametrize(
    "x, y, error",
    [({"a": "1"}, "u", TypeError), ({"a": float("nan")}, "u", ValueError),
     ({"a": 1.0}, ["unhashable"], TypeError)],
)
def test_rejected_event_leaves_the_model_unchanged(x, y, error):
    model = river_pa.PAMultiClassifier()
    model.learn_one({"a": 1.0, "b": 2.0}, "u")
    model.learn_one({"a": -1.0}, "v")
    before = pickle.dumps(model)
    with pytest.raises(error):
        model.learn_one(x, y)
    assert pickle.dumps(model) == before


@pytest.mark.parametrize(
    "model",
    [river_pa.PAMultiClassifier(), river_pa.PACostSensitiveClassifier(),
     river_pa.KernelPAClassifier()],
    ids=["multi", "cost", "kernel"],
)
def test_nan_labels_are_rejected_and_add_no_class(model):
    model = model.clone()
    model.learn_one({"a": 1.0}, "u")
    before = pickle.dumps(model)
    for label in [float("nan"), float("nan"), np.float64("nan")]:
        with pytest.raises(ValueError, match="a label must not be NaN, got "):
            model.learn_one({"a": 1.0}, label)
    with pytest.raises(ValueError, match="a label must not be NaN, got nan"):
        model.learn_many(pd.DataFrame({"a": [1.0, 2.0]}), pd.Series(["u", float("nan")]))
    assert model.classes == ["u"]
    assert pickle.dumps(model) == before


def test_predicting_unseen_keys_leaves_the_pickle_unchanged():
    # the "all keys known" flag of the position cache is a cache too, not model state
    model = river_pa.PAMultiClassifier()
    model.learn_one({"a": 1.0}, "u")
    model.predict_one({"unseen": 1.0})
    model.predict_one({"a": 1.0})  # a known key tuple: the cache flag turns True
    before = pickle.dumps(model)
    model.predict_one({"unseen": 1.0})
    assert pickle.dumps(model) == before
    with pytest.raises(TypeError, match="feature 'b' has a non-numeric value"):
        model.learn_one({"a": 1.0, "b": "x"}, "u")
    assert pickle.dumps(model) == before


def test_bad_parameters():
    with pytest.raises(ValueError, match="variant"):
        river_pa.PAMultiClassifier(variant="PA-III")
    with pytest.raises(ValueError, match="C"):
        river_pa.PAMultiClassifier(C=0)
