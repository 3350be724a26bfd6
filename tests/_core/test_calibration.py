"""Online temperature calibration: the Newton step by hand, River's checks with calibration
on, and issue 13's LogLoss target on the four shared binary streams (full runs, about 3 s)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from river import checks, datasets, linear_model, metrics, preprocessing

import river_pa
from river_pa._core.calibration import Temperature
from river_pa.evaluate.datasets import load, shared_folder

CLASSIFIERS = [river_pa.PAClassifier, river_pa.PAMultiClassifier,
               river_pa.PACostSensitiveClassifier, river_pa.KernelPAClassifier,
               river_pa.RescaledExpClassifier, river_pa.CoordinateScaleInvariantClassifier,
               river_pa.FullScaleInvariantClassifier]


def test_newton_step_by_hand():
    cal = Temperature()
    cal.learn(2.0, True)
    p = 1 / (1 + math.exp(-2.0))  # a = 1: the uncalibrated sigmoid
    # the curvature p (1 - p) m^2 (above its floor, 0.05 m^2), plus the prior m^2 / 4
    h = p * (1 - p) * 4.0 + 1.0
    a = 1.0 - (p - 1.0) * 2.0 / h
    assert cal.a == pytest.approx(a, rel=1e-12) and cal.h == pytest.approx(h, rel=1e-12)
    assert cal.proba(2.0) == pytest.approx(1 / (1 + math.exp(-2.0 * a)), rel=1e-12)
    assert cal.proba(-2.0) < 0.5 < cal.proba(1e-9)  # the cut stays at m = 0


def test_a_saturated_wrong_margin_moves_the_log_odds_by_little():
    cal = Temperature()
    cal.learn(1e7, False)  # p = 1, curvature 0: floored at 0.05 m^2, plus the prior m^2 / 4
    assert 1e7 - cal.a * 1e7 == pytest.approx(1 / 0.3)
    cal.learn(1e7, False)
    assert 1e7 - cal.a * 1e7 == pytest.approx(1 / 0.3 + 1 / 0.35)


def test_temperature_step_by_hand():
    cal = Temperature()
    s = np.array([1.0, -0.5, 3.0])
    cal.learn_scores(s, 0)
    p = np.exp(s) / np.exp(s).sum()
    # the curvature 0.63 (> its floor 0.05 * 3.5^2) plus the prior 3.5^2 / 4
    grad, hess = p @ s - s[0], p @ s**2 - (p @ s) ** 2 + 3.5**2 / 4
    assert cal.a == pytest.approx(1.0 - grad / hess, rel=1e-12) and cal.a > 0
    q = cal.softmax(s)
    assert q == pytest.approx(np.exp(cal.a * s) / np.exp(cal.a * s).sum())
    assert q.argmax() == s.argmax()


def test_temperature_fits_a_known_link():
    # margins m ~ U(-3, 3) with P(True | m) = sigmoid(0.5 m): the fit finds a = 0.5
    rng = np.random.default_rng(0)
    cal = Temperature()
    for m in rng.uniform(-3, 3, 20000):
        cal.learn(m, rng.random() < 1 / (1 + math.exp(-0.5 * m)))
    assert cal.a == pytest.approx(0.5, abs=0.03)


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


def _scores(data, model):
    loss, accuracy = metrics.LogLoss(), metrics.Accuracy()
    for x, y in zip(data.x, data.y):
        y = bool(y)
        loss.update(y, model.predict_proba_one(x))
        accuracy.update(y, model.predict_one(x))
        model.learn_one(x, y)
    return loss.get(), accuracy.get()


def test_temperature_beats_the_sigmoid_and_river_logistic_regression():
    """Issue 13's target, full progressive runs with default parameters. Full-run LogLoss -
    sigmoid of the margin / temperature / River's LogisticRegression(): phishing 0.373 / 0.366 /
    0.526, a9a 0.432 / 0.431 / 0.342, elec2 0.380 / 0.337 / 0.608, mushrooms 0.179 / 0.015 /
    0.108; PAClassifier's accuracy 0.842, 0.791, 0.863, 0.997 either way."""
    if not (shared_folder() / "elec2").is_dir():
        pytest.skip(f"shared data missing: {shared_folder()}")
    wins = 0
    for name in ["phishing", "a9a", "elec2", "mushrooms"]:
        data = load(name)
        raw = _scores(data, river_pa.PAClassifier())
        calibrated = _scores(data, river_pa.PAClassifier(calibration="temperature"))
        river = _scores(data, linear_model.LogisticRegression())
        assert calibrated[0] < raw[0] and calibrated[1] == raw[1], name
        wins += calibrated[0] < river[0]
    assert wins >= 3
