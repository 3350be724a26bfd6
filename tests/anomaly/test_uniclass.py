"""PAUniclass: the paper's uniclass steps and bounds (River's checks: tests/test_estimators.py).

Source: Crammer et al. (2006), Online Passive-Aggressive Algorithms, JMLR 7, Section 6.
Distances and losses here are recomputed with numpy from the public `center` and `radius`,
independently of the O(event) bookkeeping inside the model.

"""

from __future__ import annotations

import itertools
import math
import pickle

import numpy as np
import pytest
from river import anomaly, datasets

from river_pa import PAUniclass


def sparse_stream(n, n_keys=30, active=6, seed=0, scale=3.0, shift=2.0):
    """Random sparse points: `active` of `n_keys` features around a common mean."""
    rng = np.random.default_rng(seed)
    mean = rng.normal(size=n_keys) * shift
    out = []
    for _ in range(n):
        keys = rng.choice(n_keys, size=active, replace=False)
        out.append({f"k{k}": float(mean[k] + scale * rng.normal()) for k in keys})
    return out


def direct_distance(center: dict, x: dict, extra: float = 0.0) -> float:
    """sqrt(||w - y||^2 + extra^2) over the union of the keys, absent = 0."""
    keys = set(center) | set(x)
    return math.sqrt(sum((center.get(k, 0.0) - x.get(k, 0.0)) ** 2 for k in keys) + extra**2)


def extra_of(model) -> float:
    """w_{n+1} of the learned-radius reduction, from the public radius: sqrt(B^2 - eps_t^2)."""
    return 0.0 if model.epsilon is not None else math.sqrt(model.B**2 - model.radius**2)


def loss_of(model, x) -> float:
    bound = model.radius if model.epsilon is not None else model.B
    return max(0.0, direct_distance(model.center, x, extra_of(model)) - bound)


def move_of(before: dict, after: dict, extra_before: float, extra_after: float) -> float:
    return direct_distance(before, after, extra_before - extra_after)


@pytest.mark.parametrize("epsilon", [0.0, 0.5, 2.0])
def test_hard_pa_step_puts_the_point_on_the_ball(epsilon):
    model = PAUniclass(variant="PA", epsilon=epsilon)
    steps = 0
    for x in sparse_stream(400, seed=1):
        before = direct_distance(model.center, x)
        model.learn_one(x)
        after = direct_distance(model.center, x)
        assert after <= epsilon + 1e-12
        if before > epsilon:
            steps += 1
            assert after == pytest.approx(epsilon, abs=1e-12)
    assert steps > 100


def test_score_matches_a_direct_distance_over_a_long_sparse_stream():
    """The running ||w||^2 and the scaled centre agree with a dense recomputation.

    PA-I with a large C and a small radius shrinks the scale by ~0.1 per step, so the scale
    is folded back into the array many times in 3,000 steps.
    """
    model = PAUniclass(variant="PA-I", C=100.0, epsilon=0.3)
    stream = sparse_stream(3000, n_keys=200, active=8, seed=2)
    for i, x in enumerate(stream):
        model.learn_one(x)
        if i % 7 == 0:
            probe = stream[(i * 31) % len(stream)]
            expected = direct_distance(model.center, probe)
            assert model.score_one(probe) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert model._sq == pytest.approx(sum(v * v for v in model.center.values()), rel=1e-9)


@pytest.mark.parametrize(
    "variant, C, expected_tau",
    [
        ("PA", 1.0, lambda l, C: l),
        ("PA-I", 0.3, lambda l, C: min(C, l)),
        ("PA-II", 0.3, lambda l, C: l / (1 + 1 / (2 * C))),
    ],
)
def test_step_length_is_the_papers_tau(variant, C, expected_tau):
    model = PAUniclass(variant=variant, C=C, epsilon=1.0)
    for x in sparse_stream(200, seed=3):
        before = model.center
        loss = loss_of(model, x)
        model.learn_one(x)
        tau = move_of(before, model.center, 0.0, 0.0)
        assert tau == pytest.approx(expected_tau(loss, C), abs=1e-10)
        if variant == "PA-I":
            assert tau <= C + 1e-12


def test_hand_computed_pa_i_step():
    """y = (6, 8), ||y|| = 10, epsilon = 5: l = 5, PA-I with C = 2 moves 2 along y / 10."""
    model = PAUniclass(variant="PA-I", C=2.0, epsilon=5.0)
    model.learn_one({"a": 6.0, "b": 8.0})
    assert model.center == pytest.approx({"a": 1.2, "b": 1.6})
    assert model.loss_one({"a": 6.0, "b": 8.0}) == pytest.approx(3.0)
    # An event without "b": the centre's b coordinate counts (y_b = 0) and shrinks too.
    model.learn_one({"a": 1.2 + 8.0})
    s = 2.0 / math.hypot(8.0, 1.6)
    assert model.center == pytest.approx({"a": 1.2 + 8.0 * s, "b": 1.6 * (1 - s)})


def test_learned_radius_never_decreases_and_stays_below_b():
    model = PAUniclass(variant="PA-I", C=0.5, epsilon=None, B=4.0)
    assert model.radius == 0.0
    radii = []
    for x in sparse_stream(1500, seed=4):
        before, extra_before = model.center, extra_of(model)
        model.learn_one(x)
        radii.append(model.radius)
        assert move_of(before, model.center, extra_before, extra_of(model)) <= 0.5 + 1e-12
    assert all(b >= a for a, b in itertools.pairwise(radii))
    assert 0.0 < radii[-1] <= 4.0
    assert radii[-1] > radii[10]


def _run_bound(model, stream, u: dict, eps_u: float):
    """Sums of the learner's loss l_t, step tau_t and the competitor's loss l*_t."""
    terms, sq_loss, sq_comp, lin_comp = 0.0, 0.0, 0.0, 0.0
    for x in stream:
        loss = loss_of(model, x)
        comp = max(0.0, direct_distance(u, x) - eps_u)
        before, extra_before = model.center, extra_of(model)
        model.learn_one(x)
        tau = move_of(before, model.center, extra_before, extra_of(model))
        terms += tau * (2 * loss - tau - 2 * comp)
        sq_loss += loss**2
        sq_comp += comp**2
        lin_comp += comp
    return terms, sq_loss, sq_comp, lin_comp


@pytest.mark.parametrize("seed", [5, 6, 7])
@pytest.mark.parametrize("variant", ["PA", "PA-I", "PA-II"])
def test_relative_loss_bounds_fixed_radius(variant, seed):
    """Lemma 1 with ||x_t|| = 1 and w_1 = 0, for any competitor centre u:

        sum_t tau_t (2 l_t - tau_t - 2 l*_t) <= ||u||^2,     l*_t = max(0, ||u - y_t|| - eps),

    and its corollaries (Theorems 3 and 5 with R = 1): PA: sum l_t^2 <= (||u|| + 2 sqrt(sum
    l*_t^2))^2; PA-II: sum l_t^2 <= (1 + 1/(2C)) (||u||^2 + 2C sum l*_t^2); PA-I (tau_t <= l_t
    gives tau_t (2 l_t - tau_t) >= tau_t l_t): sum min(C l_t, l_t^2) <= ||u||^2 + 2C sum l*_t.
    """
    C, eps = 0.2, 1.5
    stream = sparse_stream(600, n_keys=10, active=10, seed=seed, scale=1.0)
    rng = np.random.default_rng(seed)
    for u in [{}, {f"k{j}": float(v) for j, v in enumerate(rng.normal(size=10) * 2)}]:
        model = PAUniclass(variant=variant, C=C, epsilon=eps)
        sq_u = sum(v * v for v in u.values())
        terms, sq_loss, sq_comp, lin_comp = _run_bound(model, stream, u, eps)
        assert terms <= sq_u + 1e-9
        if variant == "PA":
            assert sq_loss <= (math.sqrt(sq_u) + 2 * math.sqrt(sq_comp)) ** 2
        if variant == "PA-II":
            assert sq_loss <= (1 + 1 / (2 * C)) * (sq_u + 2 * C * sq_comp)


def test_relative_loss_bound_pa_i_corollary():
    C, eps = 0.2, 1.5
    stream = sparse_stream(600, n_keys=10, active=10, seed=8, scale=1.0)
    u = {f"k{j}": 0.1 * j for j in range(10)}
    model = PAUniclass(variant="PA-I", C=C, epsilon=eps)
    total = 0.0
    sq_u = sum(v * v for v in u.values())
    lin_comp = 0.0
    for x in stream:
        loss = loss_of(model, x)
        total += min(C * loss, loss**2)
        lin_comp += max(0.0, direct_distance(u, x) - eps)
        model.learn_one(x)
    assert total > 0
    assert total <= sq_u + 2 * C * lin_comp


@pytest.mark.parametrize("seed", [9, 10])
def test_relative_loss_bound_learned_radius(seed):
    """The reduction: in n+1 dimensions the competitor (u, sqrt(B^2 - eps^2)) for any eps <= B
    has loss <= max(0, ||u - y|| - eps) and ||w_1 - u'||^2 = ||u||^2 + (B - sqrt(B^2 -
    eps^2))^2 <= ||u||^2 + eps^2. So hard PA satisfies

        sum_t l_t^2 <= (sqrt(||u||^2 + eps^2) + 2 sqrt(sum_t l*_t^2))^2

    with l_t the learner's loss in n+1 dimensions (sqrt(||w_t - y_t||^2 + w_{t,n+1}^2) - B)
    and l*_t = max(0, ||u - y_t|| - eps), and Lemma 1 holds with ||u||^2 + eps^2 on the right.
    """
    B = 3.0
    stream = sparse_stream(800, n_keys=8, active=8, seed=seed, scale=1.0)
    mean = {k: float(np.mean([x[k] for x in stream])) for k in stream[0]}
    for eps_u in [0.5, 2.0, 3.0]:
        for u in [{}, mean]:
            model = PAUniclass(variant="PA", epsilon=None, B=B)
            terms, sq_loss, sq_comp, _ = _run_bound(model, stream, u, eps_u)
            sq_u = sum(v * v for v in u.values())
            assert terms <= sq_u + eps_u**2 + 1e-9
            assert sq_loss <= (math.sqrt(sq_u + eps_u**2) + 2 * math.sqrt(sq_comp)) ** 2


def test_bad_input_is_rejected_and_leaves_the_model_unchanged():
    model = PAUniclass(epsilon=0.1)
    model.learn_one({"a": 1.0, "b": 2.0})
    snapshot = pickle.dumps(model)
    with pytest.raises(TypeError, match="feature 'c' has a non-numeric value 'x'"):
        model.learn_one({"a": 1.0, "c": "x"})
    with pytest.raises(ValueError, match="feature 'b' has a non-finite value nan"):
        model.score_one({"b": float("nan")})
    assert pickle.dumps(model) == snapshot


@pytest.mark.parametrize(
    "params, message",
    [
        ({"variant": "PA-III"}, "variant must be one of"),
        ({"C": 0}, "C must be a finite number > 0"),
        ({"epsilon": -1.0}, "epsilon must be a finite number >= 0 or None"),
        ({"epsilon": None}, "B .* is needed when epsilon=None"),
        ({"epsilon": 1.0, "B": 2.0}, "give it only with epsilon=None"),
        ({"epsilon": None, "B": -2.0}, "B must be a finite number > 0"),
    ],
)
def test_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        PAUniclass(**params)


def test_threshold_filter_flags_far_points_and_protects_the_centre():
    """Warmed up alone (River 0.26's filters only ever learn when protect_anomaly_detector=True
    and the point is normal, and the centre starts at 0 where every point is far), then
    wrapped: a far point is flagged and not learned, a near one is learned."""
    model = PAUniclass(variant="PA-I", C=0.5, epsilon=1.0)
    for x in sparse_stream(300, n_keys=5, active=5, seed=11, scale=0.3):
        model.learn_one(x)
    detector = anomaly.ThresholdFilter(model, threshold=model.radius)
    near = dict(model.center)
    far = {k: v + 5.0 for k, v in near.items()}
    assert detector.classify(detector.score_one(far))
    detector.learn_one(far)
    assert model.center == near
    assert not detector.classify(detector.score_one(near))


def test_pickle_roundtrip_keeps_scores():
    model = PAUniclass(variant="PA-II", C=0.5, epsilon=0.2)
    stream = sparse_stream(200, seed=12)
    for x in stream[:150]:
        model.learn_one(x)
    copy = pickle.loads(pickle.dumps(model))
    for x in stream[150:]:
        assert copy.score_one(x) == model.score_one(x)
        copy.learn_one(x)
        model.learn_one(x)
