"""How a run of `river-pa evaluate` goes, on stderr: a rich progress bar on a terminal
(`Bar`), else a plain line every `PROGRESS_EVERY_S` seconds at most (`Lines`). Both are
called with each report row."""

from __future__ import annotations

import sys
import threading
import time

from river_pa.evaluate.results import Row

__all__ = ["PROGRESS_EVERY_S", "Bar", "Lines"]

# A job on a stderr that is not a terminal (a log, CI) says how it goes at most this often
PROGRESS_EVERY_S = 10.0


class Bar:
    """A rich progress bar on stderr (TTY only): events, the live metric and, for a file,
    the bytes read of it."""

    def __init__(self, source):
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress,
                                   TextColumn)

        self._source = source
        self._bytes = source.size is not None
        done = DownloadColumn() if self._bytes else MofNCompleteColumn()
        self._bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), done,
                             TextColumn("{task.fields[events]:,} events {task.fields[metric]}"),
                             console=Console(stderr=True), transient=True)
        total = source.size if self._bytes else len(source)
        self._task = self._bar.add_task(source.name, total=total, metric="", events=0)

    def __enter__(self):
        self._bar.start()
        return self

    def __exit__(self, *exc):
        self._bar.stop()

    def __call__(self, row: Row) -> None:
        name, value = next(iter(row.values.items()))
        done = self._source.position() if self._bytes else row.step
        self._bar.update(self._task, completed=done, events=row.step,
                         metric=f"{name} {value:.4f}")


class Lines:
    """Progress as plain lines on stderr when it is not a terminal and the job is long: one
    line each `every_s` seconds at most, also while no event is done yet (a first run
    compiles the Numba kernels: 1-2 s on a quiet machine, a minute seen on a loaded one)."""

    def __init__(self, name: str):
        self._name, self._every = name, PROGRESS_EVERY_S
        self._started = self._last = time.monotonic()
        self._timer = threading.Timer(self._every, self._starting)
        self._timer.daemon = True

    def __enter__(self):
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()

    def _starting(self) -> None:
        self._say("starting (a first run compiles the kernels; later runs load them from "
                  "Numba's cache)")

    def __call__(self, row: Row) -> None:
        self._timer.cancel()
        if time.monotonic() - self._last >= self._every:
            name, value = next(iter(row.values.items()))
            self._say(f"{row.step:,} events, {name} {value:.4f}")

    def _say(self, what: str) -> None:
        self._last = time.monotonic()
        print(f"river-pa evaluate: {self._name}: {what} ({self._last - self._started:.0f} s)",
              file=sys.stderr, flush=True)
