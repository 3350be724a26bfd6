"""Exact oracle: without an intercept our PA-I and PA-II are scikit-learn's SGD "pa1"/"pa2".

scikit-learn's `SGDClassifier(loss="hinge", penalty=None, learning_rate="pa1"|"pa2", eta0=C)`
and `SGDRegressor(loss="epsilon_insensitive", ...)` implement Crammer et al. (2006), Figure 1
and Section 5, row by row; with `shuffle=False` one `partial_fit` visits the rows in order.
Their intercept is not the paper's projection (it is left out of ||x||^2), so the comparison
runs with the intercept off on both sides. Data: the shared a9a (binary, labels -1/+1) and
abalone (regression) LIBSVM files.

"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import SGDClassifier, SGDRegressor

from river_pa import PAClassifier, PARegressor

ROWS = 3000


def rows(X, n):
    """The first n rows of a CSR matrix as dicts of their non-zero columns, in column order."""
    X = X[:n].tocsr()
    X.sort_indices()
    return [
        dict(zip(X.indices[lo:hi].tolist(), X.data[lo:hi].tolist()))
        for lo, hi in zip(X.indptr[:-1], X.indptr[1:])
    ]


def weights_vector(model, n_cols):
    w = np.zeros(n_cols)
    for j, v in model.weights.items():
        w[j] = v
    return w


@pytest.fixture(scope="module")
def a9a(shared_data):
    X, y = load_svmlight_file(str(shared_data / "a9a" / "a9a.bz2"))
    return X[:ROWS], y[:ROWS]


@pytest.fixture(scope="module")
def abalone(shared_data):
    X, y = load_svmlight_file(str(shared_data / "abalone" / "abalone_scale.bz2"))
    return X, y


@pytest.mark.parametrize("variant, rate", [("PA-I", "pa1"), ("PA-II", "pa2")])
@pytest.mark.parametrize("C", [0.01, 1.0])
def test_classifier_matches_sklearn(a9a, variant, rate, C):
    X, y = a9a
    oracle = SGDClassifier(loss="hinge", penalty=None, learning_rate=rate, eta0=C,
                           shuffle=False, fit_intercept=False)
    oracle.partial_fit(X, y, classes=np.array([-1.0, 1.0]))
    model = PAClassifier(variant=variant, C=C, learn_intercept=False)
    for x, yi in zip(rows(X, ROWS), y.tolist()):
        model.learn_one(x, yi)
    ours = weights_vector(model, X.shape[1])
    assert np.abs(ours).max() > 0.1  # the models learned something
    np.testing.assert_allclose(ours, oracle.coef_[0], rtol=0, atol=1e-9)


@pytest.mark.parametrize("variant, rate", [("PA-I", "pa1"), ("PA-II", "pa2")])
@pytest.mark.parametrize("C, epsilon", [(0.1, 0.5), (1.0, 0.0)])
def test_regressor_matches_sklearn(abalone, variant, rate, C, epsilon):
    X, y = abalone
    oracle = SGDRegressor(loss="epsilon_insensitive", epsilon=epsilon, penalty=None,
                          learning_rate=rate, eta0=C, shuffle=False, fit_intercept=False)
    oracle.partial_fit(X.toarray(), y)  # this file loads with int64 indices: sklearn wants dense
    model = PARegressor(variant=variant, C=C, epsilon=epsilon, learn_intercept=False)
    for x, yi in zip(rows(X, X.shape[0]), y.tolist()):
        model.learn_one(x, yi)
    ours = weights_vector(model, X.shape[1])
    assert np.abs(ours).max() > 0.1
    np.testing.assert_allclose(ours, oracle.coef_, rtol=0, atol=1e-9)


def test_learn_many_matches_sklearn(a9a):
    import pandas as pd

    X, y = a9a
    oracle = SGDClassifier(loss="hinge", penalty=None, learning_rate="pa1", eta0=0.5,
                           shuffle=False, fit_intercept=False)
    oracle.partial_fit(X, y, classes=np.array([-1.0, 1.0]))
    model = PAClassifier(variant="PA-I", C=0.5, learn_intercept=False)
    model.learn_many(pd.DataFrame(X.toarray()), pd.Series(y))
    np.testing.assert_allclose(weights_vector(model, X.shape[1]), oracle.coef_[0], rtol=0,
                               atol=1e-9)
