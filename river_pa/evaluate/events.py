"""The events of a source's blocks as River's loops read them, and the error that names an
event a model refused (`refused`: by its file and line, or by its number).

`Events` feeds one or several River loops the same events and knows which block the last
event of each came from.

"""

from __future__ import annotations

import itertools

from river_pa.evaluate.files import DataError

__all__ = ["Events", "refused"]


def refused(exc: Exception, block, i: int, event: int, note: str = "") -> Exception:
    """The error of a model that refused event number `event`, the `i`-th (0-based) of
    `block`: for a CSV or JSONL file a DataError naming the file and line (a bad line, exit
    status 2, like the reader's), else the model's error type naming the event."""
    where = block.where(i) if block is not None else None
    # a missing key's message is the key alone: named KeyError, as serve's dead letter does
    message = f"KeyError: {exc}" if isinstance(exc, KeyError) else str(exc)
    if where:
        return DataError(f"{where}{note}: {message}")
    return (ValueError if isinstance(exc, KeyError) else type(exc))(
        f"event {event}{note}: {message}")


class Events:
    """The events of a source's blocks for `readers` River loops (one `itertools.tee` copy
    each, `stream(r)`), counted per reader, so that an error names the event the failing
    reader took (`refused`); the blocks every reader has passed are let go."""

    def __init__(self, first, blocks, readers: int = 1):
        self.read = 0  # events taken from the source
        self._count = [0] * readers
        self._blocks: dict = {}  # number of events before the block -> block
        events = self._events(itertools.chain([first], blocks))
        self._streams = itertools.tee(events, readers) if readers > 1 else [events]

    def _events(self, blocks):
        for block in blocks:
            done = min(self._count)
            for start in [s for s, b in self._blocks.items() if s + len(b) <= done]:
                del self._blocks[start]
            self._blocks[self.read] = block
            for event in block:
                self.read += 1
                yield event

    def stream(self, r: int = 0):
        for event in self._streams[r]:
            self._count[r] += 1
            yield event

    def refused(self, exc: Exception, r: int = 0, note: str = "") -> Exception:
        """`refused` for the last event reader `r` took."""
        n = self._count[r]
        start, block = next(((s, b) for s, b in self._blocks.items() if s < n <= s + len(b)),
                            (n - 1, None))
        return refused(exc, block, n - start - 1, n, note)
