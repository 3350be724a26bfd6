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
import zlib
from itertools import repeat

import numpy as np

__all__ = ["FeatureIndex", "Vocabulary", "Hashing", "make_index", "to_values", "check_value"]

_HASH_CACHE_LIMIT = 1 << 20


def check_value(key, value) -> float:
    """Return `value` as a float, or raise an error naming the feature.

    Raises
    ------
    TypeError
        If the value is not a real number (int, float, bool or a numpy real scalar).
    ValueError
        If the value is NaN or infinite.

    >>> check_value("age", 3)
    3.0
    >>> check_value("age", "3")
    Traceback (most recent call last):
    ...
    TypeError: feature 'age' has a non-numeric value '3' of type str
    >>> check_value("age", float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: feature 'age' has a non-finite value nan

    """
    if not isinstance(value, numbers.Real | np.bool_):
        raise TypeError(
            f"feature {key!r} has a non-numeric value {value!r} of type {type(value).__name__}"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"feature {key!r} has a non-finite value {value!r}")
    return value


def to_values(x: dict) -> np.ndarray:
    """The values of `x` as a float64 array, in the dict's order, validated.

    The fast path sums the values in C: a non-number raises there and a NaN or an infinity
    makes the sum non-finite. Only then is every value checked one by one, to name the culprit.

    >>> to_values({"a": 1, "b": True, "c": 2.5})
    array([1. , 1. , 2.5])

    """
    try:
        if math.isfinite(sum(x.values())):
            return np.fromiter(x.values(), np.float64, len(x))
    except (TypeError, OverflowError):
        pass
    return np.array([check_value(k, v) for k, v in x.items()], dtype=np.float64)


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

    def known(self, idx: np.ndarray) -> bool:
        """Whether every position in `idx` belongs to a key seen by `insert`."""
        return True


class Vocabulary(FeatureIndex):
    """A growable vocabulary: each new key gets the next position; position 0 is the sink.

    >>> v = Vocabulary()
    >>> v.insert(("a", "b"))
    array([1, 2])
    >>> v.lookup(("b", "c"))
    array([2, 0])
    >>> v.size
    3

    """

    def __init__(self):
        self.positions: dict = {}

    @property
    def size(self) -> int:
        return len(self.positions) + 1

    def lookup(self, keys):
        return np.fromiter(map(self.positions.get, keys, repeat(0)), np.int64, len(keys))

    def insert(self, keys):
        positions = self.positions
        for key in keys:
            if key not in positions:
                positions[key] = len(positions) + 1
        return np.fromiter(map(positions.__getitem__, keys), np.int64, len(keys))

    def known(self, idx):
        return bool(idx.all())

    def keys(self):
        """Keys in position order (position 1 first)."""
        return list(self.positions)


def stable_hash(key) -> int:
    """A 32-bit hash of `key` that is the same in every process.

    A `str` is hashed from its UTF-8 bytes; any other key from a NUL byte followed by its
    `repr`, so the string ``"1"`` and the integer ``1`` differ.

    >>> stable_hash("user=42")
    1629494019
    >>> stable_hash(("a", 1)) == stable_hash(("a", 1))
    True

    """
    data = key.encode("utf-8") if isinstance(key, str) else b"\x00" + repr(key).encode("utf-8")
    return zlib.crc32(data)


class Hashing(FeatureIndex):
    """The hashing trick over `n_features` positions (a power of two).

    Two keys of one event may collide; callers merge them (see `merge_duplicates`) so that the
    event is the hashed vector, whose squared norm is what the PA step uses.

    >>> h = Hashing(2**4)
    >>> h.lookup(("user=42",))
    array([3])

    """

    def __init__(self, n_features: int):
        if n_features < 1 or n_features & (n_features - 1):
            raise ValueError(f"n_features must be a positive power of two, got {n_features!r}")
        self.n_features = n_features
        self._cache: dict = {}

    @property
    def size(self) -> int:
        return self.n_features

    def _position(self, key) -> int:
        cache = self._cache
        if len(cache) >= _HASH_CACHE_LIMIT:
            cache.clear()
        pos = cache[key] = stable_hash(key) & (self.n_features - 1)
        return pos

    def lookup(self, keys):
        cache = self._cache
        idx = list(map(cache.get, keys))
        if None in idx:
            idx = [self._position(k) if p is None else p for k, p in zip(keys, idx)]
        return np.array(idx, dtype=np.int64)

    insert = lookup

    def __getstate__(self):
        return {"n_features": self.n_features, "_cache": {}}


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
    """A `Vocabulary` when `n_features` is None, else `Hashing(n_features)`."""
    return Vocabulary() if n_features is None else Hashing(n_features)
