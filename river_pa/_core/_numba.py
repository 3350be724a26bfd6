"""Numba code every family shares: the PA step sizes and the CRC-32 of feature hashing.

Source: Crammer et al. (2006), Online Passive-Aggressive Algorithms, JMLR 7, Section 3, Figure 1
(the three step sizes tau, used by every family's update).

"""

from __future__ import annotations

import numpy as np
from numba import njit

PA, PA_I, PA_II = 0, 1, 2


def _crc_table() -> np.ndarray:
    """The byte table of CRC-32 as zlib computes it (reflected polynomial 0xEDB88320)."""
    table = np.empty(256, dtype=np.int64)
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[n] = c
    return table


CRC_TABLE = _crc_table()


@njit(cache=True)
def step_size(variant: int, loss: float, sq_norm: float, c: float) -> float:
    """tau of PA (loss/||x||^2), PA-I (min(C, loss/||x||^2)) or PA-II (loss/(||x||^2 + 1/2C)).

    `c` is the aggressiveness already multiplied by the sample weight. A zero `sq_norm` (an
    empty event and no intercept) leaves nothing to move: tau = 0.

    """
    if loss <= 0.0 or c <= 0.0 or sq_norm <= 0.0:
        return 0.0
    if variant == PA:
        return loss / sq_norm
    if variant == PA_I:
        return min(c, loss / sq_norm)
    return loss / (sq_norm + 1.0 / (2.0 * c))



@njit(cache=True)
def mask_positions(idx: np.ndarray, mask: int) -> bool:
    """idx &= mask in place (hash -> position); returns whether two positions are equal."""
    n = idx.shape[0]
    for j in range(n):
        idx[j] &= mask
    if n > 64:
        s = np.sort(idx)
        for j in range(1, n):
            if s[j] == s[j - 1]:
                return True
        return False
    for j in range(n):
        for k in range(j):
            if idx[j] == idx[k]:
                return True
    return False


@njit(cache=True)
def crc32_segments(data: bytes, table: np.ndarray, idx: np.ndarray) -> None:
    """idx[k] = zlib.crc32 of the k-th NUL-separated segment of `data`, for every k.

    `idx` (int64) must have one slot per segment (the number of NUL bytes + 1).

    """
    k = 0
    crc = 0xFFFFFFFF
    for b in data:
        if b == 0:
            idx[k] = crc ^ 0xFFFFFFFF
            k += 1
            crc = 0xFFFFFFFF
        else:
            crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    idx[k] = crc ^ 0xFFFFFFFF



@njit(cache=True)
def csr_columns(indptr: np.ndarray, indices: np.ndarray, n_keys: int):
    """(columns, ranks, first bad entry, why) of a CSR batch whose columns are 0..n_keys-1.

    `columns` are the column numbers in order of first appearance, `ranks[p]` the rank of
    `indices[p]` in that order. The bad entry is the position in `indices` of the first column
    outside 0..n_keys-1 (why 0) or met twice in one row (why 1); -1 when there is none.

    """
    last_row = np.full(n_keys, -1, np.int64)
    rank = np.empty(n_keys, np.int64)
    order = np.empty(min(n_keys, indices.shape[0]), np.int64)
    ranks = np.empty(indices.shape[0], np.int64)
    count = 0
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            c = indices[p]
            if c < 0 or c >= n_keys:
                return order[:0].copy(), ranks, p, 0
            if last_row[c] == i:
                return order[:0].copy(), ranks, p, 1
            if last_row[c] < 0:
                rank[c] = count
                order[count] = c
                count += 1
            last_row[c] = i
            ranks[p] = rank[c]
    return order[:count].copy(), ranks, -1, 0
