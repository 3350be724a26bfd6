"""Caches that live beside a learner's state but never in its pickles."""

from __future__ import annotations

import copy

import numpy as np

from river_pa._core.categorical import one_hot, one_hot_plain
from river_pa._core.features import as_array, merge_duplicates, packed_values
from river_pa._core.validation import check_x


class DeepCopy:
    """Mixin of every learner: `copy.copy` copies deeply. A shallow copy would share the
    feature index and the arrays sized by it, and once one copy grew them the other's kernels
    would index past its own arrays (a crash). River's `clone()` gives a fresh model of the
    same parameters."""

    def __copy__(self):
        return copy.deepcopy(self)


class TransientCache(DeepCopy):
    """Mixin: the attributes named in `_TRANSIENT` are caches of the last event.

    They are left out of pickles (so a pickle holds the model, not what it last saw, and
    River's byte-comparing checks see predictions as pure) and rebuilt empty by `_clear_cache`
    after loading. Subclasses with caches of other defaults than None override `_clear_cache`.

    """

    _TRANSIENT: tuple[str, ...] = ()

    def _clear_cache(self):
        for name in self._TRANSIENT:
            setattr(self, name, None)

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in self._TRANSIENT:
            state.pop(name, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._clear_cache()


class EventCache(TransientCache):
    """Mixin: the last event a learner saw, converted, validated and scored once.

    A learner holds `_index` (a `river_pa._core.features.FeatureIndex`) and `_version` (bumped
    whenever a change of the model changes what `_on_event` computes), and defines
    `_grow(size)` (room for `size` feature positions; it must either succeed or leave the state
    as it was, e.g. on MemoryError) and `_on_event(pos, val)`, its view of an event
    (margin, scores, ...: it stores what it needs in its own transient attributes, and may
    raise to refuse the event).

    `_event(x)` keeps, for the last event: the positions of its key tuple (looked up once per
    new key tuple: fixed-schema streams repeat it), its values (validated; packed float64 bytes
    when `_PACKED`, which the linear kernels read in place, else a float64 array) with the
    positions `_epos` they go with (values of keys sharing a hashed position summed), and
    `_on_event`'s view, recomputed only when the values or the model change. So
    ``predict_one(x)`` then ``learn_one(x, y)`` converts and scores `x` once. `_n_unseen` counts
    the keys never learned (at the sink, position 0, of weight 0). With `learn`, those keys get
    positions, after validation, so a refused event leaves the model unchanged.

    With `categorical` (a constructor parameter of the learners that take it, False here), a
    string value is first made a one-hot feature (`river_pa._core.categorical.one_hot`); the
    encoding of the last event of plain values (str, float, int) is kept with its items, so
    ``predict_one(x)`` then ``learn_one(x, y)`` encodes `x` once.

    """

    categorical = False
    _PACKED = False
    _TRANSIENT = ("_keys", "_pos", "_dups", "_n_unseen", "_vals", "_epos", "_val",
                  "_version_seen", "_onehot_items", "_onehot")

    def _clear_cache(self):
        self._keys = self._vals = self._pos = self._epos = self._val = None
        self._onehot_items = self._onehot = None
        self._dups = False
        self._n_unseen = 0
        self._version_seen = -1

    def _event(self, x: dict, learn: bool = False) -> None:
        if x.__class__ is not dict:
            check_x(x)
        if self.categorical:
            x = self._one_hot(x)
        keys = tuple(x)
        try:
            same = keys == self._keys
        except (TypeError, ValueError):  # a numpy key against a tuple key: an array, no bool
            same = False
        if not same:
            self._pos, self._dups = self._index.lookup_unique(keys)
            self._n_unseen = self._index.n_unseen(self._pos)
            self._keys = keys
            self._vals = None
        vals = tuple(x.values())
        if len(vals) != len(keys):  # a key's __eq__ or __hash__, run by the lookup, changed x
            raise ValueError(f"the event changed while its {len(keys)} keys were looked up "
                             f"(it has {len(vals)} now): it is not learned")
        if vals != self._vals or self._version_seen != self._version:
            val = packed_values(x, vals)
            if not self._PACKED and val.__class__ is bytes:
                val = np.frombuffer(val).copy()
            pos = self._pos
            if self._dups:
                pos, val = merge_duplicates(pos, as_array(val))
            self._on_event(pos, val)
            self._vals, self._epos, self._val = vals, pos, val
            self._version_seen = self._version
        if learn and self._n_unseen:
            self._insert_unseen(keys)

    def _one_hot(self, x: dict) -> dict:
        items = tuple(x.items())  # with immutable values (no list or set): an exact cache key
        if items == self._onehot_items:
            return self._onehot
        plain = one_hot_plain(x)
        if plain is None or plain[1]:
            self._onehot_items = None
            return one_hot(x) if plain is None else plain[0]
        self._onehot_items, self._onehot = items, plain[0]
        return self._onehot

    def _insert_unseen(self, keys: tuple) -> None:
        """Give the `_n_unseen` keys at the sink positions, and only them (a vocabulary lookup
        per new key, not per key: on a text stream most events bring a few new keys)."""
        self._index.check_room(self._n_unseen)  # past max_keys: nothing changes
        self._grow(self._index.size + self._n_unseen)  # may fail: before the index grows
        # only a Vocabulary has unseen keys, and never merged ones: `_epos` is `_pos`
        self._pos = self._epos = self._index.insert_unseen(keys, self._pos)
        self._n_unseen = 0
