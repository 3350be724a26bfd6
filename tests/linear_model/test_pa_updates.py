"""Hand-computed single PA updates (Crammer et al. 2006, Figure 1 and Section 5).

Every expected value below is worked out on paper from the step sizes
PA: tau = l/||x||^2, PA-I: tau = min(C, l/||x||^2), PA-II: tau = l/(||x||^2 + 1/(2C)),
where ||x||^2 counts the intercept's constant feature (value 1) when it is learned.

"""

from __future__ import annotations

import pickle

import pytest
from river import datasets

from river_pa import PAClassifier, PARegressor

X2 = {"a": 2.0, "b": -1.0}  # ||x||^2 = 5, or 6 with the intercept


def state(model):
    return dict(model.weights), model.intercept


# -- classification -------------------------------------------------------------------------


def test_hard_pa_step_lands_at_margin_exactly_one():
    # l = 1, ||x||^2 = 1 + 1 (intercept), tau = 1/2: w_a = b = 1/2, margin 1/2 + 1/2 = 1.
    model = PAClassifier(variant="PA")
    model.learn_one({"a": 1}, True)
    assert state(model) == ({"a": 0.5}, 0.5)
    assert model.decision_function_one({"a": 1}) == 1.0


@pytest.mark.parametrize(
    "variant, C, intercept, y, expected",
    [
        # PA: tau = 1/6 (intercept) or 1/5 (none)
        ("PA", 1.0, True, True, ({"a": 2 / 6, "b": -1 / 6}, 1 / 6)),
        ("PA", 1.0, False, False, ({"a": -2 / 5, "b": 1 / 5}, 0.0)),
        # PA-I, C = 0.1 < 1/6: tau = C
        ("PA-I", 0.1, True, True, ({"a": 0.2, "b": -0.1}, 0.1)),
        ("PA-I", 0.1, False, True, ({"a": 0.2, "b": -0.1}, 0.0)),
        # PA-I, C = 1 > 1/6: tau = 1/6, the full projection
        ("PA-I", 1.0, True, False, ({"a": -2 / 6, "b": 1 / 6}, -1 / 6)),
        # PA-II, C = 0.5: tau = 1/(6 + 1) = 1/7, or 1/(5 + 1) = 1/6 without intercept
        ("PA-II", 0.5, True, False, ({"a": -2 / 7, "b": 1 / 7}, -1 / 7)),
        ("PA-II", 0.5, False, True, ({"a": 2 / 6, "b": -1 / 6}, 0.0)),
    ],
)
def test_first_step(variant, C, intercept, y, expected):
    model = PAClassifier(variant=variant, C=C, learn_intercept=intercept)
    model.learn_one(X2, y)
    weights, b = state(model)
    assert weights == pytest.approx(expected[0], abs=1e-15)
    assert b == pytest.approx(expected[1], abs=1e-15)


def test_second_step_uses_the_updated_weights():
    # Step 1 (PA-I, C=1): w = (1/3, -1/6), b = 1/6. Step 2 on {"a": 1}, y = -1:
    # margin = 1/3 + 1/6 = 1/2, l = 3/2, ||x||^2 = 2, tau = min(1, 3/4) = 3/4,
    # w_a = 1/3 - 3/4 = -5/12, b = 1/6 - 3/4 = -7/12, w_b unchanged.
    model = PAClassifier(variant="PA-I", C=1.0)
    model.learn_one(X2, True)
    assert model.decision_function_one({"a": 1}) == pytest.approx(0.5, abs=1e-15)
    model.learn_one({"a": 1}, False)
    weights, b = state(model)
    assert weights == pytest.approx({"a": -5 / 12, "b": -1 / 6}, abs=1e-15)
    assert b == pytest.approx(-7 / 12, abs=1e-15)


def test_no_update_when_the_margin_is_already_one():
    model = PAClassifier(variant="PA")
    model.learn_one({"a": 1}, True)  # margin exactly 1 now: loss 0
    before = pickle.dumps(model)
    model.learn_one({"a": 1}, True)
    assert pickle.dumps(model) == before


def test_empty_dict_moves_only_the_intercept():
    # ||x||^2 = 1 (the intercept alone): hard PA puts b at y.
    model = PAClassifier(variant="PA")
    model.learn_one({}, False)
    assert state(model) == ({}, -1.0)
    assert model.predict_proba_one({})[True] == pytest.approx(1 / (1 + 2.718281828459045))
    # Without an intercept there is nothing to move: no change, no error.
    model = PAClassifier(variant="PA", learn_intercept=False)
    model.learn_one({}, True)
    assert state(model) == ({}, 0.0)


def test_label_encodings_give_identical_models():
    events = list(datasets.Phishing())[:400]
    models = {enc: PAClassifier(variant="PA-II", C=0.3) for enc in ("bool", "01", "pm1")}
    for x, y in events:
        models["bool"].learn_one(x, y)
        models["01"].learn_one(x, int(y))
        models["pm1"].learn_one(x, 1 if y else -1)
    ref = models["bool"]
    assert ref.weights and ref.intercept != 0.0
    for model in models.values():
        assert state(model) == state(ref)
        assert pickle.dumps(model) == pickle.dumps(ref)


# -- sample weights -------------------------------------------------------------------------


def test_sample_weight_scales_C():
    # PA-I: tau = min(w C, l/||x||^2) = min(0.05, 1/6) = 0.05
    model = PAClassifier(variant="PA-I", C=0.1)
    model.learn_one(X2, True, w=0.5)
    weights, b = state(model)
    assert weights == pytest.approx({"a": 0.1, "b": -0.05}, abs=1e-15)
    assert b == pytest.approx(0.05, abs=1e-15)
    # PA-II: tau = l/(||x||^2 + 1/(2 w C)) = 1/(6 + 1/2) = 2/13
    model = PAClassifier(variant="PA-II", C=0.5)
    model.learn_one(X2, True, w=2.0)
    weights, b = state(model)
    assert weights == pytest.approx({"a": 4 / 13, "b": -2 / 13}, abs=1e-15)
    assert b == pytest.approx(2 / 13, abs=1e-15)


@pytest.mark.parametrize("variant", ["PA-I", "PA-II"])
def test_sample_weight_equals_scaled_C_on_a_stream(variant):
    events = list(datasets.Phishing())[:300]
    weighted, scaled = PAClassifier(variant=variant, C=0.05), PAClassifier(variant=variant, C=0.1)
    for x, y in events:
        weighted.learn_one(x, y, w=2.0)
        scaled.learn_one(x, y)
    assert state(weighted) == state(scaled)


@pytest.mark.parametrize("variant", ["PA", "PA-I", "PA-II"])
def test_zero_sample_weight_is_a_no_op(variant):
    model = PAClassifier(variant=variant)
    model.learn_one({"a": 1.0}, True)
    before = pickle.dumps(model)
    model.learn_one({"a": -3.0, "new": 1.0}, True, w=0.0)
    assert pickle.dumps(model) == before
    assert "new" not in model._index.positions


def test_hard_pa_makes_the_full_projection_for_any_positive_weight():
    for w in (1e-3, 0.3, 7.0):
        model = PAClassifier(variant="PA")
        model.learn_one({"a": 1}, True, w=w)
        assert model.decision_function_one({"a": 1}) == 1.0


@pytest.mark.parametrize("w", [-1.0, float("nan"), float("inf"), "1"])
def test_bad_sample_weight(w):
    model = PAClassifier()
    with pytest.raises(ValueError, match="sample weight"):
        model.learn_one({"a": 1.0}, True, w=w)


# -- regression -----------------------------------------------------------------------------


def test_hard_pa_regression_step_predicts_the_target_exactly():
    model = PARegressor(variant="PA", epsilon=0.0, learn_intercept=False)
    model.learn_one({"a": 1}, 5)
    assert model.predict_one({"a": 1}) == 5.0


def test_hard_pa_regression_step_lands_on_the_slab_edge():
    # l = 5 - 0.5 = 4.5, ||x||^2 = 2, tau = 2.25: prediction 4.5 = y - epsilon.
    model = PARegressor(variant="PA", epsilon=0.5)
    model.learn_one({"a": 1}, 5)
    assert state(model) == ({"a": 2.25}, 2.25)
    assert model.predict_one({"a": 1}) == 4.5


def test_pa_i_regression_two_steps():
    # Step 1: l = 2 - 0.1 = 1.9, ||x||^2 = 9 + 1, tau = min(0.5, 0.19) = 0.19:
    # w_a = 0.57, b = 0.19, prediction 1.9.
    # Step 2 on {"a": 1}, y = -4: prediction 0.76, l = 4.76 - 0.1 = 4.66, ||x||^2 = 2,
    # tau = min(0.5, 2.33) = 0.5, sign(y - m) = -1: w_a = 0.07, b = -0.31.
    model = PARegressor(variant="PA-I", C=0.5, epsilon=0.1)
    model.learn_one({"a": 3}, 2.0)
    assert model.predict_one({"a": 3}) == pytest.approx(1.9, abs=1e-15)
    model.learn_one({"a": 1}, -4.0)
    weights, b = state(model)
    assert weights == pytest.approx({"a": 0.07}, abs=1e-15)
    assert b == pytest.approx(-0.31, abs=1e-15)


def test_pa_ii_regression_step():
    # l = 3, ||x||^2 = 2, tau = 3/(2 + 1/(2*1)) = 1.2: w = (1.2, 1.2), prediction 2.4.
    model = PARegressor(variant="PA-II", C=1.0, epsilon=0.0, learn_intercept=False)
    model.learn_one({"a": 1, "b": 1}, 3.0)
    assert state(model) == (pytest.approx({"a": 1.2, "b": 1.2}, abs=1e-15), 0.0)
    # With sample weight 0.25: tau = 3/(2 + 1/(2*0.25)) = 3/4.
    model = PARegressor(variant="PA-II", C=1.0, epsilon=0.0, learn_intercept=False)
    model.learn_one({"a": 1, "b": 1}, 3.0, w=0.25)
    assert model.predict_one({"a": 1, "b": 1}) == pytest.approx(1.5, abs=1e-15)


def test_regression_inside_the_slab_is_passive():
    # |0 - 0.99| <= epsilon: loss 0, no step (the key may enter the vocabulary, at weight 0).
    model = PARegressor(variant="PA", epsilon=1.0)
    model.learn_one({"a": 1}, 0.99)
    assert state(model) == ({}, 0.0)
    model.learn_one({"a": 1}, 1.5)  # l = 0.5, tau = 0.25
    assert state(model) == ({"a": 0.25}, 0.25)


@pytest.mark.parametrize("y, error", [(float("nan"), ValueError), ("1", TypeError), (None, ValueError)])
def test_bad_regression_target(y, error):
    model = PARegressor()
    before = pickle.dumps(model)
    with pytest.raises(error, match="target y"):
        model.learn_one({"a": 1.0}, y)
    assert pickle.dumps(model) == before


def test_probabilities_are_floats_past_the_sigmoid_cut():
    # River's sigmoid returns the int 0 or 1 beyond |m| > 30: the daemon's predictions mixed
    # {"False": 0.0, "True": 1}
    model = PAClassifier(variant="PA")
    model.learn_one({"a": 1.0}, True)  # w_a = b = 0.5: m = 0.5 * 100 + 0.5 = 50.5
    for x, p in [({"a": 100.0}, 1.0), ({"a": -100.0}, 0.0)]:
        proba = model.predict_proba_one(x)
        assert proba == {False: 1.0 - p, True: p}
        assert [type(v) for v in proba.values()] == [float, float]
