"""A libsvm/svmlight file reader: one Numba pass over the file's bytes, producing CSR arrays.

Format: one event a line, ``label index:value index:value ...``; ``#`` starts a comment; blank
lines are skipped. Indices are non-negative integers (0- or 1-based, kept as written, so
feature keys match the file); each index appears at most once a line. Labels and values are
decimal numbers (``+1``, ``-0.5``, ``1e-3``). Multi-label (``1,2``) and ``qid:`` lines are
rejected. A bad line raises ValueError naming the file and the line number.

Numbers are read with correct rounding for up to 18 significant digits and decimal exponents
within +-22 (every value `repr` writes for a float64 of magnitude 1e-22..1e22, and every
value in the shared data sets); outside that range the value may be one unit in the last
place off.

"""

from __future__ import annotations

import bz2
import gzip
import os

import numpy as np
from numba import njit

__all__ = ["CSR", "read_libsvm", "parse_libsvm"]

_POW10_OFFSET = 300


def _pow10_table():
    """10^k for k in -300..290 as double-doubles (hi + lo, hi the float64 nearest 10^k).

    Integer true division rounds correctly, so both parts are exact roundings.

    """
    hi, lo = [], []
    for k in range(-_POW10_OFFSET, 291):
        num, den = (10**k, 1) if k >= 0 else (1, 10**-k)
        h = num / den
        a, b = h.as_integer_ratio()
        hi.append(h)
        lo.append((num * b - a * den) / (den * b))
    return np.array(hi), np.array(lo)


_POW10_HI, _POW10_LO = _pow10_table()
_TWO53 = 2**53
_MAX_DIGITS = 18

# Error codes of `_parse`; the message templates name what was expected.
_ERRORS = {
    1: "expected a number",
    2: "expected 'index:value' (an integer index, a colon and a number)",
    3: "negative feature index",
    4: "feature index repeated on the line",
    5: "multi-label and qid lines are not supported",
    6: "value is not finite",
}


@njit(cache=True)
def _two_prod_err(a, b):
    """The rounding error of a * b (Dekker's split product, no FMA needed)."""
    p = a * b
    split = 134217729.0  # 2^27 + 1
    t = split * a
    ahi = t - (t - a)
    alo = a - ahi
    t = split * b
    bhi = t - (t - b)
    blo = b - bhi
    return ((ahi * bhi - p) + ahi * blo + alo * bhi) + alo * blo


@njit(cache=True)
def _scale(m, exp10, pow10_hi, pow10_lo):
    """m * 10^exp10 for an integer mantissa 0 <= m < 10^18, rounded to nearest (see module).

    Exact operands take one correctly rounded operation; otherwise m and 10^exp10 are
    double-doubles and their product is rounded once from about 100 correct bits.

    """
    k = exp10 + _POW10_OFFSET
    if k < 0 or k >= pow10_hi.shape[0]:
        return float(m) * 10.0**exp10
    hi = float(m)
    if m < _TWO53 and -22 <= exp10 <= 22:  # both exact: one correctly rounded operation
        return hi / pow10_hi[_POW10_OFFSET - exp10] if exp10 < 0 else hi * pow10_hi[k]
    lo = float(m - np.int64(hi))  # exact: m < 10^18 and |m - hi| < 2^7
    ph, pl = pow10_hi[k], pow10_lo[k]
    p = hi * ph
    return p + (_two_prod_err(hi, ph) + (hi * pl + lo * ph))


@njit(cache=True)
def _number(buf, i, n, pow10_hi, pow10_lo):
    """Parse a decimal number at buf[i:]; returns (value, next position, ok).

    One loop over the bytes, no calls on the common path: Numba does not inline across
    functions, and a call per byte costs more than the parsing.

    """
    c = np.int64(buf[i]) if i < n else -1
    neg = c == 45  # -
    if c == 43 or c == 45:  # + -
        i += 1
    m = np.int64(0)
    count = 0  # significant digits kept in m
    exp10 = 0
    seen = False
    fraction = False
    exponent = False
    e = 0
    eneg = False
    while i < n:
        c = np.int64(buf[i])
        d = c - 48
        if 0 <= d <= 9:
            if exponent:
                e = min(e * 10 + d, 100000)
            else:
                seen = True
                if count < _MAX_DIGITS:
                    if m > 0 or d > 0:
                        count += 1
                    m = m * 10 + d
                    if fraction:
                        exp10 -= 1
                elif not fraction:
                    exp10 += 1
        elif c == 46 and not fraction and not exponent:  # .
            fraction = True
        elif (c == 101 or c == 69) and seen and not exponent:  # e E
            exponent = True
            i += 1
            c = np.int64(buf[i]) if i < n else -1
            eneg = c == 45
            if c != 43 and c != 45:
                continue
            i += 1
            if i >= n or not 48 <= np.int64(buf[i]) <= 57:
                return 0.0, i, False
            continue
        else:
            break
        i += 1
    if not seen or (exponent and not 48 <= np.int64(buf[i - 1]) <= 57):
        return 0.0, i, False
    exp10 += -e if eneg else e
    value = 0.0 if m == 0 else _scale(m, exp10, pow10_hi, pow10_lo)
    return (-value if neg else value), i, True


@njit(cache=True)
def _at(buf, i, n):
    """The byte at i as int64 (comparing uint8 with int64 is slow in Numba), -1 past the end."""
    return np.int64(buf[i]) if i < n else np.int64(-1)


@njit(cache=True)
def _is_space(c):
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@njit(cache=True)
def _ends_line(c):
    """End of data on a line: end of input, newline or a comment."""
    return c == -1 or c == 10 or c == 35


@njit(cache=True)
def _skip_spaces(buf, i, n):
    while i < n:
        c = np.int64(buf[i])
        if not (c == 32 or c == 9 or c == 13 or c == 11 or c == 12):
            break
        i += 1
    return i


@njit(cache=True)
def _feature(buf, i, n, pow10_hi, pow10_lo):
    """Parse 'index:value' at buf[i:]; returns (index, value, next position, error code)."""
    c = _at(buf, i, n)
    if c == 45:
        return 0, 0.0, i, 3
    if not 48 <= c <= 57:
        return 0, 0.0, i, 5 if c == 113 else 2  # q of qid
    index = np.int64(0)
    digits = 0
    while i < n:
        d = np.int64(buf[i]) - 48
        if not 0 <= d <= 9:
            break
        index = index * 10 + d
        digits += 1
        i += 1
    if digits > 18 or _at(buf, i, n) != 58:  # :
        return 0, 0.0, i, 2
    value, i, ok = _number(buf, i + 1, n, pow10_hi, pow10_lo)
    c = _at(buf, i, n)
    if not ok or not (_is_space(c) or _ends_line(c)):
        return 0, 0.0, i, 2
    if abs(value) == np.inf:
        return 0, 0.0, i, 6
    return index, value, i, 0


@njit(cache=True)
def _parse(buf, max_rows, max_nnz, pow10_hi, pow10_lo):
    """Parse libsvm bytes into (labels, indptr, indices, data, lines, error, error line).

    `max_rows` and `max_nnz` bound the output sizes (newlines + 1 and colons). `lines` holds
    each row's 1-based line number. On a bad line, `error` is an `_ERRORS` code and the arrays
    are partial.

    """
    labels = np.empty(max_rows)
    lines = np.empty(max_rows, np.int64)
    indptr = np.zeros(max_rows + 1, np.int64)
    indices = np.empty(max_nnz, np.int64)
    data = np.empty(max_nnz)
    last_row = np.full(1024, -1, np.int64)  # row that last used each index (duplicate check)
    n = buf.shape[0]
    i = 0
    row = 0
    nnz = 0
    line = 0
    error = 0
    while i < n and error == 0:
        line += 1
        i = _skip_spaces(buf, i, n)
        if not _ends_line(_at(buf, i, n)):
            label, i, ok = _number(buf, i, n, pow10_hi, pow10_lo)
            c = _at(buf, i, n)
            if c == 44 or c == 58:  # , or : after the label
                error = 5
            elif not ok or not (_is_space(c) or _ends_line(c)) or abs(label) == np.inf:
                error = 1
            i = _skip_spaces(buf, i, n)
            while error == 0 and not _ends_line(_at(buf, i, n)):
                index, value, i, error = _feature(buf, i, n, pow10_hi, pow10_lo)
                if error:
                    break
                if index >= last_row.shape[0]:
                    grown = np.full(max(2 * last_row.shape[0], index + 1), -1, np.int64)
                    grown[: last_row.shape[0]] = last_row
                    last_row = grown
                if last_row[index] == row:
                    error = 4
                    break
                last_row[index] = row
                indices[nnz] = index
                data[nnz] = value
                nnz += 1
                i = _skip_spaces(buf, i, n)
            if error == 0:
                labels[row] = label
                lines[row] = line
                row += 1
                indptr[row] = nnz
        while i < n and _at(buf, i, n) != 10:  # the rest of the line: a comment
            i += 1
        i += 1
    if error == 0:
        line = 0
    return labels[:row], indptr[: row + 1], indices[:nnz], data[:nnz], lines[:row], error, line


class CSR:
    """Events as CSR arrays: row i has features ``indices[indptr[i]:indptr[i+1]]`` (int64
    column ids) with values ``data[...]`` (float64) and target ``y[i]``.

    `keys` maps a column id to its feature key (None: the key is the id itself, an int, as in
    a libsvm file); `lines` gives each row's line in its file (for messages), or None.

    """

    def __init__(self, indptr, indices, data, y, keys=None, lines=None):
        self.indptr, self.indices, self.data, self.y = indptr, indices, data, y
        self.keys = keys
        self.lines = lines

    def __len__(self) -> int:
        return len(self.indptr) - 1

    def head(self, n: int) -> CSR:
        """The first `n` rows."""
        if n >= len(self):
            return self
        end = self.indptr[n]
        lines = None if self.lines is None else self.lines[:n]
        return CSR(self.indptr[: n + 1], self.indices[:end], self.data[:end], self.y[:n],
                   self.keys, lines)

    def key(self, column: int):
        return int(column) if self.keys is None else self.keys[column]

    def rows(self):
        """The rows as feature dicts, in order."""
        keys = self.keys
        ind = self.indices.tolist() if keys is None else [keys[j] for j in self.indices.tolist()]
        data = self.data.tolist()
        ptr = self.indptr.tolist()
        for lo, hi in zip(ptr[:-1], ptr[1:]):
            yield dict(zip(ind[lo:hi], data[lo:hi]))


def parse_libsvm(raw: bytes, name: str = "<bytes>") -> CSR:
    """Parse libsvm text into a `CSR` whose `y` holds the labels as float64.

    >>> csr = parse_libsvm(b"+1 1:0.5 3:2\\n-1 2:1e-1 # a comment\\n")
    >>> csr.y, csr.indptr, csr.indices, csr.data
    (array([ 1., -1.]), array([0, 2, 3]), array([1, 3, 2]), array([0.5, 2. , 0.1]))
    >>> parse_libsvm(b"1 1:2\\n1 4:x\\n", "f.svm")
    Traceback (most recent call last):
    ...
    ValueError: f.svm:2: expected 'index:value' (an integer index, a colon and a number)

    """
    buf = np.frombuffer(raw, dtype=np.uint8)
    max_rows = int(np.count_nonzero(buf == 10)) + 1
    max_nnz = int(np.count_nonzero(buf == 58))
    labels, indptr, indices, data, lines, error, line = _parse(buf, max_rows, max_nnz, _POW10_HI, _POW10_LO)
    if error:
        raise ValueError(f"{name}:{line}: {_ERRORS[error]}")
    return CSR(indptr.copy(), indices.copy(), data.copy(), labels.copy(), lines=lines.copy())


def read_libsvm(path) -> CSR:
    """Read a libsvm file (plain, ``.bz2`` or ``.gz``) into a `CSR`; see `parse_libsvm`."""
    path = os.fspath(path)
    opener = {".bz2": bz2.open, ".gz": gzip.open}.get(os.path.splitext(path)[1], open)
    with opener(path, "rb") as f:
        raw = f.read()
    return parse_libsvm(raw, path)
