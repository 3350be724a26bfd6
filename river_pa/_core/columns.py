"""Compiled column bookkeeping of sparse batches: tables keyed by column number (the hashed
batches' kernels are in `hashed_csr`).

A CSR batch names its features by column number, possibly out of a huge key space (2^40
columns, a few thousand used). Everything here costs memory of the columns met, never of the
width: an open-addressing table (linear probing, Fibonacci hashing of the int64 key, grown x2
at half load) stands where a dense array indexed by column number would need the width.

Source: Knuth, TAOCP vol. 3, 6.4 (multiplicative hashing, linear probing).

"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_pa._core import jit

__all__ = ["ColumnTable", "csr_columns_sparse"]

_FIB = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64: 2^64 / golden ratio
_EMPTY = -1  # keys are column numbers or positions, never negative


@njit(cache=True)
def _slot(keys: np.ndarray, key: int) -> int:
    """The slot of `key` in the table `keys` (a power of two long), or the empty slot where it
    would go."""
    mask = keys.shape[0] - 1
    s = ((key * _FIB) >> 32) & mask
    while keys[s] != key and keys[s] != _EMPTY:
        s = (s + 1) & mask
    return s


def _capacity(n: int) -> int:
    """The smallest power of two >= 2n (and >= 16): the table stays at most half full."""
    return max(16, 1 << int(2 * n - 1).bit_length()) if n else 16


@njit(cache=True)
def _csr_columns_sparse(indptr, indices, n_keys, keys):
    rank = np.empty(keys.shape[0], np.int64)
    last_row = np.empty(keys.shape[0], np.int64)
    order = np.empty(indices.shape[0], np.int64)
    ranks = np.empty(indices.shape[0], np.int64)
    count = 0
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            c = indices[p]
            if c < 0 or c >= n_keys:
                return order[:0].copy(), ranks, p, 0
            s = _slot(keys, c)
            if keys[s] == _EMPTY:
                keys[s] = c
                rank[s] = count
                order[count] = c
                count += 1
            elif last_row[s] == i:
                return order[:0].copy(), ranks, p, 1
            last_row[s] = i
            ranks[p] = rank[s]
    return order[:count].copy(), ranks, -1, 0


def csr_columns_sparse(indptr: np.ndarray, indices: np.ndarray, n_keys: int) -> tuple:
    """`_numba.csr_columns` (columns in order of first appearance, ranks, first bad entry,
    why) through a table of the columns met: O(len(indices)) memory and time for any
    `n_keys`, where the dense version needs two arrays of `n_keys` (and where sorting the
    columns, `np.unique`, took longer). Interpreted inside `jit.interpreted()` (the slots
    then differ, the results do not).

    >>> csr_columns_sparse(np.array([0, 2, 3]), np.array([2**40, 7, 2**40]), 2**41)
    (array([1099511627776,             7]), array([0, 1, 0]), -1, 0)

    """
    keys = np.full(_capacity(len(indices)), _EMPTY, np.int64)
    return jit.kernel(_csr_columns_sparse)(indptr, indices, n_keys, keys)


@njit(cache=True)
def _table_get(keys, vals, cols, out):
    for k in range(cols.shape[0]):
        s = _slot(keys, cols[k])
        out[k] = vals[s] if keys[s] == cols[k] else 0


@njit(cache=True)
def _table_put(keys, vals, cols, values) -> int:
    added = 0
    for k in range(cols.shape[0]):
        s = _slot(keys, cols[k])
        if keys[s] == _EMPTY:
            keys[s] = cols[k]
            added += 1
        vals[s] = values[k]
    return added


class ColumnTable:
    """A map from column numbers (int64 >= 0) to int64 values, 0 for a column not in it.

    While every column put is below `DENSE` (2^21) it is an array indexed by column number
    (grown to the largest column met: at most 16 MiB, and the quickest lookup); from the first
    column past it, an open-addressing table of 16 bytes per slot, at most 4 slots per column
    (about 64 bytes per column) whatever the column numbers: a batch over 2^40 columns costs
    the columns it uses.

    >>> t = ColumnTable()
    >>> t.put(np.array([3, 9]), np.array([6, 7]))
    >>> t.put(np.array([2**40]), np.array([5]))
    >>> t.get(np.array([3, 4, 2**40, 9]))
    array([6, 0, 5, 7])
    >>> len(t)
    3

    """

    DENSE = 2**21

    def __init__(self):
        self._dense = np.zeros(0, np.int64)  # None once hashed
        self._keys = self._vals = None
        self._count = 0

    def __len__(self) -> int:
        return self._count

    @property
    def dense(self) -> np.ndarray | None:
        """The values by column number while the table is an array (read-only use), else
        None."""
        return self._dense

    @property
    def nbytes(self) -> int:
        if self._dense is not None:
            return self._dense.nbytes
        return self._keys.nbytes + self._vals.nbytes

    def _fits_dense(self, cols: np.ndarray) -> bool:
        """Whether `cols` index the dense array (grown for them if they are below DENSE);
        when not, the table turns to hashing."""
        if self._dense is None:
            return False
        top = int(cols.max(initial=-1))
        if top < len(self._dense):
            return True
        if top < self.DENSE:
            grown = np.zeros(min(self.DENSE, max(top + 1, 2 * len(self._dense))), np.int64)
            grown[: len(self._dense)] = self._dense
            self._dense = grown
            return True
        held = np.flatnonzero(self._dense)
        self._keys = np.full(_capacity(len(held)), _EMPTY, np.int64)
        self._vals = np.zeros(len(self._keys), np.int64)
        _table_put(self._keys, self._vals, held, self._dense[held])
        self._dense = None
        return False

    def get(self, cols: np.ndarray) -> np.ndarray:
        """The values of `cols` (int64), 0 for the columns not in the table."""
        dense = self._dense
        if dense is not None:
            if int(cols.max(initial=-1)) < len(dense):
                return dense[cols]
            out = np.zeros(len(cols), np.int64)  # columns past the array hold nothing yet
            inside = cols < len(dense)
            out[inside] = dense[cols[inside]]
            return out
        out = np.empty(len(cols), np.int64)
        _table_get(self._keys, self._vals, cols, out)
        return out

    def put(self, cols: np.ndarray, values: np.ndarray) -> None:
        """Set the values of `cols` (int64 >= 0, distinct, not in the table) to `values`
        (non-zero)."""
        if self._fits_dense(cols):
            self._dense[cols] = values
            self._count += len(cols)
            return
        if 2 * (self._count + len(cols)) > len(self._keys):
            old = self._keys != _EMPTY
            keys, vals = self._keys[old], self._vals[old]
            self._keys = np.full(_capacity(self._count + len(cols)), _EMPTY, np.int64)
            self._vals = np.zeros(len(self._keys), np.int64)
            _table_put(self._keys, self._vals, keys, vals)
        self._count += _table_put(self._keys, self._vals, cols, values)
