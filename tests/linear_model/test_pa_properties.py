"""Property tests of the PA updates on random event sequences (hypothesis).

The step tau_t of each event is read off the model, not recomputed: with the intercept learned,
the intercept is the weight of a constant feature of value 1, so it moves by s_t = tau_t y_t
(classification) or tau_t sign(y_t - m_t) (regression). Every other weight must then move by
s_t x_t, which the tests check too.

Sources: Crammer et al. (2006), Figure 1 (PA: loss 0 after the step; PA-I: tau <= C),
Section 5 (regression slab) and Lemma 1 / Knowl 2 (the master relative-loss inequality):
sum_t tau_t (2 l_t - tau_t ||x_t||^2 - 2 l*_t) <= ||u||^2, where here ||x_t||^2 includes the
intercept's 1 and u has an intercept component.

"""

from __future__ import annotations

import math

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from river_pa import PAClassifier, PARegressor

KEYS = ["a", "b", "c", "d", "e"]
values = st.floats(-5.0, 5.0, allow_nan=False, allow_infinity=False)
events = st.dictionaries(st.sampled_from(KEYS), values, max_size=len(KEYS))
labels = st.sampled_from([-1, 1])
targets = st.floats(-20.0, 20.0, allow_nan=False, allow_infinity=False)
classification = st.lists(st.tuples(events, labels), min_size=1, max_size=25)
regression = st.lists(st.tuples(events, targets), min_size=1, max_size=25)
comparators = st.fixed_dictionaries({k: values for k in KEYS + ["_b"]})
SETTINGS = settings(max_examples=150, deadline=None)


def sq_norm(x):
    return 1.0 + sum(v * v for v in x.values())


def scale(model, x):
    """The size of the terms summed into the margin, for a rounding tolerance."""
    w = model.weights
    return 1.0 + abs(model.intercept) + sum(abs(w.get(k, 0.0) * v) for k, v in x.items())


def step(model, x, y):
    """Learn (x, y); return (margin before, signed step s), checking w moved by s x."""
    before_w, before_b = dict(model.weights), model.intercept
    margin = model.predict_one(x) if isinstance(model, PARegressor) else (
        model.decision_function_one(x))
    model.learn_one(x, y)
    s = model.intercept - before_b
    after = model.weights
    for k, v in x.items():
        expected = before_w.get(k, 0.0) + s * v
        assert after.get(k, 0.0) == pytest.approx(expected, rel=1e-9, abs=1e-9 * scale(model, x))
    return margin, s


@SETTINGS
@given(classification)
def test_hard_pa_leaves_zero_hinge_loss(seq):
    model = PAClassifier(variant="PA")
    for x, y in seq:
        model.learn_one(x, y)
        assert y * model.decision_function_one(x) >= 1.0 - 1e-12 * scale(model, x)


@SETTINGS
@given(classification, st.floats(1e-3, 10.0))
def test_pa_i_step_is_at_most_C(seq, C):
    model = PAClassifier(variant="PA-I", C=C)
    for x, y in seq:
        margin, s = step(model, x, y)
        tau = s * y
        assert -1e-12 <= tau <= C * (1 + 1e-12) + 1e-12 * abs(model.intercept)
        # and PA-I is the full projection whenever that step is shorter than C
        loss = max(0.0, 1.0 - y * margin)
        assert tau == pytest.approx(min(C, loss / sq_norm(x)), rel=1e-9, abs=1e-9 * scale(model, x))


@SETTINGS
@given(regression, st.floats(0.0, 2.0))
def test_hard_regression_step_lands_in_the_slab(seq, epsilon):
    model = PARegressor(variant="PA", epsilon=epsilon)
    for x, y in seq:
        model.learn_one(x, y)
        assert abs(model.predict_one(x) - y) <= epsilon + 1e-9 * scale(model, x)


def master_terms(model, seq, loss_of, u):
    """(left-hand side, ||u||^2) of the master inequality over the sequence."""
    lhs = 0.0
    for x, y in seq:
        margin, s = step(model, x, y)
        loss = loss_of(margin, y)
        tau = abs(s)
        u_loss = loss_of(u["_b"] + sum(u[k] * v for k, v in x.items()), y)
        lhs += tau * (2 * loss - tau * sq_norm(x) - 2 * u_loss)
    return lhs, sum(v * v for v in u.values())


def hinge(margin, y):
    return max(0.0, 1.0 - y * margin)


@SETTINGS
@given(classification, comparators, st.sampled_from(["PA", "PA-I", "PA-II"]), st.floats(0.01, 5))
def test_master_inequality_classification(seq, u, variant, C):
    lhs, rhs = master_terms(PAClassifier(variant=variant, C=C), seq, hinge, u)
    assert lhs <= rhs + 1e-7 * (1 + abs(lhs) + rhs)


@SETTINGS
@given(regression, comparators, st.sampled_from(["PA", "PA-I", "PA-II"]), st.floats(0.01, 5),
       st.floats(0.0, 1.0))
def test_master_inequality_regression(seq, u, variant, C, epsilon):
    def eps_loss(margin, y):
        return max(0.0, abs(margin - y) - epsilon)

    lhs, rhs = master_terms(PARegressor(variant=variant, C=C, epsilon=epsilon), seq, eps_loss, u)
    assert lhs <= rhs + 1e-7 * (1 + abs(lhs) + rhs)


def test_master_inequality_is_tight_enough_to_fail():
    """The checked quantity is not vacuous: with u = 0 the left side is positive after a step."""
    lhs, rhs = master_terms(PAClassifier(variant="PA"), [({"a": 1.0}, 1)], hinge,
                            {k: 0.0 for k in KEYS + ["_b"]})
    # PA: tau = 1/2, l = 1, ||x||^2 = 2, l* = 1 -> 0.5 (2 - 1 - 2) = -0.5 <= 0; with u = (1, 0):
    assert math.isclose(lhs, -0.5) and rhs == 0.0
    lhs, rhs = master_terms(PAClassifier(variant="PA"), [({"a": 1.0}, 1)], hinge,
                            {**{k: 0.0 for k in KEYS}, "a": 1.0, "_b": 0.0})
    assert math.isclose(lhs, 0.5) and rhs == 1.0
