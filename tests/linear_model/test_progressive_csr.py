"""`progressive_csr`: the compiled predict-then-learn loop equals a predict_one/learn_one loop bit
for bit on real data, and refuses bad batches before the model changes."""

from __future__ import annotations

import contextlib
import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from river_pa import PAClassifier, PARegressor


def libsvm(shared_data, path: str, rows: int):
    X, y = load_svmlight_file(str(shared_data / path))
    X = X[:rows]
    return X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, y[:rows], X.shape[1]


def event_loop(model, indptr, indices, data, y, keys, w=None):
    """Margins of a decision-then-learn loop over the rows as dicts, in their column order."""
    margin = getattr(model, "decision_function_one", model.predict_one)
    out = []
    for i in range(len(indptr) - 1):
        lo, hi = indptr[i], indptr[i + 1]
        x = {keys[j]: v for j, v in zip(indices[lo:hi].tolist(), data[lo:hi].tolist())}
        out.append(margin(x))
        model.learn_one(x, y[i], 1.0 if w is None else w[i])
    return np.array(out)


def assert_same(a, b, margins_a, margins_b):
    assert margins_a.tobytes() == margins_b.tobytes()
    assert a.intercept == b.intercept
    assert a.weights == b.weights
    assert np.array_equal(a._w[: len(b._w)], b._w[: len(a._w)])


@pytest.mark.parametrize(
    "path, labels, params",
    [
        ("a9a/a9a.bz2", lambda y: y, {"variant": "PA-I", "C": 0.1}),  # -1/+1
        ("a9a/a9a.bz2", lambda y: y > 0, {"variant": "PA", "n_features": 2**12}),  # bool
        ("phishing/phishing.bz2", lambda y: y.astype(int), {"variant": "PA-II", "C": 0.5}),  # 0/1
        ("phishing/phishing.bz2", lambda y: y, {"variant": "PA-I", "learn_intercept": False}),
    ],
)
def test_classifier_equals_the_event_loop(shared_data, path, labels, params):
    indptr, indices, data, y, d = libsvm(shared_data, path, 3000)
    y = labels(y)
    keys = [f"f{j}" for j in range(d)]
    compiled, one = PAClassifier(**params), PAClassifier(**params)
    # two batches: the second meets known and new columns
    margins = np.concatenate([
        compiled.progressive_csr(indptr[: 1001], indices[: indptr[1000]], data[: indptr[1000]],
                                 y[:1000], keys),
        compiled.progressive_csr(indptr[1000:] - indptr[1000], indices[indptr[1000]:],
                                 data[indptr[1000]:], y[1000:], keys),
    ])
    assert_same(compiled, one, margins, event_loop(one, indptr, indices, data, y, keys))
    assert len(compiled.weights) > 50 and (compiled.intercept != 0) == compiled.learn_intercept
    assert 0.7 < np.mean((margins > 0) == (np.asarray(y, dtype=float) > 0)) < 1.0


def test_regressor_with_sample_weights_equals_the_event_loop(shared_data):
    indptr, indices, data, y, d = libsvm(shared_data, "abalone/abalone_scale.bz2", 4177)
    w = np.linspace(0.0, 2.0, len(y))
    keys = range(d)  # the keys are the column numbers
    compiled = PARegressor(variant="PA-I", C=0.1, epsilon=0.5)
    one = PARegressor(variant="PA-I", C=0.1, epsilon=0.5)
    margins = compiled.progressive_csr(indptr, indices, data, y, keys, w)
    assert_same(compiled, one, margins, event_loop(one, indptr, indices, data, y, keys, w))
    assert np.mean(np.abs(margins[-1000:] - y[-1000:])) < 2.5  # abalone: ages 1..29, MAE ~1.6


def test_the_model_keeps_learning_one_event_at_a_time_after_a_batch():
    model = PAClassifier(variant="PA")
    assert model.predict_one({"a": 1.0}) is False  # caches the positions of ("a",): the sink
    model.progressive_csr([0, 1], [0], [1.0], [True], keys=["a"])
    assert model.decision_function_one({"a": 1.0}) == 1.0  # the new position, not the sink


def test_a_hash_collision_is_refused_before_the_model_changes():
    model = PAClassifier(n_features=2)
    model.learn_one({"k0": 1.0}, True)
    keys = ["k0", "k1", "k2"]  # on 2 positions, two of the three share one
    pos = model._index.lookup(tuple(keys)).tolist()
    pair = next([i, j] for i in range(3) for j in range(i) if pos[i] == pos[j])
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="share one weight"):
        model.progressive_csr([0, 1, 2], pair, [1.0, 1.0], [True, False], keys)
    assert pickle.dumps(model) == before
    with pytest.raises(ValueError, match="share one weight"):  # equal keys, vocabulary
        PAClassifier().progressive_csr([0, 1, 2], [0, 1], [1.0, 1.0], [True, False], ["a", "a"])


@pytest.mark.parametrize(
    "indptr, indices, data, y, w, error, message",
    [
        ([0, 2], [0, 0], [1.0, 2.0], [True], None, ValueError, "row 0 has column 0 twice"),
        ([0, 1, 2], [0, 2], [1.0, 2.0], [True, False], None, ValueError, "row 1 has column 2, "
         "outside 0..1"),
        ([0, 1, 2], [0, 1], [1.0, np.nan], [True, False], None, ValueError, "row 1 column 1 has a "
         "non-finite value nan"),
        ([0, 1, 2], [0, 1], [1.0, 2.0], [True, 2], None, ValueError, "labels must be bool"),
        ([0, 1, 2], [0, 1], [1.0, 2.0], [True], None, ValueError, "one label per row"),
        ([0, 1, 2], [0, 1], [1.0, 2.0], [True, False], [1.0, -1.0], ValueError, "sample weights"),
        ([0, 2, 1], [0, 1], [1.0, 2.0], [True, False], None, ValueError, "indptr must rise"),
        ([0, 1, 2], [0.0, 1.0], [1.0, 2.0], [True, False], None, TypeError, "indices must be"),
        ([0, 1, 2], [0, 1], ["1", "2"], [True, False], None, TypeError, "data must be"),
    ],
)
def test_a_bad_batch_leaves_the_model_unchanged(indptr, indices, data, y, w, error, message):
    model = PAClassifier()
    model.learn_one({"a": 1.0}, True)
    before = pickle.dumps(model)
    with pytest.raises(error, match=message):
        model.progressive_csr(indptr, indices, data, y, ["a", "b"], w)
    assert pickle.dumps(model) == before


def test_a_huge_key_space_costs_memory_of_the_batch_only():
    model = PARegressor(n_features=2**4)
    margins = model.progressive_csr([0, 1], [10**15], [2.0], [1.0], keys=range(10**18))
    assert margins.tolist() == [0.0] and model.predict_one({10**15: 2.0}) != 0.0


# -- learn_many / predict_many on numpy arrays and scipy.sparse matrices (issue 12) -----------

def rows_as_dicts(X, keys):
    """The rows of a CSR matrix (stored entries, stored order) or a dense array as dicts."""
    if isinstance(X, np.ndarray):
        return [dict(zip(keys, row.tolist())) for row in X]
    return [{keys[j]: v for j, v in zip(X.indices[lo:hi].tolist(), X.data[lo:hi].tolist())}
            for lo, hi in zip(X.indptr[:-1].tolist(), X.indptr[1:].tolist())]


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("names", [False, True])
@pytest.mark.parametrize("cls, path, params", [
    (PAClassifier, "a9a/a9a.bz2", {"variant": "PA-I", "C": 0.1}),
    (PAClassifier, "phishing/phishing.bz2", {"variant": "PA-II", "n_features": 2**10}),
    (PARegressor, "abalone/abalone_scale.bz2", {"variant": "PA-I", "epsilon": 0.5}),
])
def test_array_batches_equal_the_event_loop(shared_data, cls, path, params, names, dense):
    X, y = load_svmlight_file(str(shared_data / path))
    X, y = X[:2000], y[:2000]
    keys = [f"f{j}" for j in range(X.shape[1])] if names else list(range(X.shape[1]))
    if dense:
        X = X.toarray()
    many, one = cls(**params), cls(**params)
    rows = rows_as_dicts(X, keys)
    for lo in range(0, 2000, 500):
        Xb, yb = X[lo: lo + 500], y[lo: lo + 500]
        given = {"columns": keys} if names else {}
        assert many.predict_many(Xb, **given).tolist() == [one.predict_one(x)
                                                           for x in rows[lo: lo + 500]]
        if cls is PAClassifier:
            proba = many.predict_proba_many(Xb, **given)
            assert proba[:, 1].tolist() == [one.predict_proba_one(x)[True]
                                            for x in rows[lo: lo + 500]]
        many.learn_many(Xb, yb, **given)
        for x, yi in zip(rows[lo: lo + 500], yb):
            one.learn_one(x, yi)
        assert many.weights == one.weights and many.intercept == one.intercept
    assert len(many.weights) > 5


def test_a_sparse_batch_looks_up_only_the_columns_it_uses():
    import scipy.sparse as sp

    model = PAClassifier()
    X = sp.csr_matrix((np.array([1.0, 2.0]), np.array([7, 123456]), np.array([0, 1, 2])),
                      shape=(2, 2**18))
    model.learn_many(X, np.array([True, False]))
    assert model._index.size == 3 and set(model.weights) == {7, 123456}


def test_bad_array_batches_change_nothing():
    model = PAClassifier()
    model.learn_one({0: 1.0}, True)
    before = pickle.dumps(model)
    for X, columns, error in [
        (np.array([[1.0, np.nan]]), None, "feature 1 has non-finite values"),
        (np.array([["a", "b"]]), None, "X must be a 2-D array of real numbers"),
        (np.array([[1.0, 2.0]]), ["a"], "columns names 1 features for 2 columns"),
        (np.array([[1.0, 2.0]]), ["a", "a"], "columns must not name a feature twice"),
    ]:
        with pytest.raises((TypeError, ValueError), match=error):
            model.learn_many(X, np.array([True]), columns=columns)
        assert pickle.dumps(model) == before


def test_a_family_import_loads_no_pandas():
    import subprocess
    import sys

    code = ("import sys, river_pa; river_pa.PAClassifier; river_pa.PAMultiClassifier; "
            "river_pa.KernelPAClassifier; river_pa.PAMultiLabelClassifier; "
            "river_pa.RescaledExpClassifier; print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_predicting_a_sparse_batch_leaves_it_as_it_was():
    import scipy.sparse as sp

    X = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([5, 1, 3]), np.array([0, 3])),
                      shape=(1, 6))
    PAClassifier().predict_many(X)  # unseen columns all sit at the sink: merged there
    assert X.indices.tolist() == [5, 1, 3] and X.data.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("interpret", [False, True])
def test_a_step_beyond_float64_stops_the_batch_in_both_kernel_tiers(interpret):
    """Row 1 needs a weight of 1e450: the interpreted kernels, like Numba's, stop there with
    row 0 learned (a quiet inf, no warning), and give the same model."""
    from river_pa._core import jit

    model = PARegressor(variant="PA", epsilon=0.0, learn_intercept=False)
    with jit.interpreted() if interpret else contextlib.nullcontext():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="row 1 .the rows before it are learned"):
                model.progressive_csr([0, 1, 2], [0, 0], [1.0, 1e-150], [2.0, 1e300], ["a"])
    assert model.weights == {"a": 2.0} and model.intercept == 0.0
