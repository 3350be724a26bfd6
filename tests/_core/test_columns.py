"""Compiled column bookkeeping of CSR batches (issue 18): the CRC-32 of column numbers equals
`stable_hash`, hashed batches are bit for bit a `learn_one` loop (collisions within a row
included), and a batch over a huge key space costs memory of the columns it uses."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import river_pa
from river_pa._core.columns import ColumnTable, csr_columns_sparse
from river_pa._core.hashed_csr import number_hashes
from river_pa._core.features import stable_hash
from river_pa._core.validation import check_csr


def test_the_compiled_hash_of_a_column_number_is_stable_hash():
    rng = np.random.default_rng(0)
    edges = [0, 1, 9, 10, 99, 100, 2**31 - 1, 2**31, 2**32, 2**40 - 1, 2**40, 2**63 - 1]
    cols = np.concatenate([edges, np.arange(20_000), rng.integers(0, 2**63 - 1, 20_000),
                           rng.integers(0, 2**40, 20_000)]).astype(np.int64)
    assert number_hashes(cols).tolist() == [stable_hash(int(c)) for c in cols]


def test_a_column_table_keeps_every_column_through_its_growth():
    rng = np.random.default_rng(1)
    cols = np.unique(rng.integers(0, 2**62, 5_000))
    table = ColumnTable()
    for lo in range(0, len(cols), 700):  # grows several times
        table.put(cols[lo : lo + 700], cols[lo : lo + 700] % 1000 + 1)
    assert len(table) == len(cols)
    assert table.get(cols).tolist() == (cols % 1000 + 1).tolist()
    assert table.get(np.array([2**62 + 5, 3])).tolist() == [0, 0]
    assert table.nbytes <= 64 * len(cols)


def test_first_appearance_over_a_wide_key_space_equals_the_dense_one():
    rng = np.random.default_rng(2)
    indptr = np.arange(0, 301, 3)
    indices = np.concatenate([rng.choice(50, 3, replace=False) for _ in range(100)])
    dense = check_csr(indptr, indices, np.ones(300), 50)
    wide = check_csr(indptr, indices, np.ones(300), 2**40)  # through the hash table
    assert all(np.array_equal(a, b) for a, b in zip(dense, wide))
    with pytest.raises(ValueError, match="row 1 has column 1099511627775 twice"):
        check_csr([0, 1, 3], [2**40 - 1] * 3, [1.0] * 3, 2**40)
    with pytest.raises(ValueError, match="row 0 has column 1099511627776, outside "):
        check_csr([0, 1], [2**40], [1.0], 2**40)
    assert csr_columns_sparse(np.array([0]), np.array([], np.int64), 2**40)[0].tolist() == []


def _batches(rng, rows: int, width: int, active: int):
    """CSR batches of `rows` rows of `active` distinct columns below `width`, random values."""
    cols = np.concatenate([rng.choice(width, active, replace=False) for _ in range(rows)])
    vals = rng.normal(size=rows * active)
    X = sp.csr_matrix((vals, cols, np.arange(0, rows * active + 1, active)),
                      shape=(rows, width))
    return X, rng.random(rows) < 0.5


def _dicts(X, names):
    return [dict(zip((names[j] for j in X.indices[X.indptr[i] : X.indptr[i + 1]].tolist()),
                     X.data[X.indptr[i] : X.indptr[i + 1]].tolist()))
            for i in range(X.shape[0])]


@pytest.mark.parametrize("named", [False, True], ids=["column numbers", "names"])
def test_hashed_csr_batches_are_a_learn_one_loop(named):
    rng = np.random.default_rng(3)
    names = tuple(f"w{j}" for j in range(300)) if named else range(300)
    given = {"columns": names} if named else {}
    one = river_pa.PAClassifier(n_features=2**5)  # 12 of 32 buckets per row: collisions
    many = river_pa.PAClassifier(n_features=2**5)
    merged_rows = 0
    for _ in range(4):
        X, y = _batches(rng, 50, 300, 12)
        xs = _dicts(X, names)
        merged_rows += sum(len({stable_hash(k) % 32 for k in x}) < len(x) for x in xs)
        assert many.predict_many(X, **given).tolist() == [one.predict_one(x) for x in xs]
        for x, label in zip(xs, y.tolist()):
            one.learn_one(x, label)
        many.learn_many(X, y, **given)
        assert many.weights == one.weights and many.intercept == one.intercept
    assert merged_rows > 50  # rows whose own keys collide were learned too
    assert many.predict_many(X, **given).tolist() == [one.predict_one(x) for x in xs]


@pytest.mark.parametrize("params", [{}, {"n_features": 2**10}], ids=["vocabulary", "hashed"])
def test_a_sparse_batch_of_a_huge_key_space_costs_memory_of_the_columns_met(params):
    width = 2**40
    met = np.array([width - 1, 7, 2**39, 2**33 + 1, 12, 2**20])
    rows = [met[[0, 1, 2]], met[[3, 4]], met[[5, 0]]]
    X = sp.csr_matrix((np.arange(1.0, 8.0), np.concatenate(rows), [0, 3, 5, 7]),
                      shape=(3, width))
    y = np.array([True, False, True])
    many, one = river_pa.PAClassifier(**params), river_pa.PAClassifier(**params)
    for _ in range(3):
        many.learn_many(X, y)
    for _ in range(3):
        for x, label in zip(_dicts(X, range(width)), y.tolist()):
            one.learn_one(x, label)
    assert many.weights == one.weights and many.intercept == one.intercept
    assert many.predict_many(X).tolist() == [one.predict_one(x) for x in _dicts(X, range(width))]
    if not params:
        assert set(many.weights) == set(met.tolist())
        assert many._index.size == len(met) + 1 and many._w.nbytes <= 1024  # not 8 TiB
        assert many._index._table[1].nbytes <= 64 * len(met)  # table of the columns met
    loop, expected = river_pa.PAClassifier(**params), []
    for x, label in zip(_dicts(X, range(width)), y.tolist()):
        expected.append(loop.decision_function_one(x))
        loop.learn_one(x, label)
    progressive = river_pa.PAClassifier(**params)
    margins = progressive.progressive_csr(X.indptr, X.indices, X.data, y, keys=range(width))
    assert margins.tolist() == expected and progressive.weights == loop.weights


@pytest.mark.parametrize("params", [{}, {"n_features": 2**5}], ids=["vocabulary", "hashed"])
def test_a_batch_of_columns_all_met_takes_one_pass_and_equals_a_learn_one_loop(params):
    rng = np.random.default_rng(4)
    names = tuple(f"w{j}" for j in range(40))
    X, y = _batches(rng, 60, 40, 10)
    one, many = river_pa.PAClassifier(**params), river_pa.PAClassifier(**params)
    for _ in range(3):  # the second and third passes meet only columns in the table
        many.learn_many(X, y, columns=names)
        for x, label in zip(_dicts(X, names), y.tolist()):
            one.learn_one(x, label)
        assert many.weights == one.weights and many.intercept == one.intercept
    table = many._index._table[1]
    assert table.dense is not None and len(table) == 40
    bad = sp.csr_matrix((np.ones(3), [1, 3, 3], [0, 1, 3]), shape=(2, 40))
    with pytest.raises(ValueError, match="row 1 has column 3 twice"):
        many.learn_many(bad, [True, False], columns=names)
    assert many.weights == one.weights
