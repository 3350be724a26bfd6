"""Compiled kernels of CSR batches through the hashing trick: the CRC-32 of column numbers
(`features.stable_hash` of an int) and the rows of a hashed batch with the entries that share
a position merged, as `learn_one` merges one event's colliding keys.

Source: CRC-32 as zlib computes it, whose value on messages of one length is affine over
GF(2): a digit's share comes from a table built with zlib at import (`DIGIT_TABLE`).

"""

from __future__ import annotations

import zlib

import numpy as np
from numba import njit

from river_pa._core.columns import _EMPTY, _FIB, _capacity, _slot

__all__ = ["hashed_number_csr", "hashed_rows", "known_columns_csr", "number_hashes"]


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
def _hashed_number_row(i, lo, hi, indices, n_keys, mask, table, digits, slots, epos, known,
                       offset):
    """Check row i, entries ``lo:hi`` (columns in 0..n_keys-1, each once) and put each
    entry's position in `epos`: hashed (mask >= 0), else ``known[c] - offset`` (why 2 when column
    c is not there: 0 or past its end). Returns (first bad entry or -1, why as
    `_numba.csr_columns`, whether two of its entries share a position).

    `slots` (rows x 3 int64, a power of two long, at least twice the longest row) is a
    multimap from position to the row's entries there, marked with the row (no clearing)."""
    size = slots.shape[0] - 1
    collide = False
    for p in range(lo, hi):
        c = indices[p]
        if c < 0 or c >= n_keys:
            return p, 0, collide
        if mask >= 0:
            q = _number_hash(c, table, digits) & mask
        elif c < known.shape[0] and known[c] != 0:
            q = known[c] - offset
        else:
            return p, 2, collide
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
def _hashed_number_csr(indptr, indices, data, n_keys, mask, table, known, offset):
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
                                               digits, slots, epos, known, offset)
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
    return _hashed_number_csr(indptr, indices, data, n_keys, n_features - 1, DIGIT_TABLE,
                              np.zeros(0, np.int64), 0)


def known_columns_csr(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n_keys: int,
                      known: np.ndarray, offset: int) -> tuple:
    """`hashed_number_csr` with each entry's position ``known[column] - offset`` (a dense
    `columns.ColumnTable`, 0 for a column not in it) instead of a hash: the batch in one compiled
    pass when every column is in the table. Why 2: the first entry whose column is not
    (the caller then takes the first-appearance path, which inserts it).

    >>> known_columns_csr(np.array([0, 2, 3]), np.array([1, 0, 2]), np.ones(3), 3,
    ...                   np.array([4, 2, 0]), 1)[3:]
    (2, 2)

    """
    return _hashed_number_csr(indptr, indices, data, n_keys, -1, DIGIT_TABLE, known, offset)
