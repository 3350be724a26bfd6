"""Caches that live beside a learner's state but never in its pickles."""

from __future__ import annotations


class TransientCache:
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
