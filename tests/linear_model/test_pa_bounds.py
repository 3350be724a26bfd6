"""The paper's bounds on a real stream: shared phishing (11,055 events, 68 features, labels 0/1).

Crammer et al. (2006), Theorem 4 / Knowl 3: for any comparator u, with ||x_t|| <= R,
* item 3, PA-I mistakes: M <= max{R^2, 1/C} (||u||^2 + 2C sum_t l*_t);
* item 4, PA-II: sum_t l_t^2 <= (R^2 + 1/(2C)) (||u||^2 + 2C sum_t (l*_t)^2);
and Lemma 1 / Knowl 2, the master inequality, for all three variants.

Our learner's instance space includes the intercept as a constant feature of value 1, so here
x_t = (features, 1), R^2 = max_t ||features_t||^2 + 1, and u = (SVM weights, SVM intercept):
LinearSVC with hinge loss and `intercept_scaling=1` fits exactly such a u (liblinear appends the
same constant feature and penalises its weight like the others).

"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file
from sklearn.svm import LinearSVC

from river_pa import PAClassifier


@pytest.fixture(scope="module")
def phishing(shared_data):
    X, y = load_svmlight_file(str(shared_data / "phishing" / "phishing.bz2"))
    X = X.toarray()  # 68 columns; the file loads with int64 indices, which LinearSVC refuses
    y = np.where(y > 0, 1.0, -1.0)
    events = [{j: v for j, v in zip(np.flatnonzero(row).tolist(), row[row != 0].tolist())}
              for row in X]
    svm = LinearSVC(C=0.1, loss="hinge", dual=True, intercept_scaling=1.0, max_iter=50_000)
    svm.fit(X, y)
    u = np.append(svm.coef_[0], svm.intercept_[0])
    u_margins = X @ svm.coef_[0] + svm.intercept_[0]
    return {
        "events": events,
        "y": y.tolist(),
        "R2": float((X * X).sum(axis=1).max() + 1.0),
        "u2": float(u @ u),
        "u_loss": np.maximum(0.0, 1.0 - y * u_margins),
    }


def run(model, data):
    """Online margins before each update, each ||x||^2 (intercept included) and each tau.

    tau_t is read off the model: the intercept (a constant feature of value 1) moves by tau_t y_t.

    """
    margins, norms, taus = [], [], []
    for x, y in zip(data["events"], data["y"]):
        margins.append(model.decision_function_one(x))
        norms.append(1.0 + sum(v * v for v in x.values()))
        b = model.intercept
        model.learn_one(x, y)
        taus.append((model.intercept - b) * y)
    return np.array(margins), np.array(norms), np.array(taus)


@pytest.mark.parametrize("C", [0.1, 1.0])
def test_pa_i_mistake_bound(phishing, C):
    margins, _, _ = run(PAClassifier(variant="PA-I", C=C), phishing)
    y = np.array(phishing["y"])
    mistakes = int((y * margins <= 0).sum())  # margin 0 counts as a mistake: l_t >= 1 there
    bound = max(phishing["R2"], 1 / C) * (phishing["u2"] + 2 * C * phishing["u_loss"].sum())
    assert 500 < mistakes <= bound < len(y)  # the bound is informative: below T = 11,055


def test_pa_ii_squared_loss_bound(phishing):
    C = 0.1
    margins, _, _ = run(PAClassifier(variant="PA-II", C=C), phishing)
    loss = np.maximum(0.0, 1.0 - np.array(phishing["y"]) * margins)
    bound = (phishing["R2"] + 1 / (2 * C)) * (
        phishing["u2"] + 2 * C * (phishing["u_loss"] ** 2).sum())
    assert (loss**2).sum() <= bound


@pytest.mark.parametrize("variant", ["PA", "PA-I", "PA-II"])
def test_master_inequality_on_phishing(phishing, variant):
    margins, norms, tau = run(PAClassifier(variant=variant, C=0.1), phishing)
    loss = np.maximum(0.0, 1.0 - np.array(phishing["y"]) * margins)
    lhs = (tau * (2 * loss - tau * norms - 2 * phishing["u_loss"])).sum()
    assert (tau >= 0).all() and tau.sum() > 0
    assert lhs <= phishing["u2"]
