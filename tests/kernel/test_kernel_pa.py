"""KernelPAClassifier: equivalences with the linear learners and the binary kernel PA, the
budgets (projectron and BPA-S), exact batches, bad input."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest
from river import datasets

import river_pa
from river_pa.kernel import _numba as _svkernels


def test_linear_kernel_is_the_multiclass_pa_without_intercept():
    rows = list(datasets.ImageSegments().take(200))
    kernel = river_pa.KernelPAClassifier(kernel="linear", variant="PA-II", C=0.01)
    linear = river_pa.PAMultiClassifier(variant="PA-II", C=0.01, learn_intercept=False)
    for x, y in rows:
        assert kernel.predict_one(x) == linear.predict_one(x)
        kernel.learn_one(x, y)
        linear.learn_one(x, y)
    x = rows[-1][0]
    a, b = kernel.decision_function_one(x), linear.decision_function_one(x)
    assert a.keys() == b.keys()
    assert np.allclose(list(a.values()), list(b.values()), rtol=1e-9)


def _binary_kernel_pa(stream, K, variant, C):
    """The binary kernel PA of Crammer et al. (2006), Figure 1 in kernel form (reference)."""
    sv, alpha, margins = [], [], []
    for x, y in stream:
        f = sum(a * K(v, x) for v, a in zip(sv, alpha))
        margins.append(f)
        loss = max(0.0, 1.0 - y * f)
        q = K(x, x)
        tau = {"PA": loss / q, "PA-I": min(C, loss / q), "PA-II": loss / (q + 1 / (2 * C))}
        if loss > 0:
            sv.append(x)
            alpha.append(tau[variant] * y)
    return margins


@pytest.mark.parametrize("variant", ["PA", "PA-I", "PA-II"])
def test_two_labels_follow_the_binary_kernel_pa_with_twice_c(variant):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    K = lambda a, b: (1.0 + 0.5 * a @ b) ** 2  # noqa: E731
    reference = _binary_kernel_pa(zip(X, y), K, variant, 2 * 0.05)
    model = river_pa.KernelPAClassifier(kernel="poly", degree=2, gamma=0.5, coef0=1.0,
                                        variant=variant, C=0.05)
    model._add_label(True), model._add_label(False)  # both labels compete from the first event
    for row, label, f in zip(X, y, reference):
        x = dict(enumerate(row))
        s = model.decision_function_one(x)
        assert s[True] - s[False] == pytest.approx(f, abs=1e-12)
        model.learn_one(x, label > 0)


def test_budget_replaces_by_projection():
    """BPA-S with budget 1: the new vector takes over the old one's projected coefficients."""
    model = river_pa.KernelPAClassifier(kernel="rbf", gamma=0.5, variant="PA", budget=1,
                                        budget_rule="BPA-S")
    a, b = {"u": 0.0}, {"u": 1.0}
    model.learn_one(a, "x")
    model.learn_one(a, "y")  # loss 1, K = 1: tau = 1/2, v_1 = a, coefficients (-1/2, +1/2)
    s = model.decision_function_one(b)  # k(a, b) = exp(-0.5)
    k = np.exp(-0.5)
    assert s == pytest.approx({"x": -0.5 * k, "y": 0.5 * k})
    model.learn_one(b, "x")  # loss 1 + k, tau = (1 + k) / 2; a is projected onto b: scale k
    tau = (1 + k) / 2
    assert model.n_support == 1
    coef = model._A[0, :2]
    assert coef == pytest.approx([-0.5 * k + tau, 0.5 * k - tau])
    assert np.array_equal(model._St[:2, 0], [0.0, 1.0])


def test_projectron_steps_inside_the_span_once_full():
    """Linear kernel, budget 1: once full, x is projected onto the span of v_1 = (1, 0)."""
    model = river_pa.KernelPAClassifier(kernel="linear", variant="PA", budget=1)
    model.learn_one({"a": 1.0, "b": 0.0}, "x")  # one label: nothing to separate
    model.learn_one({"a": 1.0, "b": 0.0}, "y")  # loss 1, K = 1: tau = 1/2, A = (-1/2, 1/2)
    assert model._A[0, :2].tolist() == [-0.5, 0.5] and model._Kinv[0, 0] == 1.0
    # x = (2, 1): k = 2, d = K^-1 k = 2, ||P Phi(x)||^2 = k . d = 4; scores x -1, y 1: loss 3,
    # tau = 3 / (2 * 4); A[0] += tau d (-tau d) for x (y)
    model.learn_one({"a": 2.0, "b": 1.0}, "x")
    assert model.n_support == 1 and np.array_equal(model._St[1:3, 0], [1.0, 0.0])
    assert model._A[0, :2] == pytest.approx([-0.5 + 0.75, 0.5 - 0.75])
    # the PA projection inside the span: the event now sits at margin exactly 1
    s = model.decision_function_one({"a": 2.0, "b": 1.0})
    assert s["x"] - s["y"] == pytest.approx(1.0)


def test_projectron_keeps_the_inverse_kernel_matrix():
    rows = list(datasets.ImageSegments().take(300))
    model = river_pa.KernelPAClassifier(kernel="rbf", gamma=0.1, budget=40)
    for x, y in rows:
        model.learn_one(x, y)
    n = model.n_support
    S, sq = model._St[:, :n].T, model._svsq[:n]
    K = np.exp(-0.1 * np.maximum(sq[:, None] + sq[None, :] - 2 * S @ S.T, 0.0))
    assert n == 40
    assert model._Kinv[:n, :n] @ K == pytest.approx(np.eye(n), abs=1e-6)


def test_bad_budget_rule():
    with pytest.raises(ValueError, match="budget_rule must be one of \\['BPA-S', 'projectron'\\], "
                                         "got 'BPA-NN'"):
        river_pa.KernelPAClassifier(budget=5, budget_rule="BPA-NN")


def test_budget_keeps_memory_and_support_flat():
    rows = list(datasets.ImageSegments())
    model = river_pa.KernelPAClassifier(kernel="rbf", gamma=0.1, budget=50)
    sizes = []
    for i, (x, y) in enumerate(rows):
        model.learn_one(x, y)
        if i in (500, 2000):
            sizes.append(len(pickle.dumps(model)))
    assert model.n_support == 50
    assert sizes[1] <= 1.05 * sizes[0]


@pytest.mark.parametrize("rule", ["projectron", "BPA-S"])
def test_learn_many_is_bit_for_bit_a_learn_one_loop(rule):
    rows = list(datasets.ImageSegments().take(90))
    one = river_pa.KernelPAClassifier(kernel="rbf", gamma=0.1, budget=20, budget_rule=rule)
    many = river_pa.KernelPAClassifier(kernel="rbf", gamma=0.1, budget=20, budget_rule=rule)
    w = np.random.default_rng(0).random(90)
    for (x, y), wi in zip(rows, w):
        one.learn_one(x, y, wi)
    for lo in range(0, 90, 30):
        chunk = rows[lo: lo + 30]
        many.learn_many(pd.DataFrame([x for x, _ in chunk]), pd.Series([y for _, y in chunk]),
                        pd.Series(w[lo: lo + 30]))
    assert one.n_support == many.n_support == 20
    assert np.array_equal(one._A, many._A) and np.array_equal(one._St, many._St)


@pytest.mark.parametrize("zeros", [False, True], ids=["dense", "zeros"])
@pytest.mark.parametrize("m", range(10))
def test_the_kernel_row_sums_each_dot_product_in_feature_order(m, zeros):
    """Four features per pass over the support vectors (and the rest one by one): each
    v_i . x is still the left-to-right sum from 0.0, bit for bit, also where the features of
    value 0 (or -0.0) are skipped, and where a sum cancels to 0."""
    rng = np.random.default_rng(m)
    St = rng.normal(size=(12, 9)) * 10.0 ** rng.integers(-8, 8, size=(12, 9))
    idx = rng.choice(12, size=m, replace=False).astype(np.int64)
    val = rng.normal(size=m) * 10.0 ** rng.integers(-8, 8, size=m)
    if zeros:
        val[::3], val[1::4] = 0.0, -0.0
        St[idx[2:4], 0] = 1.0  # v_0 . x cancels to 0.0 at the fourth feature, if nonzero
        val[2:4] = [2.0, -2.0][: len(val[2:4])]
    out = np.empty(7)
    _svkernels.kernel_row(_svkernels.LINEAR, 1, 1.0, 0.0, St, np.zeros(9), 7, idx, val, 0.0,
                          out)
    for i in range(7):
        expected = 0.0
        for j in range(m):
            expected += St[idx[j], i] * val[j]
        assert out[i].tobytes() == np.float64(expected).tobytes()


def test_a_model_pickled_with_support_vectors_as_rows_loads():
    """Pickles written before the support vectors were stored as columns (`_S`, vector x
    feature) load, and predict and learn as the model that wrote them."""
    rows = list(datasets.ImageSegments().take(120))
    model = river_pa.KernelPAClassifier(kernel="rbf", gamma=0.1, budget=30)
    for x, y in rows[:80]:
        model.learn_one(x, y)
    state = model.__getstate__()
    state["_S"] = np.ascontiguousarray(state.pop("_St").T)  # the former layout
    old = river_pa.KernelPAClassifier.__new__(river_pa.KernelPAClassifier)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    for x, y in rows[80:]:
        assert old.predict_proba_one(x) == model.predict_proba_one(x)
        old.learn_one(x, y)
        model.learn_one(x, y)
    assert np.array_equal(old._St, model._St) and np.array_equal(old._A, model._A)


def test_kernel_values():
    args = (2.0, 1.0, 4.0)  # x . v, ||x||^2, ||v||^2
    assert _svkernels.kernel_value(_svkernels.LINEAR, *args, 3, 0.5, 1.0) == 2.0
    assert _svkernels.kernel_value(_svkernels.POLY, *args, 3, 0.5, 1.0) == 8.0
    assert _svkernels.kernel_value(_svkernels.RBF, *args, 3, 0.5, 1.0) == np.exp(-0.5)


@pytest.mark.parametrize("params, field", [
    ({"kernel": "sigmoid"}, "kernel"), ({"degree": 0}, "degree"), ({"gamma": -1}, "gamma"),
    ({"coef0": float("inf")}, "coef0"), ({"budget": 0}, "budget"), ({"C": 0}, "C"),
])
def test_bad_parameters(params, field):
    with pytest.raises(ValueError, match=field):
        river_pa.KernelPAClassifier(**params)


def test_rejected_event_leaves_the_model_unchanged():
    model = river_pa.KernelPAClassifier()
    model.learn_one({"a": 1.0}, "u")
    model.learn_one({"a": -1.0}, "v")
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="'b'"):
        model.learn_one({"a": 1.0, "b": float("inf")}, "w")
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf"])
def test_event_whose_kernel_value_overflows_is_rejected(kernel):
    """||x||^2 = inf (|x| = 1e160) or K(x, x) = inf (a cubic kernel at |x| = 1e60) would store
    inf/NaN support-vector norms: a ValueError naming the feature, the model unchanged, in
    learn_one and learn_many; a large but finite K(x, x) is learned."""
    model = river_pa.KernelPAClassifier(kernel=kernel, degree=3)
    model.learn_one({"a": 1.0, "b": 2.0}, True)
    model.learn_one({"a": -1.0, "b": 0.5}, False)
    before = pickle.dumps(model)
    big = 1e60 if kernel == "poly" else 1e160
    with pytest.raises(ValueError, match=r"feature 'b' has value 1e\+\d+, too large"):
        model.learn_one({"a": 1.0, "b": big}, True)
    with pytest.raises(ValueError, match="'b'"):
        model.learn_many(pd.DataFrame({"a": [1.0, 1.0], "b": [1.0, big]}),
                         pd.Series([True, False]))
    assert pickle.dumps(model) == before
    model.learn_one({"a": 1.0, "b": 1e40}, False)
    n = model.n_support
    assert np.isfinite(model._kd[:n]).all() and np.isfinite(model._svsq[:n]).all()
    assert all(math.isfinite(p) for p in model.predict_proba_one({"a": 1.0, "b": 1.0}).values())
