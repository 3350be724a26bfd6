"""What the readers of `river-pa evaluate` share: `DataError`, files opened through their
compression (`open_data`), and events as CSR arrays (`CSR`, `concatenate`).

"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os

import numpy as np

__all__ = ["COMPRESSED", "CSR", "DataError", "concatenate", "open_data"]


class DataError(ValueError):
    """A data file that cannot be read as its format says, naming the file (and the line)."""


def _zstd_open(path, mode, **text):
    try:
        import zstandard
    except ImportError:  # `path` may be the open file: name the file
        raise DataError(f"{getattr(path, 'name', path)}: reading .zst needs the zstandard "
                        "package (pip install 'river-pa[zstd]')") from None
    return zstandard.open(path, mode, **text)


_OPENERS = {".bz2": bz2.open, ".gz": gzip.open, ".xz": lzma.open, ".zst": _zstd_open}
COMPRESSED = tuple(_OPENERS)


def open_data(path, mode: str = "rb", raw=None):
    """Open a file, decompressing ``.bz2``, ``.gz``, ``.xz`` and ``.zst`` as it is read (the
    standard library's and zstandard's streaming decompressors). With `raw`, an open binary
    file of `path`, decompress from it (its ``tell()`` then counts the compressed bytes read)."""
    text = {"encoding": "utf-8"} if "t" in mode else {}
    opener = _OPENERS.get(os.path.splitext(os.fspath(path))[1])
    if opener is None:
        if raw is None:
            return open(path, mode, **text)
        return io.TextIOWrapper(raw, **text) if text else raw
    return opener(path if raw is None else raw, mode, **text)


class CSR:
    """Events as CSR arrays: row i has features ``indices[indptr[i]:indptr[i+1]]`` (int64
    column ids) with values ``data[...]`` (float64) and target ``y[i]``.

    `keys` maps a column id to its feature key (None: the key is the id itself, an int, as in
    a libsvm file).

    """

    def __init__(self, indptr, indices, data, y, keys=None):
        self.indptr, self.indices, self.data, self.y = indptr, indices, data, y
        self.keys = keys

    def __len__(self) -> int:
        return len(self.indptr) - 1

    def head(self, n: int) -> CSR:
        """The first `n` rows."""
        if n >= len(self):
            return self
        end = self.indptr[n]
        return CSR(self.indptr[: n + 1], self.indices[:end], self.data[:end], self.y[:n],
                   self.keys)

    def rows(self):
        """The rows as feature dicts, in order."""
        keys = self.keys
        ind = self.indices.tolist() if keys is None else [keys[j] for j in self.indices.tolist()]
        data = self.data.tolist()
        ptr = self.indptr.tolist()
        for lo, hi in zip(ptr[:-1], ptr[1:]):
            yield dict(zip(ind[lo:hi], data[lo:hi]))


def concatenate(chunks: list) -> CSR:
    """One `CSR` of the rows of `chunks`, in order (the keys of the first)."""
    ends = np.cumsum([0] + [len(c.indices) for c in chunks])
    indptr = np.concatenate([chunks[0].indptr[:1]] + [c.indptr[1:] + e for c, e in
                                                      zip(chunks, ends)])
    return CSR(indptr, np.concatenate([c.indices for c in chunks]),
               np.concatenate([c.data for c in chunks]), np.concatenate([c.y for c in chunks]),
               chunks[0].keys)
