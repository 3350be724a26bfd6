"""PASequenceTagger: Viterbi against brute force, the paper's step and margin, averaging,
bad input (River's checks: tests/test_estimators.py).

Source: Crammer et al. (2006), Online Passive-Aggressive Algorithms, JMLR 7, Sections 8-9.

"""

from __future__ import annotations

import copy
import itertools
import math
import pickle

import numpy as np
import pytest

from river_pa import PASequenceTagger
from river_pa._core.validation import TooManyFeaturesError
from river_pa.structured import _numba as kernels


def random_sentence(rng, m, n_words=8, tags="ABC"):
    """Tokens with a word feature, a shared bias and a random real value; tags follow the word
    with some noise and a transition preference, so the data are learnable but not trivial."""
    words = rng.integers(0, n_words, size=m)
    xs = [{f"w={w}": 1.0, "bias": 1.0, "r": float(rng.normal())} for w in words]
    ys = [tags[(w + (i > 0 and w % 2)) % len(tags)] for i, w in enumerate(words)]
    return xs, ys


def brute_force(S, T):
    k = S.shape[1]
    best, arg = -np.inf, None
    for seq in itertools.product(range(k), repeat=S.shape[0]):
        score = kernels.sequence_score(S, T, np.array(seq, dtype=np.int64))
        if score > best:
            best, arg = score, seq
    return list(arg), best


@pytest.mark.parametrize("m, k", [(1, 1), (1, 4), (2, 3), (4, 3), (5, 4), (6, 2)])
def test_viterbi_equals_brute_force(m, k):
    rng = np.random.default_rng(100 * m + k)
    for _ in range(20):
        S = rng.normal(size=(m, k))
        T = rng.normal(size=(k + 1, k))
        path, score = kernels.viterbi(S, T)
        expected_path, expected_score = brute_force(S, T)
        assert path.tolist() == expected_path
        assert score == pytest.approx(expected_score, abs=1e-12)


def test_model_prediction_is_the_argmax_of_its_scores():
    """After training, predict_one is the argmax of score_one over all k^m sequences (averaged
    weights, since score_one and predict_one both use the prediction weights)."""
    rng = np.random.default_rng(1)
    model = PASequenceTagger(variant="PA-I", C=0.5, average=True)
    for _ in range(30):
        model.learn_one(*random_sentence(rng, int(rng.integers(1, 6))))
    for m in (1, 3, 5):
        xs, _ = random_sentence(rng, m)
        scores = {seq: model.score_one(xs, list(seq))
                  for seq in itertools.product(model.tags, repeat=m)}
        assert tuple(model.predict_one(xs)) == max(scores, key=scores.get)


@pytest.mark.parametrize("variant, C", [("PA", 1.0), ("PA-I", 1e6)])
def test_hard_update_meets_the_margin_constraint(variant, C):
    """After a hard step on (x, y), w . Phi(x, y) - w . Phi(x, z) = sqrt(rho(y, z)) for the
    sequence z predicted before the step (>= is the constraint; PA meets it with equality)."""
    rng = np.random.default_rng(2)
    model = PASequenceTagger(variant=variant, C=C, average=False)
    updates = 0
    for _ in range(200):
        xs, ys = random_sentence(rng, int(rng.integers(1, 9)))
        z = model.predict_one(xs)
        model.learn_one(xs, ys)
        rho = sum(a != b for a, b in zip(ys, z))
        if rho and None not in z:
            updates += 1
            margin = model.score_one(xs, ys) - model.score_one(xs, z)
            assert margin == pytest.approx(math.sqrt(rho), abs=1e-9)
    assert updates > 30


def test_hand_computed_steps():
    """One token {a: 1}, tags X then Y: z = X (all scores 0, ties to the first tag), rho = 1,
    l = 1, Phi(y) - Phi(z) = e(a,Y) - e(a,X) + start(Y) - start(X), ||.||^2 = 4."""
    hard = PASequenceTagger(variant="PA", average=False)
    soft = PASequenceTagger(variant="PA-I", C=0.1, average=False)
    for model in (hard, soft):
        model.learn_one([{"a": 1.0}], ["X"])  # adds X; the prediction is right: no step
        model.learn_one([{"a": 1.0}], ["Y"])
    assert hard.score_one([{"a": 1.0}], ["Y"]) == pytest.approx(0.5)  # tau = 1/4
    assert hard.score_one([{"a": 1.0}], ["X"]) == pytest.approx(-0.5)
    assert soft.score_one([{"a": 1.0}], ["Y"]) == pytest.approx(0.2)  # tau = C = 0.1


def test_repeated_features_are_merged_in_the_norm():
    """[a, a] tagged [Y, Y], predicted [X, X] (all scores 0): the emission difference is
    2 e(a,Y) - 2 e(a,X) (norm^2 8, not 4 x 1), transitions start(Y) - start(X) + (Y,Y) - (X,X)
    (norm^2 4); l = sqrt(2), tau = sqrt(2) / 12, so score(Y, Y) = tau (1 + 2 x 2 + 1)."""
    model = PASequenceTagger(variant="PA", average=False)
    model.learn_one([{"a": 1.0}], ["X"])  # adds X; right prediction, no step
    model.learn_one([{"a": 1.0}] * 2, ["Y", "Y"])
    assert model.score_one([{"a": 1.0}] * 2, ["Y", "Y"]) == pytest.approx(math.sqrt(2) / 2)
    assert model.score_one([{"a": 1.0}] * 2, ["X", "X"]) == pytest.approx(-math.sqrt(2) / 2)


def test_loss_on_a_repeated_sequence_reaches_zero():
    """The prediction-based loss l = w . Phi(x, z) - w . Phi(x, y) + sqrt(rho(y, z)) of a
    sentence learned again and again reaches 0 (z = y) and stays there."""
    rng = np.random.default_rng(3)
    xs, ys = random_sentence(rng, 12)
    model = PASequenceTagger(variant="PA-I", C=0.5, average=False)
    losses = []
    for _ in range(30):
        model.learn_one(xs, ys)
        z = model.predict_one(xs)
        rho = sum(a != b for a, b in zip(ys, z))
        losses.append(model.score_one(xs, z) - model.score_one(xs, ys) + math.sqrt(rho))
    assert losses[0] > 0 or losses[1] > 0
    first_zero = losses.index(0.0)
    assert first_zero < 10
    assert all(loss == 0.0 for loss in losses[first_zero:])


def test_averaged_scores_are_the_mean_of_the_weight_trajectory():
    """score_one is linear in w, so the averaged model's score of a probe equals the mean of
    the probe's score under the weights after each sentence (read off a non-averaged twin
    that sees the same sentences and so makes the same steps)."""
    rng = np.random.default_rng(4)
    avg = PASequenceTagger(variant="PA-I", C=0.3, average=True)
    twin = PASequenceTagger(variant="PA-I", C=0.3, average=False)
    data = [([{"w=0": 1.0}] * 3, ["A", "B", "C"])]  # every tag known from the start
    data += [random_sentence(rng, int(rng.integers(1, 7))) for _ in range(60)]
    probe = random_sentence(rng, 5)
    trajectory = []
    for xs, ys in data:
        avg.learn_one(xs, ys)
        twin.learn_one(xs, ys)
        trajectory.append(twin.score_one(probe[0], ["A", "B", "C", "A", "B"]))
        assert avg.score_one(probe[0], ["A", "B", "C", "A", "B"]) == pytest.approx(
            np.mean(trajectory), abs=1e-9
        )


def test_tags_and_features_appear_online_and_any_hashable_tag_works():
    model = PASequenceTagger(average=False)
    assert model.predict_one([{"a": 1}]) == [None]
    model.learn_one([{"a": 1}, {"b": 1}], [0, (1, "x")])
    model.learn_one([{"c": 1}], [frozenset({2})])
    assert model.tags == [0, (1, "x"), frozenset({2})]
    for _ in range(5):
        model.learn_one([{"a": 1}, {"b": 1}, {"c": 1}], [0, (1, "x"), frozenset({2})])
    assert model.predict_one([{"a": 1}, {"b": 1}, {"c": 1}, {"unseen": 3.0}])[:3] == [
        0, (1, "x"), frozenset({2})]


@pytest.mark.parametrize(
    "xs, ys, error, message",
    [
        ([{"a": 1}], ["X", "Y"], ValueError, "xs has 1 tokens, ys 2"),
        ([], [], ValueError, "non-empty list of token feature dicts"),
        ([{"a": 1}, {"b": "x"}], ["X", "Y"], TypeError, "token 1: feature 'b' has a non-numeric"),
        ([{"a": float("inf")}], ["X"], ValueError, "token 0: feature 'a' has a non-finite"),
        ([{"a": 1}, "word"], ["X", "Y"], TypeError, "token 1 must be a dict"),
        ([{"a": 1}], [["X"]], TypeError, r"tag 0 \(\['X'\]\) is not hashable"),
        ([{"a": 1}], "X", ValueError, "ys must be a list"),
    ],
)
def test_bad_input_is_rejected_and_leaves_the_model_unchanged(xs, ys, error, message):
    model = PASequenceTagger()
    model.learn_one([{"a": 1.0}, {"z": 2.0}], ["X", "Z"])
    snapshot = pickle.dumps(model)
    with pytest.raises(error, match=message):
        model.learn_one(xs, ys)
    assert pickle.dumps(model) == snapshot
    if ys != "X" and not isinstance(ys[0] if ys else None, list) and len(xs) == len(ys):
        with pytest.raises(error, match=message):
            model.predict_one(xs)


def test_nan_tags_are_rejected_and_add_no_tag():
    model = PASequenceTagger()
    model.learn_one([{"a": 1.0}], ["X"])
    snapshot = pickle.dumps(model)
    for _ in range(2):  # each float("nan") used to become a tag of its own
        with pytest.raises(ValueError, match="tag 1 must not be NaN, got nan"):
            model.learn_one([{"a": 1.0}, {"b": 1.0}], ["X", float("nan")])
    assert model._tag_list == ["X"]
    assert pickle.dumps(model) == snapshot


def test_too_many_features_adds_no_tag():
    # the new tag entered the tag list and widened every weight matrix before the vocabulary
    # refused the sentence's new feature keys
    model = PASequenceTagger()
    model.learn_one([{"a": 1.0}], ["X"])
    model._index.max_keys = 2
    snapshot = pickle.dumps(model)
    with pytest.raises(TooManyFeaturesError, match="2 new feature keys"):
        model.learn_one([{"b": 1.0}, {"c": 1.0}], ["X", "Y"])
    assert model.tags == ["X"]
    assert pickle.dumps(model) == snapshot
    model.learn_one([{"b": 1.0}], ["Y"])  # one more key fits, with its new tag
    assert model.tags == ["X", "Y"] and model.predict_one([{"b": 1.0}]) == ["Y"]


def test_bad_parameters():
    with pytest.raises(ValueError, match="variant must be one of"):
        PASequenceTagger(variant="perceptron")
    with pytest.raises(ValueError, match="C must be a finite number > 0"):
        PASequenceTagger(C=-1)


def test_pickle_roundtrip_and_purity():
    rng = np.random.default_rng(5)
    model = PASequenceTagger()
    data = [random_sentence(rng, int(rng.integers(1, 7))) for _ in range(40)]
    for xs, ys in data[:30]:
        before = copy.deepcopy((xs, ys))
        model.learn_one(xs, ys)
        assert (xs, ys) == before  # learn_one does not mutate its input
    clone = pickle.loads(pickle.dumps(model))
    for xs, ys in data[30:]:
        before = copy.deepcopy(xs)
        assert clone.predict_one(xs) == model.predict_one(xs)
        assert xs == before
        clone.learn_one(xs, ys)
        model.learn_one(xs, ys)
    assert pickle.dumps(clone) == pickle.dumps(model)


def test_clone_is_independent_and_no_state_aliasing():
    """Sequence versions of check_clone_is_independent and check_no_state_aliasing_with_input."""
    rng = np.random.default_rng(6)
    model = PASequenceTagger()
    clone = model.clone()
    snapshot = pickle.dumps(clone)
    xs, ys = random_sentence(rng, 4)
    model.learn_one(xs, ys)
    assert pickle.dumps(clone) == snapshot
    before = pickle.dumps(model)
    xs[0]["bias"] = 1e9
    ys[0] = "mutated"
    assert pickle.dumps(model) == before


def test_kernel_step_is_pa_i_with_the_hamming_margin():
    """kernels.learn returns (z, rho, l, tau) with l = w.Phi(z) - w.Phi(y) + sqrt(rho) and
    tau = min(C, l / ||Phi(y) - Phi(z)||^2) <= C, on random weights and sentences."""
    rng = np.random.default_rng(7)
    for C in (1e-3, 0.5, 10.0):
        for _ in range(30):
            m, k, F = int(rng.integers(1, 6)), 3, 10
            E, T = rng.normal(size=(F, k)), rng.normal(size=(k + 1, k))
            E0, T0 = E.copy(), T.copy()
            indptr = np.arange(m + 1, dtype=np.int64) * 2
            idx = rng.integers(1, F, size=2 * m).astype(np.int64)
            val = rng.normal(size=2 * m)
            y = rng.integers(0, k, size=m).astype(np.int64)
            z, rho, loss, tau = kernels.learn(1, C, E, T, E, T, False, 0, indptr, idx, val, y)
            S0 = kernels.emission_scores(E0, E0, 0.0, indptr, idx, val)
            assert rho == int((z != y).sum())
            if rho:
                expected = (kernels.sequence_score(S0, T0, z) - kernels.sequence_score(S0, T0, y)
                            + math.sqrt(rho))
                assert loss == pytest.approx(expected, abs=1e-12)
                sq = ((E - E0) ** 2).sum() / tau**2 + ((T - T0) ** 2).sum() / tau**2
                assert tau == pytest.approx(min(C, loss / sq), rel=1e-9)
                assert tau <= C
            else:
                assert tau == 0.0 and (E == E0).all()
