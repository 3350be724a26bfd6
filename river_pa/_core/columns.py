"""Compiled column bookkeeping of sparse batches: tables keyed by column number, the CRC-32
of column numbers, and the rows of a hashed batch with their collisions merged.

A CSR batch names its features by column number, possibly out of a huge key space (2^40
columns, a few thousand used). Everything here costs memory of the columns met, never of the
width: an open-addressing table (linear probing, Fibonacci hashing of the int64 key, grown x2
at half load) stands where a dense array indexed by column number would need the width.

Sources: Knuth, TAOCP vol. 3, 6.4 (multiplicative hashing, linear probing); CRC-32 as zlib
computes it, whose value on messages of one length is affine over GF(2) (a digit's share
comes from a table built with zlib at import, `DIGIT_TABLE`).

"""

from __future__ import annotations

import zlib

import numpy as np
from numba import njit

from river_pa._core import jit

__all__ = ["ColumnTable", "csr_columns_sparse", "hashed_rows", "number_hashes"]

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


def _digit_tables() -> np.ndarray:
    """T[n, j, d] for the CRC-32 of a NUL byte and n decimal digits (n <= 19: any int64 >= 0):
    for messages of one length CRC-32 is affine over GF(2), so the CRC is T[n, 0, 0] (all
    digits '0', the base) xor T[n, j, d] xor base for each digit d at place j (0 = the last).
    A digit's lookup then waits for no other (byte-wise CRC chains them)."""
    table = np.zeros((20, 19, 10), np.int64)
    for n in range(1, 20):
        base = zlib.crc32(b"\0" + b"0" * n)
        for j in range(n):
            for d in range(10):
                text = bytearray(b"\0" + b"0" * n)
                text[n - j] = 48 + d
                table[n, j, d] = zlib.crc32(bytes(text)) ^ (base if j else 0)
    return table


DIGIT_TABLE = _digit_tables()


@njit(cache=True)
def _number_hash(v, table, digits):
    """`stable_hash(v)` of an int v >= 0, by `DIGIT_TABLE` (`digits`: scratch of 19)."""
    u = np.uint64(v)  # unsigned: division by 10 without floor-division fix-ups
    ten = np.uint64(10)
    n = 0
    while True:
        digits[n] = u % ten
        u //= ten
        n += 1
        if u == 0:
            break
    crc = table[n, 0, digits[0]]
    for j in range(1, n):
        crc ^= table[n, j, digits[j]]
    return crc


@njit(cache=True)
def _number_hashes(cols, table, out):
    digits = np.empty(19, np.int64)
    for k in range(cols.shape[0]):
        out[k] = _number_hash(cols[k], table, digits)


def number_hashes(cols: np.ndarray) -> np.ndarray:
    """`features.stable_hash` of each column number (int64, 0 <= c < 2^63), compiled: the
    CRC-32 of a NUL byte and the decimal digits, as ``zlib.crc32(b"\\0" + repr(c).encode())``.

    >>> from river_pa._core.features import stable_hash
    >>> number_hashes(np.array([0, 2**40 - 1])).tolist() == [stable_hash(0), stable_hash(2**40 - 1)]
    True

    """
    out = np.empty(len(cols), np.int64)
    _number_hashes(cols, DIGIT_TABLE, out)
    return out


@njit(cache=True)
def _shared(pos, keys):
    """Which entries of `pos` equal another entry (a table of `pos` values in `keys`)."""
    first = np.empty(keys.shape[0], np.int64)
    shared = np.zeros(pos.shape[0], np.bool_)
    for k in range(pos.shape[0]):
        s = _slot(keys, pos[k])
        if keys[s] == _EMPTY:
            keys[s] = pos[k]
            first[s] = k
        else:
            shared[k] = True
            shared[first[s]] = True
    return shared


@njit(cache=True)
def _merged_row(lo, hi, ranks, data, pos, shared, indices, values, start):
    """Write row ``lo:hi`` from `start` on, entries at one position summed, in order of first
    occurrence (as `features.merge_duplicates`: from 0.0, in row order); returns its end."""
    end = start
    for p in range(lo, hi):
        q = pos[ranks[p]]
        at = end
        if shared[ranks[p]]:
            for e in range(start, end):
                if indices[e] == q:
                    at = e
                    break
        if at == end:
            indices[end] = q
            values[end] = 0.0
            end += 1
        values[at] += data[p]
    return end


@njit(cache=True)
def _hashed_rows(indptr, ranks, data, pos, keys):
    shared = _shared(pos, keys)
    n = indptr.shape[0] - 1
    indices = np.empty(ranks.shape[0], np.int64)
    for p in range(ranks.shape[0]):
        indices[p] = pos[ranks[p]]
    dup = np.zeros(n, np.bool_)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            if shared[ranks[p]]:
                for e in range(indptr[i], p):
                    if indices[e] == indices[p]:
                        dup[i] = True
    if not dup.any():
        return indptr, indices, data
    out_ptr = np.empty(n + 1, np.int64)
    values = np.empty(ranks.shape[0], np.float64)
    out_ptr[0] = 0
    for i in range(n):
        lo, hi, start = indptr[i], indptr[i + 1], out_ptr[i]
        if dup[i]:
            out_ptr[i + 1] = _merged_row(lo, hi, ranks, data, pos, shared, indices, values,
                                         start)
        else:
            for p in range(lo, hi):
                indices[start + p - lo] = pos[ranks[p]]
                values[start + p - lo] = data[p]
            out_ptr[i + 1] = start + hi - lo
    return out_ptr, indices[: out_ptr[n]].copy(), values[: out_ptr[n]].copy()


def hashed_rows(indptr: np.ndarray, ranks: np.ndarray, data: np.ndarray,
                pos: np.ndarray) -> tuple:
    """(indptr, positions, data) of a CSR batch whose column of rank r sits at ``pos[r]``,
    the entries of a row that share a position merged as `learn_one` merges one event's
    colliding keys (`features.merge_duplicates`): bit for bit a `learn_one` loop. Rows
    without such a collision keep their order and values (the input arrays when no row has
    one).

    >>> hashed_rows(np.array([0, 2, 4]), np.array([0, 1, 2, 0]), np.array([1.0, 2.0, 4.0, 8.0]),
    ...             np.array([5, 3, 5]))
    (array([0, 2, 3]), array([5, 3, 5]), array([ 1.,  2., 12.]))

    """
    keys = np.full(_capacity(len(pos)), _EMPTY, np.int64)
    return _hashed_rows(indptr, ranks, data, pos, keys)


@njit(cache=True)
def _hashed_number_row(i, lo, hi, indices, n_keys, mask, table, digits, slots, epos):
    """Check row i, entries ``lo:hi`` (columns in 0..n_keys-1, each once) and put each
    entry's hashed position in `epos`. Returns (first bad entry or -1, why as
    `_numba.csr_columns`, whether two of its entries share a position).

    `slots` (rows x 3 int64, a power of two long, at least twice the longest row) is a
    multimap from position to the row's entries there, marked with the row (no clearing)."""
    size = slots.shape[0] - 1
    collide = False
    for p in range(lo, hi):
        c = indices[p]
        if c < 0 or c >= n_keys:
            return p, 0, collide
        q = _number_hash(c, table, digits) & mask
        epos[p] = q
        s = ((q * _FIB) >> 32) & size
        while slots[s, 0] == i:
            if slots[s, 1] == q:
                if indices[slots[s, 2]] == c:
                    return p, 1, collide
                collide = True
            s = (s + 1) & size
        slots[s, 0] = i
        slots[s, 1] = q
        slots[s, 2] = p
    return -1, 0, collide


@njit(cache=True)
def _merge_row(lo, hi, epos, data, out_idx, out_val, start):
    """Write row ``lo:hi`` at `start` with its entries at one position summed, in order of
    first occurrence, from 0.0 (as `features.merge_duplicates`); returns its end. Quadratic
    in the row's length: rows whose keys collide are rare."""
    end = start
    for p in range(lo, hi):
        at_p = end
        for e in range(start, end):
            if out_idx[e] == epos[p]:
                at_p = e
                break
        if at_p == end:
            out_idx[end] = epos[p]
            out_val[end] = 0.0
            end += 1
        out_val[at_p] += data[p]
    return end


@njit(cache=True)
def _hashed_number_csr(indptr, indices, data, n_keys, mask, table):
    n = indptr.shape[0] - 1
    longest = 0
    for i in range(n):
        longest = max(longest, indptr[i + 1] - indptr[i])
    size = 16
    while size < 2 * longest:
        size *= 2
    slots = np.full((size, 3), -1, np.int64)
    digits = np.empty(19, np.int64)
    epos = np.empty(indices.shape[0], np.int64)
    out_ptr = np.empty(n + 1, np.int64)
    out_val = data
    out_ptr[0] = 0
    merged = False
    for i in range(n):
        lo, hi = indptr[i], indptr[i + 1]
        bad, why, collide = _hashed_number_row(i, lo, hi, indices, n_keys, mask, table,
                                               digits, slots, epos)
        if bad >= 0:
            return out_ptr, epos, out_val, bad, why
        if collide and not merged:  # the first merged row: the rows before it as they are
            merged = True
            out_val = data.copy()
        if merged:
            if collide:
                out_ptr[i + 1] = _merge_row(lo, hi, epos, data, epos, out_val, out_ptr[i])
            else:
                start = out_ptr[i]
                for p in range(lo, hi):
                    epos[start + p - lo] = epos[p]
                    out_val[start + p - lo] = data[p]
                out_ptr[i + 1] = start + hi - lo
        else:
            out_ptr[i + 1] = hi
    m = out_ptr[n]
    return out_ptr, epos[:m], out_val[:m], -1, 0


def hashed_number_csr(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n_keys: int,
                      n_features: int) -> tuple:
    """(indptr, positions, data, first bad entry, why) of a CSR batch keyed by its column
    numbers and hashed into `n_features` (a power of two) buckets, in one compiled pass:
    each entry's position is ``stable_hash(column) & (n_features - 1)`` and a row's entries at
    one position are merged as `hashed_rows` merges them. The bad entry is that of
    `_numba.csr_columns` (a column outside 0..n_keys-1, why 0, or twice in its row, why 1).
    Memory and time are those of the entries, whatever `n_keys`: no first-appearance order
    of the distinct columns is needed, each entry hashes its own.

    >>> from river_pa._core.features import stable_hash
    >>> out = hashed_number_csr(np.array([0, 2]), np.array([3, 2**40]), np.array([1.0, 2.0]),
    ...                         2**41, 2**4)
    >>> out[1].tolist() == [stable_hash(3) % 16, stable_hash(2**40) % 16], out[3]
    (True, -1)

    """
    return _hashed_number_csr(indptr, indices, data, n_keys, n_features - 1, DIGIT_TABLE)
