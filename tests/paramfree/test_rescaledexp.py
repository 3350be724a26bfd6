"""RescaledExp (Cutkosky and Boahen 2016): hand-computed rounds, Theorem 2's bound, the overflow
guard on Theorem 1's adversary, River integration, pickling and input validation."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from river import datasets, linear_model, metrics, optim, utils

import river_pa
from river_pa.paramfree import _numba as K

SQRT2 = math.sqrt(2.0)


def eta(M, Q):
    """eta_t of Algorithm 1 with k = sqrt(2)."""
    return 1.0 / (SQRT2 * math.sqrt(2.0 * (M + Q)))


def test_first_rounds_by_hand():
    """g = 2, 1, -3, 5 (> 2L: restart), 1 on one coordinate, computed from Algorithm 1."""
    opt = river_pa.RescaledExp()
    w = {"a": 0.0}
    # t=1: L=2, G=2, Q=4, M=max(0, 2*2-4)=0
    opt.step(w, {"a": 2.0})
    assert w["a"] == pytest.approx(-math.expm1(eta(0, 4) * 2), rel=1e-12)
    assert w["a"] == pytest.approx(-(math.exp(0.5) - 1), rel=1e-12)
    # t=2: G=3, Q=5, M=max(0, 3*2-5)=1
    opt.step(w, {"a": 1.0})
    assert w["a"] == pytest.approx(-math.expm1(eta(1, 5) * 3), rel=1e-12)
    # t=3: G=0, Q=14, M=max(1, 0-14)=1: the direction vanishes, w = 0
    opt.step(w, {"a": -3.0})
    assert w["a"] == 0.0
    # t=4: |g| = 5 > 2L = 4: new epoch, L = 5, w = 0
    opt.step(w, {"a": 1.0})
    opt.step(w, {"a": 5.0})
    assert w["a"] == 0.0
    # t=6: G=1, Q=1, M=max(0, 1*5-1)=4
    opt.step(w, {"a": 1.0})
    assert w["a"] == pytest.approx(-math.expm1(eta(4, 1) * 1), rel=1e-12)
    assert opt.n_iterations == 6


@pytest.mark.parametrize(
    "center, expected_center",
    [(None, lambda w2, w3: 0.0), ("last_play", lambda w2, w3: w3),
     ("play_before_last", lambda w2, w3: w2)],
)
def test_recentred_first_rounds_by_hand(center, expected_center):
    """Algorithm 2: g = 1, 1, then 3 > 2L restarts about w_t (last_play) or w_{t-1}."""
    opt = river_pa.RescaledExp(center=center)
    w = {"a": 0.0}
    opt.step(w, {"a": 1.0})  # L=1, G=1, Q=1, M=0
    w2 = -math.expm1(eta(0, 1))
    assert w["a"] == pytest.approx(w2, rel=1e-12)
    opt.step(w, {"a": 1.0})  # G=2, Q=2, M=max(0, 2-2)=0
    w3 = -math.expm1(eta(0, 2) * 2)
    assert w["a"] == pytest.approx(w3, rel=1e-12)
    opt.step(w, {"a": 3.0})  # restart: the next play is the centre
    centre = expected_center(w2, w3)
    assert w["a"] == pytest.approx(centre, rel=1e-12)
    opt.step(w, {"a": 1.0})  # L=3, G=1, Q=1, M=max(0, 1*3-1)=2
    assert w["a"] == pytest.approx(centre - math.expm1(eta(2, 1)), rel=1e-12)


def test_full_vector_first_rounds_by_hand():
    """The dimension-free variant scales the whole direction G / ||G||."""
    opt = river_pa.RescaledExp(coordinatewise=False)
    w = {"a": 0.0, "b": 0.0}
    opt.step(w, {"a": 3.0, "b": 4.0})  # ||g|| = 5 = L, Q = 25, M = max(0, 5*5-25) = 0
    s = math.expm1(eta(0, 25) * 5) / 5
    assert (w["a"], w["b"]) == pytest.approx((-3 * s, -4 * s), rel=1e-12)
    opt.step(w, {"b": 1.0})  # G = (3, 5), Q = 26, M = 5 sqrt(34) - 26
    gn = math.sqrt(34.0)
    M = 5 * gn - 26
    s = math.expm1(eta(M, 26) * gn) / gn
    assert (w["a"], w["b"]) == pytest.approx((-3 * s, -5 * s), rel=1e-12)


def test_zero_gradient_leaves_a_coordinate_untouched():
    opt = river_pa.RescaledExp()
    w = {"a": 0.0, "b": 0.0}
    opt.step(w, {"a": 1.0, "b": 0.0})
    state = opt._st.copy()
    assert w["b"] == 0.0
    opt.step(w, {"a": 0.0, "b": 0.0})
    np.testing.assert_array_equal(opt._st, state)


def test_numpy_vectors_match_dicts():
    rng = np.random.default_rng(3)
    grads = rng.normal(size=(50, 4))
    a, b = river_pa.RescaledExp(), river_pa.RescaledExp()
    wa, wb = np.zeros(4), {}
    for g in grads:
        a.step(wa, g)
        b.step(wb, dict(enumerate(g.tolist())))
    np.testing.assert_array_equal(wa, [wb[i] for i in range(4)])


def psi(u):
    return (abs(u) + 1) * math.log(abs(u) + 1) - abs(u)


def run_1d(grads, center=K.CENTER_NONE):
    """Plays and M_t of one 1-D instance of Algorithm 1 on `grads`."""
    st = np.zeros((1, K.N_STATE))
    plays, ms = [], []
    for g in grads:
        plays.append(st[0, K.W])
        K.rescaledexp_1d(st, 0, float(g), center)
        ms.append(st[0, K.M])
    return np.array(plays), max(ms)


def theorem2_bound(grads, u, m_max):
    """Theorem 2: (2 psi(u) + 96) n sqrt(M_max + sum g^2) + 8 L_max n min(e^{8 max g^2/L(t)^2},
    e^{sqrt(T/2)}), n = log2(L_max / L_1) + 1."""
    a = np.abs(grads)
    L1, Lmax = a[0], a.max()
    n = math.log2(Lmax / L1) + 1
    ratio = float(np.max((a[1:] / np.maximum.accumulate(a)[:-1]) ** 2))  # max_t g_t^2 / L(t)^2
    expo = min(8 * ratio, math.sqrt(len(a) / 2))
    return (2 * psi(u) + 96) * n * math.sqrt(m_max + (a**2).sum()) + 8 * Lmax * n * math.exp(expo)


@pytest.mark.parametrize("seed", range(4))
def test_regret_within_theorem_2_on_random_linear_losses(seed):
    """1-D linear losses g_t w, g_t = +-s with P(+) = 0.35 (a drift, so far comparators gain
    linearly) and a random scale s: R_T(u) = sum g_t (w_t - u) <= Theorem 2's bound for every
    u tried. The bound has teeth here: a learner that never moves (w = 0) breaks it at u = 100."""
    rng = np.random.default_rng(seed)
    T = 20_000
    grads = np.where(rng.random(T) < 0.35, 1.0, -1.0) * rng.uniform(0.1, 10.0)
    plays, m_max = run_1d(grads)
    assert np.isfinite(plays).all()
    for u in (-1000.0, -100.0, -10.0, -1.0, 0.0, 1.0, 10.0, 100.0, 1000.0):
        regret = float(np.sum(grads * (plays - u)))
        assert regret <= theorem2_bound(grads, u, m_max)
    lazy_regret = float(np.sum(grads * (0.0 - 100.0)))
    assert lazy_regret > theorem2_bound(grads, 100.0, m_max)


def test_theorem_1_adversary_and_long_same_sign_runs_stay_finite():
    """Theorem 1's adversary: g = -1 while w < 0.5 exp(sqrt(T) / (4 log 2 c)), then g = 2T once
    and 0 after. With c = 1 the threshold (exp(279)) is crossed and punished; with c = 0.1 it
    is exp(2793), beyond any float: the learner sees g = -1 for T = 600,000 rounds, its exponent
    sqrt(n)/2 passes the cap (354.9) after ~504,000 of them, and the weight stays finite."""
    T = 600_000
    for c in (1.0, 0.1):
        log_threshold = math.sqrt(T) / (4 * math.log(2) * c) - math.log(2)
        st = np.zeros((1, K.N_STATE))
        punished = False
        for _ in range(T):
            w = st[0, K.W]
            if punished:
                g = 0.0
            elif w > 0 and math.log(w) >= log_threshold:
                g, punished = 2.0 * T, True
            else:
                g = -1.0
            K.rescaledexp_1d(st, 0, g, K.CENTER_NONE)
        assert np.isfinite(st).all()
        if c == 1.0:
            assert punished and st[0, K.W] == 0.0 and st[0, K.L] == 2.0 * T
        else:
            assert not punished
            assert st[0, K.W] == pytest.approx(math.expm1(K.EXP_CAP))
            assert math.sqrt(T) / 2 > K.EXP_CAP  # the cap was really reached


def test_long_same_sign_runs_through_the_estimators_stay_finite():
    """A constant feature and a label the model can never fit with the squared loss: 1e5
    same-sign gradients; every weight, prediction and state entry stays finite."""
    for coordinatewise in (True, False):
        model = river_pa.RescaledExpRegressor(
            loss=optim.losses.Absolute(), coordinatewise=coordinatewise
        )
        for _ in range(100_000 if coordinatewise else 20_000):
            model.learn_one({"a": 1.0}, 1e300)
        assert np.isfinite(model._st).all()
        assert math.isfinite(model.predict_one({"a": 1.0}))
    opt = river_pa.RescaledExp(coordinatewise=False)
    w = np.zeros(3)
    for _ in range(20_000):
        opt.step(w, np.array([-1.0, -2.0, 0.5]))
    assert np.isfinite(w).all() and np.isfinite(opt._st).all() and w[1] > w[0] > 0


def test_classifier_first_round_by_hand():
    """x = {a: 2}, y = True, hinge: y_hat = 0, dl/dy_hat = -1, so g_a = -2 (L=2, eta=1/4) and
    g_intercept = -1 (L=1, eta=1/2): both weights become exp(1/2) - 1."""
    model = river_pa.RescaledExpClassifier(loss=optim.losses.Hinge())
    assert model.decision_function_one({"a": 2.0}) == 0.0
    model.learn_one({"a": 2.0}, True)
    assert model.weights == {"a": pytest.approx(math.exp(0.5) - 1, rel=1e-12)}
    assert model.intercept == pytest.approx(math.exp(0.5) - 1, rel=1e-12)
    assert model.decision_function_one({"a": 2.0}) == pytest.approx(3 * (math.exp(0.5) - 1))


def test_optimizer_inside_river_linear_models():
    for coordinatewise in (True, False):
        model = linear_model.LogisticRegression(
            optimizer=river_pa.RescaledExp(coordinatewise=coordinatewise)
        )
        metric = metrics.Accuracy()
        for x, y in datasets.Phishing():
            metric.update(y, model.predict_one(x))
            model.learn_one(x, y)
        assert metric.get() > 0.80
        clone = pickle.loads(pickle.dumps(model))
        x = next(iter(datasets.Phishing()))[0]
        assert clone.predict_proba_one(x) == model.predict_proba_one(x)


def test_full_variant_refreshes_masked_weights_in_look_ahead():
    """River passes a VectorDict masked to the event's keys: weights of absent keys are stale
    until look_ahead rewrites them from the state before the next gradient."""
    opt = river_pa.RescaledExp(coordinatewise=False)
    store = {}
    opt.step(utils.VectorDict(store, None, {"a": 1}), {"a": 1.0})
    opt.step(utils.VectorDict(store, None, {"b": 1}), {"b": 1.0})
    stale = store["a"]
    opt.look_ahead(utils.VectorDict(store, None, {"a": 1}))
    assert store["a"] != stale
    assert store["a"] == store["b"]  # G = (1, 1): both coordinates carry the same weight


def test_pickled_model_continues_identically():
    stream = list(datasets.Phishing())[:300]
    a = river_pa.RescaledExpClassifier(coordinatewise=False, center="last_play")
    for x, y in stream[:150]:
        a.learn_one(x, y)
    b = pickle.loads(pickle.dumps(a))
    for x, y in stream[150:]:
        assert a.predict_proba_one(x) == b.predict_proba_one(x)
        a.learn_one(x, y)
        b.learn_one(x, y)


def test_bad_input_is_rejected_and_leaves_the_model_unchanged():
    model = river_pa.RescaledExpClassifier()
    model.learn_one({"a": 1.0}, True)
    before = pickle.dumps(model)
    with pytest.raises(TypeError, match="'b'"):
        model.learn_one({"a": 1.0, "b": "x"}, True)
    with pytest.raises(ValueError, match="'b'"):
        model.learn_one({"a": 1.0, "b": float("nan")}, False)
    with pytest.raises(ValueError, match="RescaledExpClassifier is binary"):
        model.learn_one({"a": 1.0}, "spam")
    with pytest.raises(ValueError, match="sample weight"):
        model.learn_one({"a": 1.0}, True, w=-1.0)
    assert pickle.dumps(model) == before
    with pytest.raises(ValueError, match="center must be one of"):
        river_pa.RescaledExpClassifier(center="middle")
    with pytest.raises(ValueError, match="loss must be a river.optim.losses.BinaryLoss"):
        river_pa.RescaledExpClassifier(loss=optim.losses.Squared())
    with pytest.raises(ValueError, match="gradient of 'a' is not finite"):
        river_pa.RescaledExp().step({}, {"a": float("inf")})


class _Algorithm1:
    """A plain transcription of Algorithm 1 on one coordinate (the audit's reference)."""

    def __init__(self):
        self.L = None
        self.G = self.Q = self.M = self.w = 0.0
        self.restarts = 0

    def step(self, g):
        if g == 0.0:  # Section 3: a zero gradient costs nothing and changes nothing
            return
        if self.L is None:
            self.L = abs(g)  # L_1 = |g_1|, p = 1 / L_1
        self.G += g
        self.Q += g * g
        self.M = max(self.M, abs(self.G) * self.L - self.Q)  # |g_{t*:t}| / p - ||g||^2_{t*:t}
        eta = 1.0 / (SQRT2 * math.sqrt(2.0 * (self.M + self.Q)))
        self.w = -math.copysign(math.exp(eta * abs(self.G)) - 1.0, self.G) if self.G else 0.0
        if abs(g) > 2.0 * self.L:  # new epoch: L_{t+1} = |g_t|, sums and M reset, w_{t+1} = 0
            self.L = abs(g)
            self.G = self.Q = self.M = self.w = 0.0
            self.restarts += 1


def test_classifier_matches_a_plain_transcription_of_algorithm_1():
    """Coordinate-wise (Appendix C.2) hinge classifier vs one `_Algorithm1` per feature and the
    intercept, on features whose scales differ by 1e4 and whose values grow (so epochs restart)
    and are often 0 (coordinates left alone): every margin agrees."""
    rng = np.random.default_rng(7)
    model = river_pa.RescaledExpClassifier(loss=optim.losses.Hinge())
    ref = {}
    scales = np.array([1e-2, 1.0, 1e2, 3.0])
    for t in range(600):
        v = rng.normal(size=4) * scales * (1 + t / 100) * (rng.random(4) < 0.6)
        x = {i: float(v[i]) for i in range(4) if v[i] != 0.0}
        y = bool(v[1] + 0.01 * v[2] - 50 * v[0] + rng.normal() > 0)
        xb = {**x, "b": 1.0}
        m_ref = sum(ref[k].w * val for k, val in xb.items() if k in ref)
        assert model.decision_function_one(x) == pytest.approx(m_ref, rel=1e-12, abs=1e-12)
        g = -(1.0 if y else -1.0) if (m_ref if y else -m_ref) < 1.0 else 0.0
        for k, val in xb.items():
            ref.setdefault(k, _Algorithm1()).step(g * val)
        model.learn_one(x, y)
    assert sum(r.restarts for r in ref.values()) >= 4


@pytest.mark.parametrize("coordinatewise", [True, False])
def test_huge_values_are_rejected_before_their_squares_overflow(coordinatewise):
    """|x| >= 1e150 is a ValueError naming the feature, the model unchanged; predictions stay
    finite."""
    model = river_pa.RescaledExpRegressor(coordinatewise=coordinatewise)
    model.learn_one({"a": 1.0, "b": 2.0}, 1.0)
    before = pickle.dumps(model)
    for _ in range(3):
        with pytest.raises(ValueError, match=r"feature 'a' has value 1e\+160.*below 1e\+150"):
            model.learn_one({"a": 1e160, "b": 1e160}, 1.0)
    assert pickle.dumps(model) == before
    assert math.isfinite(model.predict_one({"a": 1, "b": 1}))


@pytest.mark.parametrize("coordinatewise", [True, False])
def test_gradients_whose_squares_underflow_follow_algorithm_1(coordinatewise):
    """Algorithm 1 is invariant to scaling every gradient by c > 0 (eta |G| is unitless). At
    c = 1e-300, g^2 underflows to 0 (M + Q = 0 raised ZeroDivisionError mid-update): the
    weights are those of the hand-computed rounds at c = 1 wherever M_t + Q attains its floor
    |G| L_t. On round 4 it does not (M + Q = 16 c^2, lost to underflow): the exponent is then
    the bound sqrt(|G| / L_t) / 2 instead of eta(1, 15) |G|, and the next restart clears it."""
    opt = river_pa.RescaledExp(coordinatewise=coordinatewise)
    w = {"a": 0.0}
    expected = [-(math.exp(0.5) - 1), -math.expm1(eta(1, 5) * 3), 0.0,
                -math.expm1(0.5 * math.sqrt(1 / 2)), 0.0, -math.expm1(eta(4, 1) * 1)]
    for g, e in zip([2.0, 1.0, -3.0, 1.0, 5.0, 1.0], expected):
        opt.step(w, {"a": 1e-300 * g})
        assert w["a"] == pytest.approx(e, rel=1e-12)


@pytest.mark.parametrize("coordinatewise", [True, False])
def test_tiny_feature_values_learn_without_error(coordinatewise):
    """The tester's repro: learning 1e-300 features raised ZeroDivisionError. Now the
    coordinate-wise weights take Algorithm 1's first step e^(1/2) - 1 (as at unit scale) and
    the full variant, with no intercept, the same step along -G / ||G||."""
    model = river_pa.RescaledExpRegressor(coordinatewise=coordinatewise,
                                          learn_intercept=False)
    model.learn_one({"a": -1e-300, "b": 1e-300}, 0.0)
    model.learn_one({"a": 1e-300, "b": 1e-300}, 1.0)
    step = math.exp(0.5) - 1
    expected = step if coordinatewise else step / math.sqrt(2.0)
    assert model.weights["a"] == pytest.approx(expected, rel=1e-12)
    assert model.weights["b"] == pytest.approx(expected, rel=1e-12)


def test_repr_shows_the_parameters_only():
    opt = river_pa.RescaledExp(coordinatewise=False, center="last_play")
    opt.step({"a": 0.0}, {"a": 2.0})
    assert repr(opt) == "RescaledExp({'coordinatewise': False, 'center': 'last_play'})"
