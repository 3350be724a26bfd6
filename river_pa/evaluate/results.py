"""What a run of `river-pa evaluate` keeps: report rows, evenly spaced, and its result.

A `Clock` makes a `Row` at each checkpoint (events seen, metric values, events/s since the
previous row, memory) and keeps them in a `Series`, at most `Series.cap` of them; a run
returns them in its `Result`.

"""

from __future__ import annotations

import dataclasses
import os
import time

__all__ = ["Clock", "Result", "Row", "Series", "rss_mib"]


@dataclasses.dataclass
class Row:
    """One checkpoint: events seen, metric values, throughput since the last row, memory."""

    step: int
    values: dict
    events_per_s: float
    rss_mib: float


class Series(list):
    """The report rows a run keeps for its plot and summary: at most `cap` (>= 2), evenly spaced.

    It holds every `stride`-th row (the first one included) and the newest one. When it holds
    more than `cap`, every other row is dropped and the stride doubles, so `--every 1` on a
    long stream keeps about `cap` rows (O(cap) memory, not O(events)) spread over the whole
    run, while the newest row, the run's final figures, is always the exact one. The rows of
    a single run's --report-path are written as they come (`on_row`), all of them; a run of
    several models writes these kept rows. Nothing here is written by hand for speed: no
    library keeps a decimated series with an exact last element.

    >>> rows = Series(cap=4)
    >>> for step in range(1, 12):
    ...     rows.append(step)
    >>> rows, rows.stride
    ([1, 5, 9, 11], 4)

    """

    def __init__(self, cap: int = 1000):
        super().__init__()
        self.cap, self.stride, self.count = cap, 1, 0

    def append(self, row) -> None:
        if (self.count - 1) % self.stride:  # the newest row so far is off the grid: replaced
            self.pop()
        super().append(row)
        self.count += 1
        if len(self) > self.cap:
            newest, on_grid = self[-1], (self.count - 1) % self.stride == 0
            self[:] = (self if on_grid else self[:-1])[::2]
            self.stride *= 2
            if (self.count - 1) % self.stride:
                super().append(newest)


@dataclasses.dataclass
class Result:
    rows: Series  # at most Series.cap report rows; rows[-1] holds the final figures
    values: dict
    seconds: float
    path: str
    compile_seconds: float = 0.0
    kernels: str = "Numba"

    @property
    def events(self) -> int:
        return self.rows[-1].step if self.rows else 0


def rss_mib() -> float:
    """The process's resident memory (MiB)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Clock:
    """Rows from checkpoints: events/s since the previous row, in the seconds of `timer` (the
    wall clock, or the seconds one model of several spent in its own steps)."""

    def __init__(self, on_row=None, spent: float = 0.0, timer=time.perf_counter):
        """`spent`: seconds the run already took before (reading the first chunk)."""
        self.rows = Series()
        self._on_row = on_row
        self._timer = timer
        self._start = self._last = timer() - spent
        self._last_step = 0

    def checkpoint(self, step: int, values: dict) -> None:
        now = self._timer()
        rate = (step - self._last_step) / max(now - self._last, 1e-9)
        row = Row(step, dict(values), rate, rss_mib())
        self.rows.append(row)
        self._last, self._last_step = now, step
        if self._on_row:
            self._on_row(row)

    @property
    def seconds(self) -> float:
        return self._last - self._start
