"""Feature indexing: from dict keys to positions in a numpy weight array.

Every learner in river_pa stores its weights in numpy arrays indexed by integer feature
positions. This module turns the keys of a feature dict into those positions and the values
into a float64 array, validating them on the way:

* `Vocabulary` (the default) gives each new key the next free position. Position 0 is a *sink*:
  features never seen in training map there at prediction time, and its weight stays 0, so
  prediction never mutates the model.
* `Hashing` maps a key to ``crc32(key) mod n_features`` (the hashing trick). The hash is
  computed on a canonical byte encoding of the key, so the same key lands at the same position
  in every process (Python's own `hash` of a `str` is salted per process and is never used).

Both are plain Python objects holding plain dicts: they pickle.

"""

from __future__ import annotations

import abc
import math
import numbers
import struct
import zlib
from itertools import repeat

import numpy as np

from river_pa._core._numba import CRC_TABLE, crc32_segments, mask_positions
from river_pa._core.columns import ColumnTable
from river_pa._core.hashed_csr import number_hashes
from river_pa._core.validation import TooManyFeaturesError, check_value

__all__ = ["FeatureIndex", "Vocabulary", "Hashing", "make_index", "to_values"]

_PACKERS: dict = {}


def _packer(n: int) -> struct.Struct:
    """A cached `struct.Struct` packing n float64 values."""
    packer = _PACKERS.get(n)
    if packer is None:
        if len(_PACKERS) >= 4096:
            _PACKERS.clear()
        packer = _PACKERS[n] = struct.Struct(f"{n}d")
    return packer


def packed_values(x: dict, vals: tuple) -> bytes | np.ndarray:
    """The validated values of `x`, given ``vals = tuple(x.values())``: packed float64 bytes.

    The fast path sums the values in C: a non-number raises there, a complex number or a
    `Decimal` makes the sum a non-real and a NaN or an infinity makes it non-finite. Only then
    is every value checked one by one, to name the culprit (the result is then a float64
    array). The sum must be a real number because `struct` and `math.isfinite` would take a
    numpy complex scalar through its `__float__`, silently dropping the imaginary part. The values are packed by `struct`: several times
    faster than `np.fromiter`, exact (each becomes the float64 `float(value)`), and Numba
    kernels read the bytes in place (`np.frombuffer`).

    """
    try:
        total = sum(vals)
        if (total.__class__ is float or total.__class__ is int
                or isinstance(total, numbers.Real)) and math.isfinite(total):
            return (_PACKERS.get(len(vals)) or _packer(len(vals))).pack(*vals)
    except (TypeError, OverflowError, struct.error):
        pass
    return np.array([check_value(k, v) for k, v in x.items()], dtype=np.float64)


def as_array(val: bytes | np.ndarray) -> np.ndarray:
    """A float64 array of `packed_values` output (read-only when it was bytes)."""
    return np.frombuffer(val) if val.__class__ is bytes else val


def to_values(x: dict) -> np.ndarray:
    """The values of `x` as a (writable) float64 array, in the dict's order, validated.

    >>> to_values({"a": 1, "b": True, "c": 2.5})
    array([1. , 1. , 2.5])

    """
    val = packed_values(x, tuple(x.values()))
    return np.frombuffer(val).copy() if val.__class__ is bytes else val


class FeatureIndex(abc.ABC):
    """Maps feature keys to integer positions.

    `lookup` never changes the index (for prediction); `insert` may (for learning).
    `size` is the number of positions a weight array must have.

    """

    size: int

    @abc.abstractmethod
    def lookup(self, keys: tuple) -> np.ndarray:
        """Positions of `keys` (int64, one per key), without changing the index."""

    @abc.abstractmethod
    def insert(self, keys: tuple) -> np.ndarray:
        """Positions of `keys`, giving new keys a position first."""

    def n_unseen(self, idx: np.ndarray) -> int:
        """How many positions in `idx` are the sink of keys never seen by `insert`."""
        return 0

    def room(self, keys: tuple) -> int:
        """How many positions `insert(keys)` will add (the keys never seen; distinct keys)."""
        return 0

    def check_room(self, n_new: int) -> None:
        """Raise `TooManyFeaturesError` if `n_new` more positions would pass the bound."""

    def insert_unseen(self, keys: tuple, pos: np.ndarray) -> np.ndarray:
        """`insert(keys)`, given their positions `pos` from `lookup(keys)`."""
        return self.insert(keys)

    def insert_unique(self, keys: tuple) -> tuple[np.ndarray, bool]:
        """`insert(keys)` and whether two of the keys share a position (a hash collision)."""
        return self.insert(keys), False

    def lookup_unique(self, keys: tuple) -> tuple[np.ndarray, bool]:
        """`lookup(keys)` and whether two of the keys share a position (a hash collision)."""
        return self.lookup(keys), False


class Vocabulary(FeatureIndex):
    """A growable vocabulary: each new key gets the next position; position 0 is the sink.

    It holds at most `max_keys` keys (2**20 by default: a class attribute, so an instance can
    lower or raise it, e.g. ``v.max_keys = 10``): an `insert` that would pass it raises
    `river_pa._core.validation.TooManyFeaturesError` (a ValueError) and changes nothing, so
    whoever writes the events cannot grow memory without limit (use ``n_features``, hashing,
    for untrusted feature names).

    >>> v = Vocabulary()
    >>> v.insert(("a", "b"))
    array([1, 2])
    >>> v.lookup(("b", "c"))
    array([2, 0])
    >>> v.size
    3
    >>> v.max_keys = 3
    >>> v.insert(("b", "c", "d"))
    Traceback (most recent call last):
    ...
    river_pa._core.validation.TooManyFeaturesError: 2 new feature keys would take the vocabulary past max_keys=3 (it holds 2)
    >>> v.size
    3

    """

    max_keys: int = 2**20

    def __init__(self):
        self.positions: dict = {}

    @property
    def size(self) -> int:
        return len(self.positions) + 1

    def lookup(self, keys):
        # a list first: 0.7-0.8x the time of `np.fromiter` on the map (measured, issue 18)
        return np.array(list(map(self.positions.get, keys, repeat(0))), dtype=np.int64)

    def insert(self, keys):
        positions = self.positions
        if len(positions) + len(keys) > self.max_keys:  # rare: count the new keys exactly
            self.check_room(self.room(keys))
        add = positions.setdefault  # one dict probe per key: 1.5-2.5x faster than `in` + `[]`
        return np.fromiter([add(key, len(positions) + 1) for key in keys], np.int64, len(keys))

    def insert_unseen(self, keys, pos):
        """`insert(keys)` with a dict write only for the keys at the sink in `pos` (their
        `lookup`), not a probe per key: on a text stream most events bring a few new keys.

        >>> v = Vocabulary()
        >>> v.insert_unseen(("a", "b"), v.lookup(("a", "b")))
        array([1, 2])
        >>> v.insert_unseen(("b", "c", "a"), v.lookup(("b", "c", "a")))
        array([2, 3, 1])

        """
        positions = self.positions
        if len(positions) + len(keys) > self.max_keys:
            self.check_room(len(pos) - np.count_nonzero(pos))
        out = pos.tolist()
        for j, p in enumerate(out):
            if not p:  # a dict holds each key once, so each sink key is new and distinct
                out[j] = positions[keys[j]] = len(positions) + 1
        return np.array(out, dtype=np.int64)

    def n_unseen(self, idx):
        return len(idx) - np.count_nonzero(idx)  # 3x faster than (idx == 0).sum() on short arrays

    def room(self, keys):
        return len(keys) - sum(map(self.positions.__contains__, keys))  # exact: the new keys

    def check_room(self, n_new):
        if len(self.positions) + n_new > self.max_keys:
            raise TooManyFeaturesError(
                f"{n_new} new feature keys would take the vocabulary past "
                f"max_keys={self.max_keys} (it holds {len(self.positions)})")

    def keys(self):
        """Keys in position order (position 1 first)."""
        return list(self.positions)

    def __getstate__(self):
        return {"positions": self.positions}  # the column table is a cache, not state

    def column_positions(self, columns, used: np.ndarray, learn: bool, grow=None) -> np.ndarray:
        """Positions of the keys ``columns[j]`` of the distinct column numbers `used` (int64),
        as `insert` (with `learn`, after ``grow(size)``) or `lookup` of those keys would give.

        An array batch names its features once (`columns`: a tuple, a pandas Index or
        ``range(d)``, all immutable); each batch then looks the vocabulary up only for the
        columns it has not met yet, through a table from column number to position kept for
        the last `columns` object (by identity; any ``range(d)`` is the column numbers).
        Written by hand: a dict probe per column and batch (~1 us with 2^18 keys, 28k per
        sparse batch of 1,024) made `learn_many` 0.05-0.47x scikit-learn. Positions never
        change once given, so the table is exact; a lookup's unseen keys (the sink, 0) are
        not kept. The table (`columns.ColumnTable`) costs memory of the columns met, not of
        the width: a batch of 2^40 columns is as cheap as one of 2^18 with the same entries.
        Raises ValueError if `columns` names a key twice (checked once per table).

        >>> v = Vocabulary()
        >>> cols = ("a", "b", "c")
        >>> v.column_positions(cols, np.array([2, 0]), learn=True, grow=lambda size: None)
        array([1, 2])
        >>> v.column_positions(cols, np.array([1, 2]), learn=False)
        array([0, 1])

        """
        table = self._column_table(columns)
        pos = table.get(used)
        missing = np.flatnonzero(pos == 0)
        if len(missing):
            keys = tuple(map(columns.__getitem__, used[missing].tolist()))
            if learn:
                n_new = self.room(keys)
                self.check_room(n_new)  # past max_keys, or a MemoryError: nothing changes
                grow(self.size + n_new)
                found = self.insert(keys)
            else:
                found = self.lookup(keys)
            pos[missing] = found
            met = found != 0
            table.put(used[missing][met], found[met])
        return pos

    def _column_table(self, columns) -> ColumnTable:
        numbers = isinstance(columns, range)
        cached = self.__dict__.get("_table")
        if cached is not None and (cached[0] is columns
                                   or numbers and isinstance(cached[0], str)):
            return cached[1]
        if not numbers and len(set(columns)) < len(columns):
            raise ValueError("columns must not name a feature twice")
        self._table = ("numbers" if numbers else columns, ColumnTable())
        return self._table[1]


def cached_columns(columns) -> bool:
    """Whether `Vocabulary.column_positions` may keep a table for `columns`: an immutable
    sequence (a tuple, a pandas Index, ``range(d)`` from 0 by 1)."""
    if isinstance(columns, range):
        return columns.start == 0 and columns.step == 1
    return isinstance(columns, tuple) or type(columns).__module__.startswith("pandas")


def _canonical(key):
    """`key` with its numbers (and str subclasses) as plain int, float or str, in tuples too.

    Keys that are equal are one dict key (``{1: a, 1.0: b, True: c}`` has one entry), so a
    `Vocabulary` gives them one position; their `repr` differ (``1``, ``1.0``, ``True``,
    ``np.int64(1)``), so the hash must not see it. An integral float becomes an int.

    """
    cls = key.__class__
    if cls is str or cls is int:
        return key
    if isinstance(key, str):
        return str(key)
    if isinstance(key, tuple):
        return tuple(map(_canonical, key))
    if isinstance(key, numbers.Integral | np.bool_):
        return int(key)
    if isinstance(key, numbers.Real):
        value = float(key)
        return int(value) if value.is_integer() else value
    return key


def canonical_order(key) -> tuple:
    """A sort key of `key` that is the same in every process: its type's name and the `repr`
    of its canonical form (see `_canonical`)."""
    return type(key).__qualname__, repr(_canonical(key))


def stable_hash(key) -> int:
    """A 32-bit hash of `key` that is the same in every process.

    A `str` is hashed from its UTF-8 bytes; any other key from a NUL byte followed by the
    `repr` of its canonical form (see `_canonical`), so the string ``"1"`` and the integer
    ``1`` differ but keys that are equal, such as ``1``, ``1.0``, ``True`` and
    ``np.int64(1)``, do not.

    >>> stable_hash("user=42")
    1629494019
    >>> stable_hash(("a", 1)) == stable_hash(("a", 1.0)) == stable_hash(("a", True))
    True

    """
    if isinstance(key, str):
        return zlib.crc32(key.encode("utf-8"))
    return zlib.crc32(b"\x00" + repr(_canonical(key)).encode("utf-8"))


MAX_FEATURES = 2**26


class Hashing(FeatureIndex):
    """The hashing trick over `n_features` positions (a power of two).

    Two keys of one event may collide; callers merge them (see `merge_duplicates`) so that the
    event is the hashed vector, whose squared norm is what the PA step uses. Positions are
    computed afresh for every key tuple: a CRC-32 of a short key costs less than a lookup in a
    large cache dict (memory-bound), and keeps the object as small as its parameters.

    >>> h = Hashing(2**4)
    >>> h.lookup(("user=42",))
    array([3])

    """

    def __init__(self, n_features: int):
        if (not isinstance(n_features, numbers.Integral) or isinstance(n_features, bool)
                or n_features < 1 or n_features & (n_features - 1)):
            raise ValueError(f"n_features must be a positive power of two, got {n_features!r}")
        self.n_features = n_features

    @property
    def size(self) -> int:
        return self.n_features

    def lookup_unique(self, keys):
        n = len(keys)
        try:  # all keys str (the common case): CRC-32 of the UTF-8 bytes, as stable_hash does
            joined = "\x00".join(keys)
            if n and joined.isascii() and joined.count("\x00") == n - 1:
                idx = np.empty(n, dtype=np.int64)  # one Numba pass over all the keys' bytes
                crc32_segments(joined.encode("ascii"), CRC_TABLE, idx)
            else:
                idx = np.fromiter(map(zlib.crc32, map(str.encode, keys)), np.int64, n)
        except TypeError:
            idx = np.fromiter(map(stable_hash, keys), np.int64, n)
        return idx, mask_positions(idx, self.n_features - 1)

    def lookup(self, keys):
        return self.lookup_unique(keys)[0]

    insert = lookup
    insert_unique = lookup_unique

    def numbers_unique(self, used: np.ndarray) -> tuple[np.ndarray, bool]:
        """`lookup_unique` of the column numbers `used` (int64 >= 0), hashed compiled."""
        idx = number_hashes(used)
        return idx, mask_positions(idx, self.n_features - 1)

    def column_positions(self, columns, used: np.ndarray) -> np.ndarray | None:
        """Positions of the keys ``columns[j]`` (a tuple or pandas Index of names) of the
        distinct column numbers `used`, through a table kept for the last `columns`, as
        `Vocabulary.column_positions` (a key's CRC-32 once per column, not per batch), or
        None when `columns` names a key twice (the caller then checks the keys of each batch).

        >>> h = Hashing(2**4)
        >>> h.column_positions(("a", "user=42"), np.array([1])), h.lookup(("user=42",))
        (array([3]), array([3]))

        """
        cached = self.__dict__.get("_table")
        if cached is None or cached[0] is not columns:
            unique = len(set(columns)) == len(columns)
            cached = self._table = (columns, ColumnTable() if unique else None)
        table = cached[1]
        if table is None:
            return None
        pos = table.get(used) - 1  # the table holds position + 1: 0 is a position here
        missing = np.flatnonzero(pos < 0)
        if len(missing):
            found = self.lookup(tuple(map(columns.__getitem__, used[missing].tolist())))
            pos[missing] = found
            table.put(used[missing], found + 1)
        return pos

    def __getstate__(self):
        return {"n_features": self.n_features}  # the column table is a cache, not state


def merge_duplicates(idx: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum the values of repeated positions (hash collisions within one event).

    >>> merge_duplicates(np.array([3, 1, 3]), np.array([1.0, 2.0, 4.0]))
    (array([3, 1]), array([5., 2.]))

    """
    uniq, first, inverse = np.unique(idx, return_index=True, return_inverse=True)
    sums = np.bincount(inverse, weights=values, minlength=len(uniq))
    order = np.argsort(first)
    return uniq[order], sums[order]


def make_index(n_features: int | None) -> FeatureIndex:
    """A `Vocabulary` when `n_features` is None, else `Hashing(n_features)`: the index of a
    learner, so `n_features` is at most `MAX_FEATURES` = 2^26.

    The bound keeps a model's arrays sane: learners allocate their hashed arrays whole, one
    float64 array of 2^26 positions is 512 MiB (a multiclass learner holds one per class), and
    2^26 buckets already make collisions rare for millions of distinct keys. Past it
    ``n_features=2**30`` silently reserved 8 GiB and ``2**40`` died in numpy's
    `_ArrayMemoryError`; both are now a ValueError naming the parameter.

    >>> make_index(2**30)
    Traceback (most recent call last):
    ...
    ValueError: n_features must be at most 2**26 = 67108864 (512 MiB per weight array), got 1073741824

    """
    if n_features is None:
        return Vocabulary()
    index = Hashing(n_features)
    if n_features > MAX_FEATURES:
        raise ValueError(f"n_features must be at most 2**26 = {MAX_FEATURES} (512 MiB per "
                         f"weight array), got {n_features!r}")
    return index
