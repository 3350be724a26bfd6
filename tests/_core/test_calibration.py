"""Online calibration: the Bayesian mixtures' posteriors by hand, their LogLoss bound on
adversarial margins, River's checks with calibration on, and issue 19's targets (LogLoss never
worse, ECE <= 0.03) on reduced runs of the shared binary streams."""

from __future__ import annotations

import math
import pickle
import random

import numpy as np
import pytest
from river import checks, datasets, linear_model, metrics, preprocessing

import river_pa
from river_pa._core.calibration import BINS, GRID, STRENGTH, MarginMixture, Temperature
from river_pa.evaluate.datasets import load, shared_folder

CLASSIFIERS = [river_pa.PAClassifier, river_pa.PAMultiClassifier,
               river_pa.PACostSensitiveClassifier, river_pa.KernelPAClassifier,
               river_pa.RescaledExpClassifier, river_pa.CoordinateScaleInvariantClassifier,
               river_pa.FullScaleInvariantClassifier]


def _link_loss(a: float, m: float, y: bool) -> float:
    """The log loss of sigmoid(a m) on the label y: ln(1 + exp(-a m)) for True (by hand,
    as logaddexp so that no large margin overflows)."""
    return float(np.logaddexp(0.0, -a * m if y else a * m))


def _sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


def test_bayes_update_by_hand():
    """Two labelled margins through the 66 experts, by hand: the prior (1/2 on a = 1, 1/4
    over the 64 other temperatures, 1/4 on the histogram), each expert's likelihood, the
    histogram's bin and counts, and the mixture's P(True) after them."""
    prior = np.append(np.where(GRID == 1.0, 0.5, 0.25 / 64), 0.25)
    weights, hits, events = prior.copy(), [0.0] * (2 * BINS), [0.0] * (2 * BINS)

    def experts(m):
        t = weights[:-1] / weights[:-1].sum()  # the temperatures among themselves
        p = sum(tk * _sigmoid(a * m) for tk, a in zip(t, GRID))
        j = min(int(abs(2 * p - 1) * BINS), BINS - 1) + (BINS if m > 0 else 0)
        q = (hits[j] + STRENGTH * p) / (events[j] + STRENGTH)
        q = max(q, 0.5) if m > 0 else min(q, 0.5)  # + one ulp: no tie at 1/2
        return [_sigmoid(a * m) for a in GRID] + [q], j

    cal = MarginMixture()
    for m, y in [(2.0, True), (1.5, False)]:
        assert cal.proba(m) == pytest.approx(weights @ experts(m)[0] / weights.sum(), rel=1e-12)
        ps, j = experts(m)
        weights *= np.array([p if y else 1 - p for p in ps])
        hits[j] += y
        events[j] += 1
        cal.learn(m, y)
        assert cal.w == pytest.approx(weights / weights.sum(), rel=1e-12)
        assert cal.hits.tolist() == hits and cal.events.tolist() == events
    # m = 2 had p = 0.801 (bin 0.6 <= |2 p - 1| < 0.7 of the side m > 0), m = 1.5 one bin lower
    assert events[BINS + 6] == events[BINS + 5] == 1
    want = weights @ experts(0.5)[0] / weights.sum()
    assert cal.proba(0.5) == pytest.approx(want, rel=1e-12)
    assert cal.proba(-2.0) < 0.5 < cal.proba(1e-9) and cal.proba(0.0) == 0.5  # the cut at 0


def test_the_mixture_is_never_worse_than_the_link_by_more_than_ln2():
    """The regret bound of a Bayesian mixture (the module docstring): whatever the margins and
    labels, the cumulative log loss is at most the uncalibrated link's plus ln 2. The streams
    include issue 19's case (a tiny first margin, then large ones with mistakes), which made
    the Newton fit's LogLoss 7x worse, kernel-sized margins, and an adversary that labels
    each margin against the calibrator's own prediction (every event a mistake of it)."""
    rng = np.random.default_rng(0)
    streams = [[(1e-4, True)] + [(m, rng.random() < 0.9) for m in rng.uniform(0.5, 3, 500)],
               [(m, rng.random() < 0.5) for m in rng.normal(0, 1e7, 500)],
               [(m, m > 0) for m in rng.normal(0, 0.01, 500)],
               [(m, None) for m in rng.normal(0, 2, 2000)],
               [(m, None) for m in 10.0 ** rng.uniform(-3, 3, 2000)]]
    for stream in streams:
        cal, mixture, link = MarginMixture(), 0.0, 0.0
        for m, y in stream:
            p = cal.proba(m)
            y = p < 0.5 if y is None else y
            mixture -= math.log(p if y else 1 - p)
            link += _link_loss(1.0, m, y)
            cal.learn(m, y)
        assert mixture <= link + math.log(2) + 1e-9


def test_a_saturated_wrong_margin_moves_the_posterior_to_small_temperatures():
    cal = MarginMixture()
    cal.learn(1e7, False)  # a = 1 loses 1e7 nats; a = 2^-24 (a m = 0.6) about 1; the
    assert cal.a == GRID[0] and 0.5 < cal.proba(1e7) < 0.75  # histogram at most 27.7
    assert math.isfinite(cal.log_odds)


def test_temperature_mixture_by_hand():
    cal = Temperature()
    s = np.array([1.0, -0.5, 3.0])
    cal.learn_scores(s, 0)
    prior = np.where(GRID == 1.0, 0.5, 0.5 / 64)
    def softmax(a):
        e = np.exp(a * (s - s.max()))
        return e / e.sum()

    like = np.array([softmax(a)[0] for a in GRID])
    post = prior * like / (prior * like).sum()
    assert cal.w == pytest.approx(post, rel=1e-9)
    q = cal.softmax(s)
    want = sum(w * softmax(a) for w, a in zip(post, GRID))
    assert q == pytest.approx(want, rel=1e-12)
    assert q.argmax() == s.argmax()
    S = np.array([s, s[::-1]])
    assert cal.softmax_rows(S) == pytest.approx(np.array([q, cal.softmax(s[::-1])]), rel=1e-12)


def test_temperature_fits_a_known_link():
    # margins m ~ U(-3, 3) with P(True | m) = sigmoid(0.5 m): the temperatures' mode is a = 0.5
    rng = np.random.default_rng(0)
    cal = MarginMixture()
    for m in rng.uniform(-3, 3, 20000):
        cal.learn(m, rng.random() < 1 / (1 + math.exp(-0.5 * m)))
    assert cal.a == 0.5 and cal.t.max() > 0.9


@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_river_checks_with_calibration(cls):
    checks.check_estimator(cls(calibration="temperature"))


@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_unknown_calibration_is_refused(cls):
    with pytest.raises(ValueError,
                       match="calibration must be None or 'temperature', got 'isotonic'"):
        cls(calibration="isotonic")


def test_calibrated_model_pickles_and_predicts_the_same():
    model = preprocessing.StandardScaler() | river_pa.PAMultiClassifier(
        calibration="temperature")
    for x, y in datasets.ImageSegments().take(300):
        model.learn_one(x, y)
    x = next(iter(datasets.ImageSegments()))[0]
    again = pickle.loads(pickle.dumps(model))
    assert again.predict_proba_one(x) == model.predict_proba_one(x)
    assert model[-1]._calibrator.a != 1.0


def _scores(events, model):
    """(LogLoss, accuracy) of one progressive pass over the (x, y) `events`."""
    loss, accuracy = metrics.LogLoss(), metrics.Accuracy()
    for x, y in events:
        y = bool(y)
        loss.update(y, model.predict_proba_one(x))
        accuracy.update(y, model.predict_one(x))
        model.learn_one(x, y)
    return loss.get(), accuracy.get()


def test_temperature_beats_the_sigmoid_and_river_logistic_regression():
    """Full progressive runs with default parameters. LogLoss - sigmoid of the margin /
    calibrated / River's LogisticRegression(): phishing 0.373 / 0.367 / 0.526, a9a 0.432 /
    0.418 / 0.342, elec2 0.380 / 0.333 / 0.608, mushrooms 0.179 / 0.011 / 0.108;
    PAClassifier's accuracy 0.842, 0.791, 0.862, 0.997 either way."""
    if not (shared_folder() / "elec2").is_dir():
        pytest.skip(f"shared data missing: {shared_folder()}")
    wins = 0
    for name in ["phishing", "a9a", "elec2", "mushrooms"]:
        data = load(name)
        events = list(zip(data.x, data.y))
        raw = _scores(events, river_pa.PAClassifier())
        calibrated = _scores(events, river_pa.PAClassifier(calibration="temperature"))
        river = _scores(events, linear_model.LogisticRegression())
        # the mixture's bound: never worse than the link by more than ln 2 over the run
        assert calibrated[0] <= raw[0] + math.log(2) / len(data.y) + 1e-12, name  # + rounding
        assert calibrated[1] == raw[1], name
        wins += calibrated[0] < river[0]
    assert wins >= 3


@pytest.mark.parametrize("name", ["phishing", "a9a", "elec2", "mushrooms"])
def test_calibration_never_hurts_across_orders_and_variants(name):
    """Issue 19's target on reduced runs (3,000 events or the whole set, 2 shuffles, C in {0.01, 1}, PA-I and
    PA-II): the calibrated progressive LogLoss is at most the link's plus ln 2 / n, the
    mixture's bound, and accuracy is unchanged. (benchmarks/bench_calibration.py --quality
    runs the full table: every set, file order and 10 shuffles, C in {0.01, 0.1, 1}, every
    variant.)"""
    if not (shared_folder() / name).is_dir():
        pytest.skip(f"shared data missing: {shared_folder()}")
    data = load(name)
    events = list(zip(data.x, data.y))
    for seed in (1, 2):
        stream = random.Random(seed).sample(events, n := min(3000, len(events)))
        for C in (0.01, 1.0):
            for variant in ("PA-I", "PA-II"):
                raw = _scores(stream, river_pa.PAClassifier(C=C, variant=variant))
                cal = _scores(stream, river_pa.PAClassifier(C=C, variant=variant,
                                                              calibration="temperature"))
                assert cal[0] <= raw[0] + math.log(2) / n + 1e-12 and cal[1] == raw[1], (seed, C)


@pytest.mark.parametrize("name", ["a9a", "elec2"])
def test_calibrated_ece_is_at_most_003_on_reduced_runs(name):
    """Issue 19's ECE target on reduced runs (the first 6,000 events of shuffles 1 and 2, C in
    {0.01, 1}, PA-I; benchmarks/bench_calibration.py --quality runs the full table): 10-bin
    ECE <= 0.03 in at least 3 of the 4 runs, and below the uncalibrated link's in all, with no
    label changed. Here a9a gave 0.0138, 0.0224, 0.0212, 0.0202 and elec2 0.0356, 0.0154,
    0.0227, 0.0136; main's temperatures alone met it in 2 of 4 (a9a) and 0 of 4 (elec2):
    0.0184, 0.0591, 0.0243, 0.0575 and 0.0529, 0.0547, 0.0538, 0.0576."""
    from benchmarks.bench_calibration import ece

    if not (shared_folder() / name).is_dir():
        pytest.skip(f"shared data missing: {shared_folder()}")
    data = load(name)
    events = [(x, bool(y)) for x, y in zip(data.x, data.y)]
    met = 0
    for seed in (1, 2):
        stream = list(events)
        random.Random(seed).shuffle(stream)  # the benchmark's orders
        stream = stream[:6000]
        y = np.array([label for _, label in stream], float)
        for C in (0.01, 1.0):
            model = river_pa.PAClassifier(C=C, variant="PA-I", calibration="temperature")
            p, margins = np.empty(len(stream)), np.empty(len(stream))
            for i, (x, label) in enumerate(stream):
                p[i], margins[i] = model.predict_proba_one(x)[True], model.decision_function_one(x)
                assert (p[i] > 0.5) == model.predict_one(x) == (margins[i] > 0)
                model.learn_one(x, label)
            calibrated = ece(p, y)
            assert calibrated < ece(1 / (1 + np.exp(-margins)), y), (seed, C)
            met += calibrated <= 0.03
    assert met >= 3


@pytest.mark.parametrize("name, ece_at_most, runs_met", [("ImageSegments", 0.03, 3),
                                                         ("digits", 0.05, 4)])
def test_multiclass_calibration_never_hurts_on_reduced_runs(name, ece_at_most, runs_met):
    """Issue 19's "multiclass the same" on reduced runs (shuffles 1 and 2, C in {0.01, 1},
    PA-I): `PAMultiClassifier`'s calibrated progressive cross-entropy is at most the softmax
    link's plus ln 2 / n (the mixture's bound), its top-label ECE is below the link's, and no
    calibrated probability puts `predict_one`'s label below another. Floors from the full table
    (`benchmarks/bench_calibration.py --multiclass`, 11 orders x 9 settings): ImageSegments
    ECE <= 0.03 in 94 of 99 runs, digits (1,797 events; a perfect forecaster's ECE is 0.017
    from noise alone) at most 0.0497. Here ImageSegments gave 0.0108, 0.0204, 0.0237, 0.0296,
    digits 0.0359, 0.0388, 0.0285, 0.0318."""
    from benchmarks import bench_calibration as bench

    base, met = bench.multiclass_set(name), 0
    for seed in (1, 2):
        events = list(base)
        random.Random(seed).shuffle(events)  # the benchmark's orders
        for C in (0.01, 1.0):
            S, P, y = bench.multiclass_pass(events, C, "PA-I")
            link = bench.softmax_rows(S)
            assert (bench.cross_entropy(P, y)
                    <= bench.cross_entropy(link, y) + math.log(2) / len(y) + 1e-12), (seed, C)
            assert not bench.disagreements(P, S).any(), (seed, C)
            calibrated = bench.top_label_ece(P, y)
            assert calibrated < bench.top_label_ece(link, y), (seed, C)
            met += calibrated <= ece_at_most
    assert met >= runs_met
