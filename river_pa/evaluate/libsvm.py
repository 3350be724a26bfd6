"""A libsvm/svmlight file reader: bounded chunks of the file's bytes, each parsed by one Numba
pass into CSR arrays.

`iter_libsvm(path)` streams a file (plain, ``.gz``, ``.bz2``, ``.xz``, or ``.zst`` with the
`zstandard` package) in chunks of about `CHUNK_BYTES` decompressed bytes cut at line ends, so
memory does not grow with the file; `read_libsvm` concatenates the chunks.

Format: one event a line, ``label index:value index:value ...``; ``#`` starts a comment; blank
lines are skipped. Indices are integers in 0..2^31-1 (0- or 1-based, kept as written, so
feature keys match the file, as in LIBSVM and svmlight, whose indices are C ints); each index
appears at most once a line. A line is at most `MAX_LINE_BYTES` long. Labels and values are
decimal numbers (``+1``, ``-0.5``, ``1e-3``). Multi-label (``1,2``) and ``qid:`` lines are
rejected. A bad line raises ValueError naming the file and the line number.

Numbers: the first 18 significant digits are kept (`repr` writes at most 17). A mantissa
below 2^53 with a decimal exponent within +-22 takes one correctly rounded operation; any
other number is the double-double product of its mantissa and 10^exponent (from exact
tables for 1e-300..1e290), rounded once from about 100 correct bits, which matches Python's
`float` except for decimals within ~2^-100 of a halfway point between two floats. Tests
compare with `float` on 10,000 numbers (random, 1e-40 to 1e40, three formats) and with
scikit-learn's reader on the shared files.

"""

from __future__ import annotations

import itertools
import os

import numpy as np
from numba import njit

from river_pa.evaluate.files import CSR, DataError, concatenate, open_data

__all__ = ["iter_libsvm", "parse_libsvm", "read_libsvm"]

CHUNK_BYTES = 1 << 22  # decompressed bytes parsed per call: 4 MiB, a few ms of parsing
MAX_LINE_BYTES = 1 << 26  # 64 MiB: a longer "line" is refused, not accumulated
MAX_INDEX = 2**31 - 1
_DENSE_INDEX = 1 << 21  # indices below: duplicate check by table; above: within the line


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
_MANTISSA_LIMIT = 10**17  # m < 10^17 takes one more digit: m < 10^18 < 2^63

# Error codes of `_parse`; the message templates name what was expected.
_ERRORS = {
    1: "expected a number",
    2: "expected 'index:value' (an integer index, a colon and a number)",
    3: "negative feature index",
    4: "feature index repeated on the line",
    5: "multi-label and qid lines are not supported",
    6: "value is not finite",
    7: "a line must start with its label",
    8: f"feature index beyond the supported range 0..{MAX_INDEX}",
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
def _scale_hard(m, exp10, ph, pl):
    """m * 10^exp10 from m < 10^18 and 10^exp10 = ph + pl (a double-double), rounded once
    from about 100 correct bits. Scalars only: array arguments make a call cost ~30 ns."""
    hi = float(m)
    lo = float(m - np.int64(hi))  # exact: m < 10^18 and |m - hi| < 2^7
    p = hi * ph
    return p + (_two_prod_err(hi, ph) + (hi * pl + lo * ph))


@njit(cache=True, nogil=True)
def _count_lines_and_colons(buf):
    """(newlines, colons) in `buf`: bounds on the rows and features `_parse` will find."""
    newlines = 0
    colons = 0
    for j in range(buf.shape[0]):
        c = np.int64(buf[j])
        newlines += c == 10
        colons += c == 58
    return newlines, colons


@njit(cache=True, nogil=True)
def _parse(buf, max_rows, max_nnz, pow10_hi, pow10_lo):
    """Parse libsvm bytes into (labels, indptr, indices, data, error, error line).

    `max_rows` and `max_nnz` bound the output sizes (newlines + 1 and colons). On a bad line,
    `error` is an `_ERRORS` code, the line is 1-based and the arrays are partial.

    One loop with the number parser written once, inline: Numba does not inline across
    functions, and a call per token costs more than parsing it. A token is a number (the
    label, first on a line) or ``index:number``. Bytes are read as int64 (comparing uint8 with
    int64 literals is slow in Numba).

    """
    labels = np.empty(max_rows)
    indptr = np.zeros(max_rows + 1, np.int64)
    indices = np.empty(max_nnz, np.int64)
    data = np.empty(max_nnz)
    last_row = np.full(1024, -1, np.int64)  # row that last used each index (duplicate check)
    row_start = 0  # first entry of the current row
    n = buf.shape[0]
    i = 0
    row = 0
    nnz = 0
    line = 0
    error = 0
    while i < n and error == 0:
        line += 1
        token = 0  # tokens read on this line
        label = 0.0
        while error == 0:
            c = np.int64(buf[i]) if i < n else -1
            while c == 32 or c == 9 or c == 13 or c == 11 or c == 12:  # spaces
                i += 1
                c = np.int64(buf[i]) if i < n else -1
            if c == -1 or c == 10 or c == 35:  # end of the line's data
                break
            index = np.int64(0)
            if token > 0:  # index:
                if c == 45:
                    error = 3
                    break
                digits = 0
                while 48 <= c <= 57:
                    index = index * 10 + (c - 48)
                    digits += 1
                    i += 1
                    c = np.int64(buf[i]) if i < n else -1
                if digits == 0:
                    error = 5 if c == 113 else 2  # q of qid
                    break
                if digits > 10 or index > 2147483647:  # MAX_INDEX
                    error = 8
                    break
                if c != 58:
                    error = 2
                    break
                i += 1
                c = np.int64(buf[i]) if i < n else -1
            # a decimal number: sign, digits, fraction, exponent
            neg = c == 45
            if c == 43 or c == 45:
                i += 1
                c = np.int64(buf[i]) if i < n else -1
            m = np.int64(0)
            exp10 = 0
            seen = False
            fraction = False  # after the decimal point
            while True:
                if 48 <= c <= 57:
                    seen = True
                    if m < _MANTISSA_LIMIT:  # keep 18 significant digits
                        m = m * 10 + (c - 48)
                        exp10 -= fraction
                    elif not fraction:
                        exp10 += 1
                elif c == 46 and not fraction:  # .
                    fraction = True
                else:
                    break
                i += 1
                c = np.int64(buf[i]) if i < n else -1
            if seen and (c == 101 or c == 69):  # e E
                i += 1
                c = np.int64(buf[i]) if i < n else -1
                eneg = c == 45
                if c == 43 or c == 45:
                    i += 1
                    c = np.int64(buf[i]) if i < n else -1
                seen = 48 <= c <= 57
                e = 0
                while 48 <= c <= 57:
                    e = min(e * 10 + (c - 48), 100000)
                    i += 1
                    c = np.int64(buf[i]) if i < n else -1
                exp10 += -e if eneg else e
            ends = c == 32 or c == 9 or c == 13 or c == 11 or c == 12 or c == -1 or c == 10
            if not seen and (c == 110 or c == 78 or c == 105 or c == 73):  # nan, inf: n N i I
                error = 6 if token else 1
                break
            if not seen or not (ends or c == 35):
                error = (5 if c == 44 else 7 if c == 58 else 1) if token == 0 else 2
                break
            value = 0.0
            if m != 0:
                k = exp10 + _POW10_OFFSET
                if m < _TWO53 and -22 <= exp10 <= 22:  # exact operands: one rounding
                    if exp10 < 0:
                        value = float(m) / pow10_hi[_POW10_OFFSET - exp10]
                    else:
                        value = float(m) * pow10_hi[k]
                elif 0 <= k < pow10_hi.shape[0]:
                    value = _scale_hard(m, exp10, pow10_hi[k], pow10_lo[k])
                else:
                    value = float(m) * 10.0**exp10
            if neg:
                value = -value
            if abs(value) == np.inf:
                error = 6 if token else 1
                break
            if token == 0:
                label = value
            elif index >= 2097152:  # _DENSE_INDEX: compare with the line's other entries
                for k in range(row_start, nnz):
                    if indices[k] == index:
                        error = 4
                if error:
                    break
                indices[nnz] = index
                data[nnz] = value
                nnz += 1
            else:
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
            token += 1
        if error == 0 and token > 0:
            labels[row] = label
            row += 1
            indptr[row] = nnz
            row_start = nnz
        while i < n and buf[i] != 10:  # the rest of the line: a comment
            i += 1
        i += 1
    if error == 0:
        line = 0
    return labels[:row], indptr[: row + 1], indices[:nnz], data[:nnz], error, line


def _parse_raw(raw) -> tuple:
    """`_parse` of a buffer's bytes and the newlines in it; releases the GIL (nogil), so a
    thread can parse the next chunk while the caller learns from this one."""
    buf = np.frombuffer(raw, dtype=np.uint8)
    newlines, colons = _count_lines_and_colons(buf)
    return _parse(buf, newlines + 1, colons, _POW10_HI, _POW10_LO), newlines


def _as_csr(parsed: tuple, name: str, first_line: int) -> CSR:
    """The CSR of `_parse`'s output; DataError naming the bad line."""
    labels, indptr, indices, data, error, line = parsed
    if error:
        raise DataError(f"{name}:{first_line + line - 1}: {_ERRORS[error]}")
    return CSR(indptr, indices, data, labels)


def parse_libsvm(raw, name: str = "<bytes>", first_line: int = 1) -> CSR:
    """Parse libsvm text (bytes or any buffer) into a `CSR` whose `y` holds the labels as
    float64; `first_line` numbers the first line in error messages (DataError).

    >>> csr = parse_libsvm(b"+1 1:0.5 3:2\\n-1 2:1e-1 # a comment\\n")
    >>> csr.y, csr.indptr, csr.indices, csr.data
    (array([ 1., -1.]), array([0, 2, 3]), array([1, 3, 2]), array([0.5, 2. , 0.1]))
    >>> parse_libsvm(b"1 1:2\\n1 4:x\\n", "f.svm")
    Traceback (most recent call last):
    ...
    river_pa.evaluate.files.DataError: f.svm:2: expected 'index:value' (an integer index, a colon and a number)

    """
    return _as_csr(_parse_raw(raw)[0], name, first_line)


def iter_libsvm(path, chunk_bytes: int | None = None, raw=None):
    """The events of a libsvm file as a sequence of `CSR` chunks of about `chunk_bytes`
    (default `CHUNK_BYTES`) decompressed bytes each, cut at line ends; memory is bounded by
    the chunk, not the file. With `raw`, an open binary file of `path`, read from it.

    One thread parses the next chunk while the caller uses this one (as Vowpal Wabbit's
    parser thread does): at most two chunks and their arrays are held. DataError names the
    file and line of a bad line, or of one longer than `MAX_LINE_BYTES`.

    """
    from concurrent.futures import ThreadPoolExecutor

    path = os.fspath(path)
    line = 1
    pending = None
    with open_data(path, "rb", raw) as f, ThreadPoolExecutor(1) as pool:
        for text in itertools.chain(_texts(f, chunk_bytes or CHUNK_BYTES), [b""]):  # b"": end
            future = pool.submit(_parse_raw, text) if text else None
            if pending is not None:
                parsed, newlines = pending.result()
                csr = _as_csr(parsed, path, line)
                line += newlines
                if len(csr):
                    yield csr
            if text is None:
                raise DataError(f"{path}:{line}: line longer than {MAX_LINE_BYTES} bytes")
            pending = future


def _texts(f, chunk_bytes: int):
    """The bytes of `f` in pieces of about `chunk_bytes` cut after a line end (the last piece
    as it ends); None, then nothing, where a line is longer than `MAX_LINE_BYTES`."""
    carry = b""
    while block := f.read(chunk_bytes):
        cut = block.rfind(b"\n")
        if cut < 0:  # no line end in this block: grow the carried line, within bounds
            carry += block
            if len(carry) > MAX_LINE_BYTES:
                yield None
                return
            continue
        text = memoryview(block)[: cut + 1]  # no copy of the block
        yield carry + text if carry else text
        carry = block[cut + 1 :]
    if carry:
        yield carry


def read_libsvm(path) -> CSR:
    """Read a whole libsvm file into one `CSR` (see `iter_libsvm`)."""
    chunks = list(iter_libsvm(path))
    if not chunks:
        return CSR(np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    return concatenate(chunks)


