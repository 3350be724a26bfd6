"""PACostSensitiveClassifier: the 0/1 special case, hand-computed steps, Knowl 7's bound."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest
from river import datasets
from sklearn.linear_model import LogisticRegression

import river_pa
from river_pa.multiclass.cost_sensitive import zero_one_cost


def test_max_loss_with_zero_one_cost_is_the_multiclass_pa():
    rows = list(datasets.ImageSegments().take(300))
    a = river_pa.PACostSensitiveClassifier(variant="PA-II", C=0.1, cost=zero_one_cost)
    b = river_pa.PAMultiClassifier(variant="PA-II", C=0.1)
    for x, y in rows:
        a.learn_one(x, y)
        b.learn_one(x, y)
    assert a.weights == b.weights and a.intercepts == b.intercepts


def _preset(update):
    """Labels a, b, c scoring 0, 0.25 and 0.5 on x = {"x": 1.0} (hard PA, no intercept)."""
    model = river_pa.PACostSensitiveClassifier(variant="PA", update=update,
                                               cost={"a": {"b": 9.0, "c": 4.0}},
                                               learn_intercept=False)
    for label, w in [("a", 0.0), ("b", 0.25), ("c", 0.5)]:
        model.learn_many(pd.DataFrame({"x": [0.0]}), pd.Series([label]))  # registers the label
        model._W[model._labels[label], 1] = w
    model._version += 1
    return model


def test_prediction_based_step_uses_the_predicted_label():
    model = _preset("prediction-based")
    model.learn_one({"x": 1.0}, "a")  # against c: loss 0.5 - 0 + sqrt(4) = 2.5, tau = 2.5 / 2
    s = model.decision_function_one({"x": 1.0})
    assert s == pytest.approx({"a": 1.25, "b": 0.25, "c": -0.75})
    assert s["a"] - s["c"] == pytest.approx(2.0)


def test_max_loss_step_uses_the_most_violated_label():
    model = _preset("max-loss")
    model.learn_one({"x": 1.0}, "a")  # against b: 0.25 + sqrt(9) = 3.25 > 0.5 + sqrt(4)
    s = model.decision_function_one({"x": 1.0})
    assert s == pytest.approx({"a": 1.625, "b": -1.375, "c": 0.5})
    assert s["a"] - s["b"] == pytest.approx(3.0)


def _cost(y, r) -> float:
    """Squared distance between the class indices of ImageSegments, capped at 4."""
    return float(min((CLASSES.index(y) - CLASSES.index(r)) ** 2, 4))


CLASSES = sorted({y for _, y in datasets.ImageSegments()})


def test_knowl7_cumulative_cost_bound_on_image_segments():
    """Max-loss PA-I: sum_t rho(y_t, yhat_t) <= ||u||^2 + 2 C sum_t l_ML(u; x_t, y_t).

    Conditions of the bound: ||Phi(x, y) - Phi(x, r)||^2 = 2 ||x||^2 <= 1, so the features are
    standardised and each event scaled to ||x||^2 = 1/2, without intercept; C = 2 =
    sqrt(max cost). The comparator u is a multinomial logistic regression fitted on the whole
    stream (rows u_r, no intercept), scaled by the factor a in a grid that gives the least
    bound; its loss is the max-loss l_ML(u) = max_r (u_r . x - u_y . x + sqrt(rho(y, r))).

    """
    raw = list(datasets.ImageSegments())
    X = np.array([list(x.values()) for x, _ in raw])
    X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    X /= np.sqrt(2.0) * np.linalg.norm(X, axis=1, keepdims=True)
    y = [label for _, label in raw]
    C = math.sqrt(4.0)
    model = river_pa.PACostSensitiveClassifier(variant="PA-I", C=C, update="max-loss",
                                               cost=_cost, learn_intercept=False)
    total_cost = 0.0
    for row, label in zip(X, y):
        x = dict(enumerate(row))
        pred = model.predict_one(x)
        total_cost += 0.0 if pred is None else _cost(label, pred)
        model.learn_one(x, label)

    fit = LogisticRegression(C=100.0, fit_intercept=False, max_iter=5000).fit(X, y)
    U = fit.coef_[[list(fit.classes_).index(c) for c in CLASSES]]
    M = np.sqrt([[_cost(a, b) for b in CLASSES] for a in CLASSES])
    rows = np.array([CLASSES.index(label) for label in y])

    def bound(scale):
        S = scale * X @ U.T
        loss = (S - S[np.arange(len(y)), rows][:, None] + M[rows]).max(axis=1)
        return scale**2 * (U**2).sum() + 2 * C * loss.sum()

    best = min(bound(a) for a in np.geomspace(0.01, 100, 81))
    print(f"cumulative cost {total_cost:g} <= bound {best:.1f}")
    assert total_cost <= best
    assert best < 2 * C * 2 * len(y)  # not vacuous: below the bound of u = 0 (loss 2 each)
    assert total_cost > 0


def test_cost_validation_and_pickling():
    with pytest.raises(ValueError, match="update"):
        river_pa.PACostSensitiveClassifier(update="min-loss")
    with pytest.raises(ValueError, match="cost"):
        river_pa.PACostSensitiveClassifier(cost=3.0)
    model = river_pa.PACostSensitiveClassifier(cost={"a": {"b": -1.0}})
    model.learn_one({"x": 1.0}, "a")
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match=r"cost\('a', 'b'\)"):
        model.learn_one({"x": 1.0}, "b")
    assert pickle.dumps(model) == before
    model = river_pa.PACostSensitiveClassifier(cost=_cost)
    model.learn_one({"x": 1.0}, CLASSES[0])
    model.learn_one({"x": -1.0}, CLASSES[3])
    clone = pickle.loads(pickle.dumps(model))
    assert clone.decision_function_one({"x": 1.0}) == model.decision_function_one({"x": 1.0})
