"""River contract of PAClassifier and PARegressor: batches equal event loops, bad input."""

from __future__ import annotations

import pickle
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from river import compose, datasets, evaluate, metrics, preprocessing
from sklearn.datasets import load_svmlight_file

from river_pa import PAClassifier, PARegressor

BATCH = 97  # deliberately not a divisor of the stream lengths


def batches(X: pd.DataFrame, y: pd.Series):
    for lo in range(0, len(X), BATCH):
        yield X.iloc[lo : lo + BATCH], y.iloc[lo : lo + BATCH]


def frame(events):
    X = pd.DataFrame([x for x, _ in events])
    return X, pd.Series([y for _, y in events])


@pytest.fixture(scope="module")
def phishing():
    return frame(list(datasets.Phishing()))


@pytest.fixture(scope="module")
def a9a(shared_data):
    X, y = load_svmlight_file(str(shared_data / "a9a" / "a9a.bz2"))
    X = pd.DataFrame(X[:2000].toarray(), columns=[f"f{j}" for j in range(X.shape[1])])
    return X, pd.Series(y[:2000] > 0)


@pytest.fixture(scope="module")
def trump():
    return frame(list(datasets.TrumpApproval()))


def loop(model, X, y):
    for x, yi in zip(X.to_dict("records"), y):
        model.learn_one(x, yi)


def assert_same_model(a, b):
    assert np.array_equal(a._w[: len(b._w)], b._w[: len(a._w)])
    assert a.intercept == b.intercept
    assert a.weights == b.weights


@pytest.mark.parametrize(
    "data, params",
    [
        ("phishing", {"variant": "PA-I", "C": 0.1}),
        ("phishing", {"variant": "PA"}),
        ("a9a", {"variant": "PA-II", "C": 0.5}),
        ("a9a", {"variant": "PA-I", "n_features": 2**5}),  # 123 columns on 32 positions
        ("a9a", {"variant": "PA", "n_features": 2**4, "learn_intercept": False}),
    ],
)
def test_classifier_batches_equal_the_event_loop(request, data, params):
    X, y = request.getfixturevalue(data)
    many, one = PAClassifier(**params), PAClassifier(**params)
    for Xb, yb in batches(X, y):
        proba = many.predict_proba_many(Xb)
        pred = many.predict_many(Xb)
        rows = Xb.to_dict("records")
        assert pred.tolist() == [one.predict_one(x) for x in rows]
        assert proba[True].tolist() == [one.predict_proba_one(x)[True] for x in rows]
        assert proba[False].tolist() == [one.predict_proba_one(x)[False] for x in rows]
        many.learn_many(Xb, yb)
        loop(one, Xb, yb)
        assert_same_model(many, one)
    assert (many.intercept != 0.0) == many.learn_intercept and len(many.weights) > 5


def test_hashing_batches_do_collide(a9a):
    X, _ = a9a
    pos = PAClassifier(n_features=2**5)._index.lookup(tuple(X.columns))
    assert len(set(pos.tolist())) < len(pos)


def test_regressor_batches_equal_the_event_loop(trump):
    X, y = trump
    for params in ({"variant": "PA-I", "C": 0.01}, {"variant": "PA-II", "n_features": 2**2}):
        many, one = PARegressor(**params), PARegressor(**params)
        for Xb, yb in batches(X, y):
            assert many.predict_many(Xb).tolist() == [
                one.predict_one(x) for x in Xb.to_dict("records")]
            many.learn_many(Xb, yb)
            loop(one, Xb, yb)
            assert_same_model(many, one)


def test_sample_weights_in_batches(phishing):
    X, y = phishing
    w = pd.Series(np.linspace(0.0, 2.0, len(X)))
    many, one = PAClassifier(variant="PA-II"), PAClassifier(variant="PA-II")
    many.learn_many(X, y, w)
    for x, yi, wi in zip(X.to_dict("records"), y, w):
        one.learn_one(x, yi, wi)
    assert_same_model(many, one)


@pytest.mark.parametrize("model", [PAClassifier(), PARegressor()], ids=["clf", "reg"])
@pytest.mark.parametrize(
    "x, error, message",
    [
        ({"a": 1.0, "new": "7"}, TypeError, "feature 'new' has a non-numeric value '7'"),
        ({"a": float("nan")}, ValueError, "feature 'a' has a non-finite value nan"),
        ({"new": float("inf"), "a": 1.0}, ValueError, "feature 'new' has a non-finite value inf"),
        ({"a": None}, TypeError, "feature 'a' has a non-numeric value None"),
        # numpy complex scalars pass float() with a warning, dropping the imaginary part
        ({"a": np.complex128(3 + 4j)}, TypeError, r"feature 'a' has a non-numeric value"),
        ({"a": 1.0, "new": Decimal("1.5")}, TypeError, "feature 'new' has a non-numeric value"),
    ],
)
def test_a_rejected_event_leaves_the_model_unchanged(model, x, error, message):
    model = model.clone()
    model.learn_one({"a": 1.0, "b": 2.0}, 1)
    model.predict_one({"a": 1.0})
    before = pickle.dumps(model)
    with pytest.raises(error, match=message):
        model.learn_one(x, 1)
    with pytest.raises(error, match=message):
        model.predict_one(x)
    assert pickle.dumps(model) == before
    assert "new" not in model._index.positions


@pytest.mark.parametrize(
    "column, error, message",
    [
        (["x"] * 3, TypeError, "feature 'bad' has non-numeric dtype"),
        ([1.0, float("nan"), 0.0], ValueError, "feature 'bad' has non-finite values"),
        ([1 + 1j, 2 + 0j, 0j], TypeError, "feature 'bad' has non-numeric dtype complex128"),
    ],
)
def test_a_rejected_batch_leaves_the_model_unchanged(column, error, message):
    model = PAClassifier()
    model.learn_one({"a": 1.0}, True)
    before = pickle.dumps(model)
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "bad": column})
    with pytest.raises(error, match=message):
        model.learn_many(X, pd.Series([True, False, True]))
    with pytest.raises(error, match=message):
        model.predict_many(X)
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("model", [PAClassifier(), PARegressor()], ids=["clf", "reg"])
def test_a_batch_with_a_repeated_column_name_is_rejected(model):
    # to_dict("records") keeps the last of the two 'a' values; summing them was a third answer
    model = model.clone()
    model.learn_one({"a": 1.0}, 1)
    before = pickle.dumps(model)
    X = pd.DataFrame([[1.0, 2.0, 0.5], [3.0, 4.0, 0.5]], columns=["a", "b", "a"])
    with pytest.raises(ValueError, match="feature 'a' names more than one column"):
        model.learn_many(X, pd.Series([1, 0]))
    with pytest.raises(ValueError, match="feature 'a' names more than one column"):
        model.predict_many(X)
    assert pickle.dumps(model) == before


def test_a_bad_label_leaves_the_model_unchanged():
    model = PAClassifier()
    model.learn_one({"a": 1.0}, True)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="PAMultiClassifier"):
        model.learn_one({"a": 1.0}, "spam")
    with pytest.raises(ValueError, match="got 2; for more than two classes .*PAMultiClassifier"):
        model.learn_many(pd.DataFrame({"a": [1.0, 2.0]}), pd.Series([1, 2]))
    with pytest.raises(ValueError, match="X has 2 rows but y has 1"):
        model.learn_many(pd.DataFrame({"a": [1.0, 2.0]}), pd.Series([1]))
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("w", [10**400, np.complex128(2 + 1j), -1, float("nan")],
                         ids=["huge-int", "complex", "negative", "nan"])
def test_bad_sample_weights_are_value_errors(w):
    # 10**400 raised a bare OverflowError; a numpy complex weight lost its imaginary part
    model = PAClassifier()
    model.learn_one({"a": 1.0}, True)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="sample weight w must be a finite number >= 0, got "):
        model.learn_one({"a": -1.0}, True, w)
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("y", [pd.NA, np.array([1, 1])], ids=["NA", "array"])
def test_labels_without_a_truth_value_get_the_binary_label_message(y):
    # were "boolean value of NA is ambiguous" / "truth value of an array ... is ambiguous"
    with pytest.raises(ValueError, match="PAClassifier is binary: labels must be bool, 0/1 or"):
        PAClassifier().learn_one({"a": 1.0}, y)
    with pytest.raises(ValueError, match="PAClassifier is binary: .* got <NA>"):
        PAClassifier().learn_many(pd.DataFrame({"a": [1.0, 2.0]}),
                                  pd.Series([True, pd.NA], dtype="boolean"))


def test_a_numpy_key_then_a_tuple_key_are_two_features():
    # np.int64(1) == (1, 2) is an array: comparing the events' key tuples raised "truth value
    # of an array ... is ambiguous" (the Numba path's key cache)
    model = PAClassifier(variant="PA")
    model.learn_one({np.int64(1): 1.0}, True)  # w = b = 1/2
    model.learn_one({(1, 2): 1.0}, False)  # margin 1/2 (the tuple is unseen): tau = 3/4
    assert model.weights == {1: 0.5, (1, 2): -0.75}
    assert model.intercept == -0.25


def test_empty_dict_predicts_from_the_intercept():
    model = PAClassifier(variant="PA")
    assert model.predict_proba_one({}) == {False: 0.5, True: 0.5}
    model.learn_one({"a": 1.0}, True)  # w_a = b = 1/2
    assert model.decision_function_one({}) == 0.5
    assert model.predict_one({}) is True
    assert model.predict_proba_one({})[True] == pytest.approx(1 / (1 + np.exp(-0.5)))
    reg = PARegressor(variant="PA", epsilon=0.0)
    reg.learn_one({}, 3.0)
    assert reg.predict_one({}) == 3.0 and reg.predict_one({"unseen": 5.0}) == 3.0


def test_unseen_keys_at_prediction_do_not_grow_the_model():
    model = PAClassifier()
    model.learn_one({"a": 1.0}, True)
    before = pickle.dumps(model)
    model.predict_proba_one({"a": 1.0, "z": 3.0})
    model.predict_many(pd.DataFrame({"a": [1.0], "z": [3.0]}))
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("params", [{"variant": "PA-III"}, {"C": 0}, {"C": -1.0},
                                    {"C": float("inf")}, {"n_features": 1000}])
def test_bad_parameters(params):
    with pytest.raises(ValueError):
        PAClassifier(**params)


def test_bad_epsilon():
    with pytest.raises(ValueError, match="epsilon"):
        PARegressor(epsilon=-0.1)


def test_pipeline_equals_scaling_by_hand():
    pipe = preprocessing.StandardScaler() | PAClassifier(variant="PA-I", C=0.1)
    metric = evaluate.progressive_val_score(datasets.Phishing(), pipe, metrics.Accuracy())
    scaler, model, by_hand = preprocessing.StandardScaler(), PAClassifier(variant="PA-I", C=0.1), \
        metrics.Accuracy()
    for x, y in datasets.Phishing():
        by_hand.update(y, model.predict_one(scaler.transform_one(x)))
        scaler.learn_one(x)
        model.learn_one(scaler.transform_one(x), y)
    assert metric.get() == by_hand.get() > 0.85


def test_pipeline_learn_many(phishing):
    X, y = phishing
    pipe = compose.Pipeline(preprocessing.StandardScaler(), PAClassifier(variant="PA-II"))
    pipe.learn_many(X, y)
    accuracy = (pipe.predict_many(X) == y).mean()
    assert 0.8 < accuracy < 1.0


def test_progressive_val_score_values():
    clf = evaluate.progressive_val_score(
        datasets.Phishing(), PAClassifier(variant="PA-I", C=0.1), metrics.Accuracy())
    assert round(clf.get(), 4) == 0.8752
    reg = evaluate.progressive_val_score(
        datasets.TrumpApproval(), PARegressor(variant="PA-I", C=0.01), metrics.MAE())
    assert round(reg.get(), 6) == 0.227029


def sparse_frame(events):
    """A DataFrame of pandas sparse columns (fill 0) and the matching dicts of non-zeros."""
    X = pd.DataFrame([x for x, _ in events]).fillna(0.0)
    dicts = [{k: v for k, v in row.items() if v != 0.0} for row in X.to_dict("records")]
    return X.astype(pd.SparseDtype("float64", 0.0)), dicts


def test_sparse_frames_equal_the_event_loop():
    rng = np.random.default_rng(3)
    keys = [f"k{j}" for j in range(300)]
    events = [({keys[j]: float(v) for j, v in zip(rng.choice(300, 8, replace=False),
                                                      rng.normal(size=8))}, bool(rng.random() < .5))
              for _ in range(500)]
    many, one = PAClassifier(variant="PA-II"), PAClassifier(variant="PA-II")
    for lo in range(0, len(events), 128):
        X, dicts = sparse_frame(events[lo : lo + 128])
        y = pd.Series([yi for _, yi in events[lo : lo + 128]])
        assert many.predict_many(X).tolist() == [one.predict_one(x) for x in dicts]
        many.learn_many(X, y)
        for x, yi in zip(dicts, y):
            one.learn_one(x, yi)
        assert many.weights == one.weights and many.intercept == one.intercept
    hashed, ref = PAClassifier(n_features=2**6), PAClassifier(n_features=2**6)
    X, dicts = sparse_frame(events)
    hashed.learn_many(X, pd.Series([y for _, y in events]))
    for x, (_, y) in zip(dicts, events):
        ref.learn_one(x, y)
    np.testing.assert_allclose(hashed._w, ref._w, rtol=1e-9, atol=1e-12)


def test_sparse_frame_with_nan_fill_is_rejected():
    X = pd.DataFrame({"a": [1.0, np.nan]}).astype(pd.SparseDtype("float64"))
    with pytest.raises(ValueError, match="fill value 0"):
        PAClassifier().learn_many(X, pd.Series([True, False]))


@pytest.mark.parametrize(
    "labels",
    [[True, False, True], [1, 0, 1], [1, -1, 1], [1.0, 0.0, 1.0], np.array([1, -1, 1], np.int8),
     np.array([True, False, True], dtype=object)],
)
def test_batch_label_encodings_give_the_same_model(labels):
    X = pd.DataFrame({"a": [1.0, 2.0, -1.0]})
    model, ref = PAClassifier(), PAClassifier()
    model.learn_many(X, pd.Series(labels))
    ref.learn_many(X, pd.Series([True, False, True]))
    assert pickle.dumps(model) == pickle.dumps(ref)


@pytest.mark.parametrize("labels", [[1, 2], [0.5, 1.0], [1.0, float("nan")], ["a", "b"]])
def test_bad_batch_labels(labels):
    with pytest.raises(ValueError, match="PAMultiClassifier"):
        PAClassifier().learn_many(pd.DataFrame({"a": [1.0, 2.0]}), pd.Series(labels))


def test_bad_batch_targets():
    X = pd.DataFrame({"a": [1.0, 2.0]})
    with pytest.raises(ValueError, match="target y must be finite, got nan"):
        PARegressor().learn_many(X, pd.Series([1.0, float("nan")]))
    with pytest.raises(TypeError, match="target y must be a real number, got '1'"):
        PARegressor().learn_many(X, pd.Series(["1", "2"], dtype=object))


@pytest.mark.parametrize(
    "y, error, message",
    [
        (np.complex128(1 + 2j), TypeError, r"target y must be a real number, got np.complex128"),
        (10**400, ValueError, "target y must be finite, got 1000"),
    ],
)
def test_bad_targets_leave_the_regressor_unchanged(y, error, message):
    model = PARegressor()
    model.learn_one({"a": 1.0}, 2.0)
    before = pickle.dumps(model)
    with pytest.raises(error, match=message):
        model.learn_one({"a": 1.0}, y)
    assert pickle.dumps(model) == before


def test_a_step_beyond_float64_is_refused_and_changes_nothing():
    """One hard step to y = 1e300 on x = 1e-150 needs a weight of 1e450: refused, as a batch too
    (the rows before it are learned, as a learn_one loop would)."""
    model = PARegressor(variant="PA", epsilon=0.0, learn_intercept=False)
    model.learn_one({"a": 1.0}, 2.0)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="beyond the float64 range"):
        model.learn_one({"a": 1e-150}, 1e300)
    assert pickle.dumps(model) == before and model.weights == {"a": 2.0}
    batch = PARegressor(variant="PA", epsilon=0.0, learn_intercept=False)
    X = pd.DataFrame({"a": [1.0, 1e-150]})
    with pytest.raises(ValueError, match="row 1 .the rows before it are learned"):
        batch.learn_many(X, pd.Series([2.0, 1e300]))
    assert batch.weights == {"a": 2.0}
    with pytest.raises(ValueError, match="row 1"):
        PARegressor(variant="PA", epsilon=0.0, learn_intercept=False).progressive_csr(
            [0, 1, 2], [0, 0], [1.0, 1e-150], [2.0, 1e300], keys=["a"])
