"""Feature indexing and validation: vocabulary, stable hashing, value checks."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import zlib

import numpy as np
import pytest

from river_pa import PAClassifier
from river_pa._core.features import Hashing, Vocabulary, merge_duplicates, stable_hash, to_values

KEYS = ["user=42", "k17", 3, ("a", 1), "é", 2.5, "1", 1]


def test_vocabulary_positions_and_sink():
    v = Vocabulary()
    assert v.insert(("x", "y", "x")).tolist() == [1, 2, 1]
    assert v.lookup(("y", "unseen", "x")).tolist() == [2, 0, 1]
    assert v.size == 3 and v.keys() == ["x", "y"]
    assert v.n_unseen(v.lookup(("unseen", "x", "other"))) == 2 and v.n_unseen(v.lookup(("x",))) == 0
    assert v.size == 3  # lookup never grows it


def test_stable_hash_is_crc32_of_a_canonical_encoding():
    assert stable_hash("user=42") == zlib.crc32(b"user=42")
    assert stable_hash(1) == zlib.crc32(b"\x001") != stable_hash("1")
    h = Hashing(2**18)
    assert h.lookup(("user=42", 1)).tolist() == [zlib.crc32(b"user=42") % 2**18,
                                                  zlib.crc32(b"\x001") % 2**18]


def test_equal_keys_hash_to_one_position():
    # 1, 1.0, True and np.int64(1) are one dict key and one Vocabulary feature; hashed by their
    # repr they were four features, and the key-tuple cache (tuple equality) made a prediction
    # depend on the event before it: {1.0: 1} scored 1.0 right after {1: 1}, else 0.0
    equal = [1, 1.0, True, np.int64(1), np.float32(1.0), np.bool_(True)]
    assert len({stable_hash(k) for k in equal}) == 1
    assert stable_hash(("a", np.int64(2), np.str_("b"))) == stable_hash(("a", 2.0, "b"))
    assert stable_hash(0.5) == zlib.crc32(b"\x000.5") and stable_hash(-0.0) == stable_hash(0)
    model = PAClassifier(n_features=2**20, learn_intercept=False)
    model.learn_one({1: 1.0}, True)
    for key in equal:
        model.predict_one({"other": 1.0})  # a different key tuple: no cached positions
        assert model.decision_function_one({key: 1.0}) == 1.0


def test_hash_positions_are_the_same_in_another_process():
    here = Hashing(2**18).lookup(tuple(KEYS)).tolist()
    code = (
        "from river_pa._core.features import Hashing; import sys, json\n"
        f"print(json.dumps(Hashing(2**18).lookup(tuple({KEYS!r})).tolist()))"
    )
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, cwd=os.getcwd())
        assert out.stdout.strip() == str(here).replace("(", "[").replace(")", "]")


def test_a_pickled_hashing_model_predicts_the_same_in_another_process(tmp_path):
    model = PAClassifier(variant="PA", n_features=2**10)
    model.learn_one({"user=42": 1.0, "ad=7": 2.0}, True)
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(model))
    code = (
        "import pickle, sys\n"
        f"m = pickle.loads(open({str(path)!r}, 'rb').read())\n"
        "print(repr(m.decision_function_one({'user=42': 1.0, 'ad=7': 2.0})))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "99"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    here = model.decision_function_one({"user=42": 1.0, "ad=7": 2.0})
    assert float(out.stdout) == here == pytest.approx(1.0, abs=1e-15)


def test_hashing_rejects_non_powers_of_two():
    with pytest.raises(ValueError, match="power of two"):
        Hashing(1000)


@pytest.mark.parametrize("n", [1024.0, "1024", True, None.__class__])
def test_hashing_rejects_non_integers_by_name(n):
    # these raised TypeErrors about '&' or '<' (or True passed as 2**0)
    with pytest.raises(ValueError, match=r"n_features must be a positive power of two, got "):
        PAClassifier(n_features=n)


def test_hashing_takes_numpy_integers():
    assert Hashing(np.int64(16)).size == 16


def test_merge_duplicates_sums_in_order_of_first_occurrence():
    idx, val = merge_duplicates(np.array([5, 2, 5, 7, 2]), np.array([1.0, 2.0, 4.0, 8.0, 16.0]))
    assert idx.tolist() == [5, 2, 7] and val.tolist() == [5.0, 18.0, 8.0]


def test_to_values_accepts_every_real_type():
    x = {"i": 3, "f": 2.5, "b": True, "np": np.float32(0.5), "ni": np.int64(-2), "nb": np.bool_(1)}
    assert to_values(x).tolist() == [3.0, 2.5, 1.0, 0.5, -2.0, 1.0]
    assert to_values({}).tolist() == []


@pytest.mark.parametrize(
    "value, error, message",
    [
        ("3", TypeError, "feature 'bad' has a non-numeric value '3' of type str"),
        (None, TypeError, "feature 'bad' has a non-numeric value None of type NoneType"),
        (1j, TypeError, "feature 'bad' has a non-numeric value 1j of type complex"),
        (float("nan"), ValueError, "feature 'bad' has a non-finite value nan"),
        (float("-inf"), ValueError, "feature 'bad' has a non-finite value -inf"),
        (10**400, ValueError, "feature 'bad' has a value out of the float64 range"),
    ],
)
def test_to_values_names_the_bad_feature(value, error, message):
    with pytest.raises(error) as info:
        to_values({"ok": 1.0, "bad": value})
    assert str(info.value).startswith(message)


def test_hash_collisions_are_merged_into_one_hashed_feature():
    # With one position, every key collides: the event is the single feature sum(values).
    h = PAClassifier(variant="PA", learn_intercept=False, n_features=1)
    h.learn_one({"a": 1.0, "b": 2.0}, True)  # x = (3): tau = 1/9, w = 1/3
    assert h._w.tolist() == pytest.approx([1 / 3], abs=1e-16)
    assert h.decision_function_one({"a": 1.0, "b": 2.0}) == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("n", [5, 100])  # the two code paths: pairwise and sorted
def test_hashing_reports_collisions_within_an_event(n):
    keys = tuple(f"k{j}" for j in range(n))
    idx, dups = Hashing(2**30).lookup_unique(keys)
    assert not dups and idx.tolist() == [zlib.crc32(k.encode()) % 2**30 for k in keys]
    idx, dups = Hashing(2**2).lookup_unique(keys)
    assert dups and idx.max() < 4


@pytest.mark.parametrize(
    "keys",
    [("a",), ("", "x", ""), ("user=42", "k17", "ad:7" * 40), ("é", "ascii"), ("a\x00b", "c"),
     ("s", 3, ("t", 1)), ()],
    ids=["one", "empty-strings", "long", "non-ascii", "nul-inside", "mixed-types", "none"],
)
def test_hash_positions_equal_crc32_on_every_path(keys):
    expected = [stable_hash(k) % 2**31 for k in keys]
    assert Hashing(2**31).lookup(keys).tolist() == expected


def test_hash_positions_of_many_random_keys():
    rng = np.random.default_rng(0)
    keys = tuple("".join(map(chr, rng.integers(1, 128, rng.integers(0, 12)))) for _ in range(500))
    assert Hashing(2**32).lookup(keys).tolist() == [zlib.crc32(k.encode()) for k in keys]


@pytest.mark.parametrize("learn", ["learn_one", "learn_many", "learn_many_sparse"])
def test_a_vocabulary_past_max_keys_refuses_the_event_and_changes_nothing(learn):
    # an events topic carrying fresh keys in every event grew a served model without limit
    import pandas as pd

    from river_pa._core.validation import TooManyFeaturesError

    model = PAClassifier()
    model.learn_one({"a": 1.0, "b": 2.0}, True)
    model._index.max_keys = 3
    before = pickle.dumps(model)
    with pytest.raises(TooManyFeaturesError, match="2 new feature keys .* max_keys=3 .*holds 2"):
        if learn == "learn_one":
            model.learn_one({"a": 1.0, "c": 1.0, "d": 1.0}, False)
        elif learn == "learn_many":
            model.learn_many(pd.DataFrame({"a": [1.0], "c": [1.0], "d": [1.0]}), pd.Series([False]))
        else:  # the column table of sparse batches
            import scipy.sparse as sp

            model.learn_many(sp.csr_matrix(np.ones((1, 3))), [False], columns=("a", "c", "d"))
    assert pickle.dumps(model) == before
    model.learn_one({"a": 1.0, "c": -1.0}, False)  # one new key still fits
    assert model._index.size == 4
    assert model.predict_proba_one({"zz": 5.0, "a": 1.0})  # prediction never inserts


@pytest.mark.parametrize("name, params, y0, y1", [
    ("PAMultiClassifier", {}, "A", "B"), ("PACostSensitiveClassifier", {}, "A", "B"),
    ("KernelPAClassifier", {}, "A", "B"),
    ("PAMultiLabelClassifier", {}, {"p": True}, {"p": False, "q": True}),
    ("PAClassifier", {"calibration": "temperature"}, True, False),
])
@pytest.mark.parametrize("learn", ["learn_one", "learn_many"])
def test_too_many_new_keys_change_no_label_and_no_calibrator(name, params, y0, y1, learn):
    # the new label got its row (and the caches their new shapes), and a calibrated
    # PAClassifier's calibrator learned the event, before the vocabulary refused its keys
    import pandas as pd

    import river_pa
    from river_pa._core.validation import TooManyFeaturesError

    model = getattr(river_pa, name)(**params)
    model.learn_one({"a": 1.0}, y0)
    model._index.max_keys = 2
    before = pickle.dumps(model)
    X = pd.DataFrame({"b": [1.0], "c": [2.0]})
    with pytest.raises(TooManyFeaturesError, match="2 new feature keys"):
        if learn == "learn_one":
            model.learn_one({"b": 1.0, "c": 2.0}, y1)
        elif isinstance(y1, dict):
            model.learn_many(X, pd.DataFrame([y1]))
        else:
            model.learn_many(X, pd.Series([y1]))
    assert pickle.dumps(model) == before
    model.learn_one({"b": 1.0}, y1)  # one new key fits, with the new label
    if name != "PAClassifier":
        assert model.classes == (["p", "q"] if isinstance(y1, dict) else ["A", "B"])
    assert model._index.size == 3


# -- the column table of array batches (issue 12: one vocabulary lookup per column met) --------

def test_sparse_batches_through_the_column_table_equal_a_learn_one_loop():
    """Batches of a wide sparse matrix with columns named once (a tuple): bit for bit a
    learn_one loop over the rows as dicts, with a list of names (the uncached path) and with
    range keys; predictions in between do not cache the sink of columns not yet learned."""
    import scipy.sparse as sp

    from river_pa import PAClassifier

    rng = np.random.default_rng(3)
    n, d = 600, 5000
    cols = rng.integers(0, d, size=(n, 8))
    X = sp.csr_matrix((rng.random(n * 8), cols.ravel(), np.arange(0, n * 8 + 1, 8)),
                      shape=(n, d))
    X.sum_duplicates()
    y = rng.random(n) < 0.5
    names = tuple(f"k{j}" for j in range(d))
    one = PAClassifier(variant="PA-I", C=0.5)
    for i in range(n):
        row = X[i]
        one.learn_one({names[j]: v for j, v in zip(row.indices, row.data.tolist())}, y[i])
    cached, listed = PAClassifier(variant="PA-I", C=0.5), PAClassifier(variant="PA-I", C=0.5)
    for lo in range(0, n, 100):
        cached.predict_many(X[lo + 100:lo + 200], columns=names)  # unseen columns: the sink
        cached.learn_many(X[lo:lo + 100], y[lo:lo + 100], columns=names)
        listed.learn_many(X[lo:lo + 100], y[lo:lo + 100], columns=list(names))
    for model in (cached, listed):
        assert model._index.keys() == one._index.keys()
        assert np.array_equal(model._w[: one._index.size], one._w[: one._index.size])
        assert model.intercept == one.intercept
    assert "_table" in vars(cached._index) and "_table" not in vars(listed._index)
    # the table is a cache, not state: it is not pickled
    assert vars(pickle.loads(pickle.dumps(cached._index))) == {"positions": one._index.positions}
    by_number = PAClassifier(variant="PA-I", C=0.5)
    for lo in range(0, n, 100):
        by_number.learn_many(X[lo:lo + 100], y[lo:lo + 100])  # keys: the column numbers
    assert by_number.weights == {int(k[1:]): w for k, w in one.weights.items()}


def test_the_column_table_refuses_a_repeated_name_before_any_change():
    import scipy.sparse as sp

    from river_pa import PAClassifier

    model = PAClassifier()
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="columns must not name a feature twice"):
        model.learn_many(sp.csr_matrix(np.eye(3)), [True, False, True], columns=("a", "b", "a"))
    assert pickle.dumps(model) == before
