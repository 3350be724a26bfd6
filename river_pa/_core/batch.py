"""Batches as the arrays the compiled loops read: dense float64 or CSR, validated.

A batch is a pandas DataFrame (River's convention), a 2-D numpy array or a scipy.sparse
matrix; for the last two the feature keys are the `columns` given (once per batch) or the
column numbers. pandas and scipy are imported only when a batch of theirs comes.

"""

from __future__ import annotations

import numpy as np

from river_pa._core.hashed_csr import hashed_number_csr, hashed_rows, known_columns_csr
from river_pa._core.features import Hashing, Vocabulary, cached_columns
from river_pa._core.validation import (
    check_csr,
    check_csr_entries,
    check_frame_dtypes,
    csr_arrays,
)

__all__ = ["as_series", "frame_arrays", "row_index"]


def row_index(X):
    """The pandas index of a batch's rows: a DataFrame's own, else 0..n-1. Rows pair with
    their targets by position, never by index label (as River's `learn_many` does)."""
    import pandas as pd

    return X.index if isinstance(X, pd.DataFrame) else pd.RangeIndex(X.shape[0])


def as_series(X, values: np.ndarray):
    """`values` as a Series on X's index when X is a DataFrame, else as they are."""
    if not type(X).__module__.startswith("pandas"):
        return values
    import pandas as pd

    return pd.Series(values, index=X.index)


def _sparse_frame(X) -> tuple:
    """(indptr, indices, data) of a DataFrame of pandas sparse columns (fill value 0), each row
    in column order.

    Reads each column's stored rows and values directly: `DataFrame.sparse.to_coo` builds a
    Series per column and is about 10x slower on batches of tens of thousands of columns.

    """
    import scipy.sparse as sp

    arrays = list(X._iter_column_arrays())  # pandas >= 1.3: the column arrays, in order
    rows = [a.sp_index.indices for a in arrays]
    counts = np.fromiter(map(len, rows), np.int64, len(rows))
    csr = sp.coo_matrix(
        (np.concatenate([a.sp_values for a in arrays]).astype(np.float64),
         (np.concatenate(rows), np.repeat(np.arange(len(rows)), counts))),
        shape=X.shape,
    ).tocsr()
    csr.sort_indices()
    return csr.indptr.astype(np.int64), csr.indices.astype(np.int64), csr.data


def _frame(X, allow_sparse: bool) -> tuple:
    """(keys, dense values or a CSR triple) of a DataFrame; TypeError naming a bad column."""
    if not X.columns.is_unique:
        col = X.columns[X.columns.duplicated()][0]
        raise ValueError(f"feature {col!r} names more than one column")
    keys = tuple(X.columns.tolist())
    if check_frame_dtypes(X) and allow_sparse:
        return keys, _sparse_frame(X)
    return keys, X.to_numpy(dtype=np.float64)


def _keys(columns, d: int, used=None) -> tuple:
    """The feature keys of the columns `used` (default: all d of them): `columns[j]`, or the
    column numbers. Only the used keys are read and checked for repeats: O(used) for a sparse
    batch over a wide key space."""
    if columns is not None and len(columns) != d:
        raise ValueError(f"columns names {len(columns)} features for {d} columns of X")
    names = range(d) if columns is None else columns
    keys = tuple(names) if used is None else tuple(map(names.__getitem__, used.tolist()))
    if columns is not None and len(set(keys)) < len(keys):
        raise ValueError("columns must not name a feature twice")
    return keys


def _array(X, columns) -> tuple:
    """(keys, values) of a 2-D numpy array."""
    if X.ndim != 2 or X.dtype.kind not in "iufb":
        raise TypeError(f"X must be a 2-D array of real numbers, got {X.dtype} of shape "
                        f"{X.shape}")
    return _keys(columns, X.shape[1]), X.astype(np.float64, copy=False)


def _sparse(X) -> tuple:
    """(CSR triple, column numbers used) of a scipy.sparse matrix, over the columns that hold
    values only (in order of first appearance, as a `learn_one` loop meets them; the triple's
    indices are ranks in that order); rows keep their stored order. Values are checked finite."""
    csr = X.tocsr()
    indptr, data, used, ranks = check_csr(csr.indptr, csr.indices, csr.data, csr.shape[1])
    return (indptr, ranks, data), used


def _cached_sparse(X, index, learn, grow, columns):
    """(positions, CSR triple) of a scipy.sparse batch through the column table of a
    `Vocabulary` (`Vocabulary.column_positions`): distinct keys, so no position is shared."""
    if columns is not None and len(columns) != X.shape[1]:
        raise ValueError(f"columns names {len(columns)} features for {X.shape[1]} columns of X")
    found = _known_sparse(X, index, columns, 0)
    if found is not None:
        return found
    (indptr, ranks, data), used = _sparse(X)
    pos = index.column_positions(range(X.shape[1]) if columns is None else columns, used,
                                 learn, grow)
    return pos, (indptr, pos[ranks], data)


def _known_sparse(X, index, columns, offset: int):
    """(positions, CSR triple) of a scipy.sparse batch whose columns are all in the dense
    column table `index` keeps for `columns` (holding position + `offset`), in one compiled
    pass (`hashed_csr.known_columns_csr`: no first-appearance pass, no lookup of distinct
    columns); None when there is no such table or a column is not in it. Raises check_csr's
    errors for a bad entry met before the first unknown column."""
    cached = index.__dict__.get("_table")
    numbers = columns is None or isinstance(columns, range)
    if (cached is None or cached[1] is None or cached[1].dense is None
            or not (cached[0] is columns or numbers and isinstance(cached[0], str))):
        return None
    csr = X.tocsr()
    indptr, indices, data = csr_arrays(csr.indptr, csr.indices, csr.data)
    *batch, bad, why = known_columns_csr(indptr, indices, data, X.shape[1], cached[1].dense,
                                         offset)
    if why == 2:
        return None
    check_csr_entries(indptr, indices, data, X.shape[1], bad, why)
    return batch[1], tuple(batch)


def _hashed_sparse(X, index, learn, grow, columns):
    """(positions, CSR triple) of a scipy.sparse batch hashed: keyed by its column numbers,
    one compiled pass (`hashed_csr.hashed_number_csr`); by names, through the table of
    `Hashing.column_positions`; each row's colliding entries merged as `learn_one` merges
    them. None when `columns` names a key twice."""
    numbers = columns is None or isinstance(columns, range)
    if numbers:
        csr = X.tocsr()
        indptr, indices, data = csr_arrays(csr.indptr, csr.indices, csr.data)
        *batch, bad, why = hashed_number_csr(indptr, indices, data, X.shape[1],
                                             index.n_features)
        check_csr_entries(indptr, indices, data, X.shape[1], bad, why)
    else:
        found = _known_sparse(X, index, columns, 1)
        if found is not None:
            indptr, batch = None, found[1]
        else:
            (indptr, ranks, data), used = _sparse(X)
    if columns is not None and len(columns) != X.shape[1]:
        raise ValueError(f"columns names {len(columns)} features for {X.shape[1]} columns of X")
    if not numbers and indptr is not None:
        pos = index.column_positions(columns, used)
        if pos is None:
            return None
        batch = hashed_rows(indptr, ranks, data, pos)
    if learn:
        grow(index.size)
    return batch[1], tuple(batch)


def _densified(keys: tuple, values: tuple, used: np.ndarray) -> tuple:
    """(keys, dense values) of a sparse batch over its used columns, in column-number order:
    a row of a canonical (sorted) CSR matrix then sums as its dict does (the zeros add 0)."""
    indptr, ranks, data = values
    order = np.argsort(used)  # the ranks in column-number order
    place = np.empty_like(order)
    place[order] = np.arange(len(order))
    dense = np.zeros((len(indptr) - 1, len(keys)))
    dense[np.repeat(np.arange(len(indptr) - 1), np.diff(indptr)), place[ranks]] = data
    return tuple(keys[r] for r in order.tolist()), dense


def _check_finite(keys: tuple, values) -> None:
    if isinstance(values, tuple):
        finite = np.ones(len(keys), dtype=bool)
        finite[values[1][~np.isfinite(values[2])]] = False
    else:
        finite = np.isfinite(values.sum(axis=0))  # a cheap first check; overflow is rare
        if not finite.all():
            finite = np.isfinite(values).all(axis=0)
    if not finite.all():
        raise ValueError(f"feature {keys[int(np.argmin(finite))]!r} has non-finite values")


def _merged_csr(values: tuple, pos: np.ndarray, merge) -> tuple:
    """(indptr, positions, data) of a CSR batch whose columns sit at `pos` after `merge`.

    `merge` maps each column to its merged column (keys sharing a position), or is None.
    Without merging, each row keeps its order, which is the dict order of that row's event.
    With hash collisions the merged row is ordered by merged column, so a row's sum may differ
    from `learn_one` in the last bits.

    """
    indptr, indices, data = values
    if merge is None:
        return indptr, pos[indices], data
    import scipy.sparse as sp

    csr = sp.csr_matrix((data, merge[indices], indptr), shape=(len(indptr) - 1, len(pos)),
                        copy=True)  # sum_duplicates sorts in place: the caller's arrays stay
    csr.sum_duplicates()
    return csr.indptr.astype(np.int64), pos[csr.indices].astype(np.int64), csr.data


def frame_arrays(X, index, learn: bool, allow_sparse: bool = False, grow=None, columns=None):
    """(positions, batch) of a batch through `index`, validated; positions shared merged.

    X is a DataFrame (keys: its column names, unique: a repeated name has no
    ``to_dict("records")`` meaning), a 2-D numpy array or a scipy.sparse matrix (keys:
    `columns`, or the column numbers). Values must be numeric or bool and finite (TypeError /
    ValueError naming the column, raised before `index` changes). With `learn` the keys are
    inserted into `index`, after ``grow(size)`` made room for the `size` positions the index
    will then have (a MemoryError there changes nothing). The vocabulary is looked up once
    per distinct column; for a scipy.sparse batch with `columns` a tuple, a pandas Index or
    None (a list is copied every call, so it is not cached), once per column never met in an
    earlier batch (`Vocabulary.column_positions`). Hashed, a scipy.sparse batch's column
    numbers get their CRC-32 in compiled code and named columns a table as the vocabulary's
    (`Hashing.column_positions`); with `allow_sparse` the entries of a row that share a
    position are summed as `merge_duplicates` sums one event's (`hashed_csr.hashed_rows`).
    Otherwise columns sharing a position (hash collisions) are summed in order of first
    occurrence, as `merge_duplicates` does for one event.

    The batch is a dense float64 array (rows x positions; C or F order: pandas is column-major)
    or, with `allow_sparse` and a scipy.sparse X or a DataFrame of pandas sparse columns (fill
    value 0), a CSR triple (indptr, indices, data) whose indices are already weight positions.
    Each row keeps its features' order, as its dict would (a DataFrame's column order; a sparse
    matrix's stored order, only the stored entries): a batch is bit for bit a `learn_one` loop.

    """
    sparse = type(X).__module__.startswith("scipy.sparse")
    if sparse and allow_sparse and (columns is None or cached_columns(columns)):
        if isinstance(index, Vocabulary):
            return _cached_sparse(X, index, learn, grow, columns)
        found = _hashed_sparse(X, index, learn, grow, columns) if isinstance(index, Hashing) \
            else None
        if found is not None:
            return found
    if isinstance(X, np.ndarray):
        keys, values = _array(X, columns)
    elif sparse:
        values, used = _sparse(X)
        keys = _keys(columns, X.shape[1], used)
        if not allow_sparse:
            keys, values = _densified(keys, values, used)
    elif type(X).__module__.startswith("pandas") and hasattr(X, "columns"):
        keys, values = _frame(X, allow_sparse)
    else:
        raise TypeError(f"X must be a pandas DataFrame, a 2-D numpy array or a scipy.sparse "
                        f"matrix, got {type(X).__name__}")
    _check_finite(keys, values)
    if learn:
        n_new = index.room(keys)
        index.check_room(n_new)  # past max_keys, or a MemoryError: nothing changes
        grow(index.size + n_new)
    if sparse and columns is None and isinstance(index, Hashing):
        pos, collide = index.numbers_unique(used)  # the keys are `used`: compiled CRC-32
    elif learn:
        pos, collide = index.insert_unique(keys)
    else:
        pos, collide = index.lookup_unique(keys)  # unseen keys share the sink: no collision
    merge = None
    if collide:
        uniq, first, inverse = np.unique(pos, return_index=True, return_inverse=True)
        merge = np.argsort(np.argsort(first))[inverse]  # column -> merged column
        pos = uniq[np.argsort(first)]
    if isinstance(values, tuple):
        return pos, _merged_csr(values, pos, merge)
    if merge is not None:
        merged = np.zeros((len(values), len(pos)))
        for j in range(len(merge)):
            merged[:, merge[j]] += values[:, j]
        values = merged
    return pos, values
