"""Pandas batches as the arrays the compiled loops read: dense float64 or CSR, validated.

"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from river_pa._core.validation import check_frame_dtypes

__all__ = ["frame_arrays"]


def _sparse_csr(X: pd.DataFrame) -> sp.csr_matrix:
    """The CSR matrix of a DataFrame of pandas sparse columns (fill value 0).

    Reads each column's stored rows and values directly: `DataFrame.sparse.to_coo` builds a
    Series per column and is about 10x slower on batches of tens of thousands of columns.

    """
    arrays = list(X._iter_column_arrays())  # pandas >= 1.3: the column arrays, in order
    rows = [a.sp_index.indices for a in arrays]
    counts = np.fromiter(map(len, rows), np.int64, len(rows))
    coo = sp.coo_matrix(
        (np.concatenate([a.sp_values for a in arrays]).astype(np.float64),
         (np.concatenate(rows), np.repeat(np.arange(len(rows)), counts))),
        shape=X.shape,
    )
    return coo.tocsr()


def _csr_positions(csr: sp.csr_matrix, pos: np.ndarray, merge) -> tuple:
    """(indptr, positions, data) of a CSR batch whose columns sit at `pos` after `merge`.

    `merge` maps each column to its merged column (keys sharing a position), or is None.
    Without merging, each row keeps the column order of its non-zero entries, which is the
    dict order of that row's event. With hash collisions the merged row is ordered by the
    batch's first column of each position, so a row's sum may differ from `learn_one` in the
    last bits.

    """
    if merge is not None:
        csr = sp.csr_matrix((csr.data, merge[csr.indices], csr.indptr),
                            shape=(csr.shape[0], len(pos)))
        csr.sum_duplicates()
    csr.sort_indices()
    return (csr.indptr.astype(np.int64), pos[csr.indices].astype(np.int64),
            csr.data.astype(np.float64))


def frame_arrays(X: pd.DataFrame, index, learn: bool, allow_sparse: bool = False, grow=None):
    """(positions, batch) of a DataFrame through `index`, validated; positions shared merged.

    Columns must be numeric or bool and finite (TypeError / ValueError naming the column,
    raised before `index` changes), and their names unique: a repeated name has no
    ``to_dict("records")`` meaning (the dict keeps the last value), so it is a ValueError. With
    `learn` the column keys are inserted into `index`, after ``grow(size)`` made room for the
    `size` positions the index will then have (a MemoryError there changes nothing).
    Columns sharing a position (hash collisions) are summed in order of first occurrence, as
    `merge_duplicates` does for one event.

    The batch is a dense float64 array (rows x positions; C or F order: pandas is column-major)
    or, with `allow_sparse` and every column a pandas sparse column (fill value 0), a CSR triple
    (indptr, indices, data) whose indices are already weight positions. Each row's features
    keep the column order, as the dict of `to_dict("records")` would: a dense batch is bit for
    bit a `learn_one` loop.

    """
    if not X.columns.is_unique:
        col = X.columns[X.columns.duplicated()][0]
        raise ValueError(f"feature {col!r} names more than one column")
    sparse = check_frame_dtypes(X) and allow_sparse
    if sparse:
        values = _sparse_csr(X)
        finite = np.ones(X.shape[1], dtype=bool)
        finite[values.indices[~np.isfinite(values.data)]] = False
    else:
        values = X.to_numpy(dtype=np.float64)
        finite = np.isfinite(values.sum(axis=0))  # a cheap first check; overflow is rare
        if not finite.all():
            finite = np.isfinite(values).all(axis=0)
    if not finite.all():
        col = X.columns[int(np.argmin(finite))]
        raise ValueError(f"feature {col!r} has non-finite values")
    keys = tuple(X.columns.tolist())
    pos = index.lookup(keys)
    if learn:
        grow(index.size + index.n_unseen(pos))  # room first: a MemoryError changes nothing
        pos = index.insert(keys)
    merge = None
    if len(set(pos.tolist())) < len(pos):
        uniq, first, inverse = np.unique(pos, return_index=True, return_inverse=True)
        merge = np.argsort(np.argsort(first))[inverse]  # column -> merged column
        pos = uniq[np.argsort(first)]
    if sparse:
        return pos, _csr_positions(values, pos, merge)
    if merge is not None:
        merged = np.zeros((len(values), len(pos)))
        for j in range(len(merge)):
            merged[:, merge[j]] += values[:, j]
        values = merged
    return pos, values
