"""`river-pa evaluate`: progressive validation of a learner on a data set.

Every event is first predicted, then learned (River's `evaluate.iter_progressive_val_score`,
with ``--delay N`` for labels that arrive N events late). With no arguments it runs PA-I on
River's bundled Phishing data: the project's main job. With several ``--model``, every model
runs over the same events in one pass (`evaluate_many`), and the summary is one table and the
plot one figure.

Two paths give the same numbers:

* generic: River's `iter_progressive_val_score` with River's metric objects, for any model,
  data set and delay;
* compiled: when the data has CSR arrays (a libsvm file, a numeric CSV), the model is a fresh
  river_pa `PAClassifier` or `PARegressor` and there is no delay, its `progressive_csr` runs the
  predict-then-learn loop over a block of events in one call and returns the margins it
  predicted before each update; River's metrics are then computed from them in compiled code
  (`river_pa.evaluate.fastmetrics`, equal to River's metric objects to the bit). The final weights
  equal a `learn_one` loop's.

Exit status: 0 on success, 2 on a usage error (unknown data set, model, parameter or metric:
one line naming the valid choices; an unreadable data file or a bad line in it; a --report-path
or --plot that cannot take the output, checked before any event is read; an event of a CSV
or JSONL file that the model refuses, e.g. a string value: the message names the file and
line), 1 when the model rejects an event of a libsvm file or a River data set during the run
(the message names the data and the event number) or a write fails after the checks (after
the summary is printed).

"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
import sys
import threading
import time

import numpy as np

from river_pa import report
from river_pa._core import jit
from river_pa.evaluate import datasets, fastmetrics
from river_pa.evaluate.targets import target_array

__all__ = ["Result", "evaluate", "evaluate_many", "run"]

DEFAULT_METRICS = {
    "binary": ["Accuracy", "F1", "LogLoss"],
    "multiclass": ["Accuracy", "MacroF1", "CrossEntropy"],
    "regression": ["MAE", "RMSE", "R2"],
}
# Values (entries + rows) up to which a single-block job runs the array path's kernels in the
# interpreter: about 1 us each, 0.1 s in all, what loading them from Numba's cache costs.
INTERPRET_VALUES = 100_000
DEFAULT_MODELS = {"binary": "PAClassifier", "multiclass": "PAMultiClassifier",
                  "regression": "PARegressor"}


class UsageError(ValueError):
    """A bad command line: reported on one line, exit status 2."""


# -- parameters, models and metrics ------------------------------------------------------------


def parse_value(text: str):
    """A command-line value: JSON if it parses (numbers, true/false/null, lists, quoted
    strings), None for none/None, booleans for True/False, else the text itself.

    >>> [parse_value(v) for v in ["0.5", "3", "true", "None", "PA-II", '"7"']]
    [0.5, 3, True, None, 'PA-II', '7']

    """
    special = {"none": None, "None": None, "True": True, "False": False}
    if text in special:
        return special[text]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_params(pairs: list[str], text: str | None) -> dict:
    """Merge ``--model-params JSON`` and ``--param key=value`` (the latter win)."""
    params = {}
    if text:
        try:
            params = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--model-params is not valid JSON: {exc}") from None
        if not isinstance(params, dict):
            raise UsageError(f"--model-params must be a JSON object, got {text!r}")
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param expects KEY=VALUE, got {pair!r}")
        params[key] = parse_value(value)
    return params


def build_model(name: str | None, params: dict, task: str):
    """The model named on the command line, or the task's default (`DEFAULT_MODELS`)."""
    from river_pa import registry

    try:
        return registry.make_model(name or DEFAULT_MODELS[task], params)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def build_metrics(names: list[str], model) -> list:
    """River's metric objects (`river_pa.report.make_metrics`); UsageError if one is unknown
    or does not work with `model`."""
    try:
        return report.make_metrics(names, model, hint="; the default metrics follow the "
                                   "data's task: give --metric names for this model, --task, "
                                   "or a --model for this task")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


# -- running -------------------------------------------------------------------------------


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


class _Clock:
    """Rows from checkpoints: events/s since the previous row."""

    def __init__(self, on_row, spent: float = 0.0):
        """`spent`: seconds the run already took before (reading the first chunk)."""
        self.rows = Series()
        self._on_row = on_row
        self._start = self._last = time.perf_counter() - spent
        self._last_step = 0

    def checkpoint(self, step: int, values: dict) -> None:
        now = time.perf_counter()
        rate = (step - self._last_step) / max(now - self._last, 1e-9)
        row = Row(step, dict(values), rate, rss_mib())
        self.rows.append(row)
        self._last, self._last_step = now, step
        if self._on_row:
            self._on_row(row)

    @property
    def seconds(self) -> float:
        return self._last - self._start


def _compiled_why_not(first, model, delay: int) -> str | None:
    """None when the compiled path applies to `model` and the first block, else the reason."""
    from river import base

    if delay > 1:  # River's delay 1 is no delay
        return f"delay {delay}: labels are learned late"
    if getattr(model, "_calibrator", None) is not None:
        return "calibration: its probabilities are not the sigmoid of the margin"
    if not hasattr(model, "progressive_csr"):
        kind = "a pipeline" if isinstance(model, base.Wrapper | dict) or hasattr(model, "steps") \
            else type(model).__name__
        return (f"{kind} has no progressive_csr (the compiled path exists for PAClassifier "
                "and PARegressor only)")
    if first.csr is None:
        return "the events are not all numbers (CSR arrays)"
    task = "binary" if isinstance(model, base.Classifier) else "regression"
    if task != first.task:
        return f"{type(model).__name__} on {first.task} data"
    return None


def _margin_tracker(names: list[str], model, task: str):
    """Metrics fed from margins: compiled when every name has a compiled twin (River's
    metric module, which imports scipy.stats, is then never imported), else River's."""
    if all(n in fastmetrics.SUPPORTED[task] for n in names):
        return fastmetrics.MarginMetrics(names, task)
    return fastmetrics.RiverMarginMetrics(build_metrics(names, model), task)


def _keys(csr):
    return csr.keys if csr.keys is not None else range(int(csr.indices.max(initial=-1)) + 1)


def _run_compiled(first, blocks, model, names: list[str], every: int, clock: _Clock) -> bool:
    """Progressive validation with the model's `progressive_csr`, called once per block (a
    chunk of the file, whatever `every` is); the metrics are fed the block's margins `every`
    events at a time for the report rows. False, the model untouched, if the first call
    refuses the columns (two share a weight). A later block that is refused, or a block
    without CSR arrays, is learned one event at a time."""
    tracker = _margin_tracker(names, model, first.task)
    step = 0
    for block in itertools.chain([first], blocks):
        csr = block.csr
        try:
            if csr is None:
                raise ValueError("no CSR arrays")
            margins = model.progressive_csr(csr.indptr, csr.indices, csr.data, csr.y, _keys(csr))
        except ValueError:
            if step == 0:
                return False
            margins = _margins_one_by_one(model, block, step)
        y = target_array(block.y, block.task)
        lo = 0
        while lo < len(block):
            hi = min(lo + every - step % every, len(block))
            tracker.update(y[lo:hi], margins[lo:hi])
            step += hi - lo
            lo = hi
            if step % every == 0:
                clock.checkpoint(step, tracker.values())
    if not clock.rows or clock.rows[-1].step != step:
        clock.checkpoint(step, tracker.values())
    return True


def _margins_one_by_one(model, block, step: int) -> np.ndarray:
    """The margins of a predict-then-learn loop over a block's dicts; errors name the event
    (`_refused`)."""
    margin = getattr(model, "decision_function_one", model.predict_one)
    out = np.empty(len(block))
    for i, (x, y) in enumerate(block):
        try:
            out[i] = margin(x)
            model.learn_one(x, y)
        except (TypeError, ValueError) as exc:
            raise _refused(exc, block, i, step + i + 1) from exc
    return out


def _refused(exc: Exception, block, i: int, event: int, note: str = "") -> Exception:
    """The error of a model that refused event number `event`, the `i`-th (0-based) of
    `block`: for a CSV or JSONL file a DataError naming the file and line (a bad line, exit
    status 2, like the reader's), else the model's error type naming the event."""
    where = block.where(i) if block is not None else None
    if where:
        return datasets.DataError(f"{where}{note}: {exc}")
    return type(exc)(f"event {event}{note}: {exc}")


class _Events:
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
        """`_refused` for the last event reader `r` took."""
        n = self._count[r]
        start, block = next(((s, b) for s, b in self._blocks.items() if s < n <= s + len(b)),
                            (n - 1, None))
        return _refused(exc, block, n - start - 1, n, note)


def _run_river(first, blocks, model, names: list[str], delay: int, every: int,
               clock: _Clock) -> None:
    from river import evaluate as river_evaluate
    from river import metrics as river_metrics

    metrics = build_metrics(names, model)
    bundle = river_metrics.base.Metrics(metrics)
    events = _Events(first, blocks)
    steps = river_evaluate.iter_progressive_val_score(
        events.stream(), model, bundle, delay=delay or None, step=every
    )
    try:
        for state in steps:
            clock.checkpoint(state["Step"], {type(m).__name__: m.get() for m in metrics})
    except datasets.DataError:
        raise
    except (TypeError, ValueError) as exc:  # name where: River's loop does not
        note = f" (or the one it learned, {delay} earlier)" if delay else ""
        raise events.refused(exc, note=note) from exc
    if not clock.rows or clock.rows[-1].step != events.read:
        clock.checkpoint(events.read, {type(m).__name__: m.get() for m in metrics})


def warm_up(model, first, compiled: bool, names: list[str]) -> float:
    """Compile (or load from Numba's cache) what the run will call, on a clone of the model
    and the first event, so that the run's events/s excludes it; returns the seconds spent."""
    start = time.perf_counter()
    probe = model.clone()
    try:
        if compiled:
            csr = first.csr.head(1)
            margins = probe.progressive_csr(csr.indptr, csr.indices, csr.data, csr.y, _keys(csr))
            _margin_tracker(names, probe, first.task).update(csr.y, margins)
        else:
            x, y = next(iter(first.head(1)))
            probe.predict_one(x)
            probe.learn_one(x, y)
    except (TypeError, ValueError):  # a bad first event: the run reports it
        pass
    return time.perf_counter() - start


def _first_block(source, delay: int, every: int):
    """(the source's block iterator, its first block); UsageError for a bad delay or every, or
    a source without events."""
    if delay < 0:
        raise UsageError(f"--delay must be >= 0, got {delay}")
    if every < 1:
        raise UsageError(f"--every must be >= 1, got {every}")
    blocks = source.blocks()
    first = next(blocks, None)
    if first is None or len(first) == 0:
        raise UsageError(f"{source.name} has no events")
    return blocks, first


def evaluate(source, model, metrics: list[str], delay: int = 0, every: int = 1000,
             on_row=None) -> Result:
    """Progressive validation of `model` on `source` (a `datasets.Data` or `datasets.Stream`)
    with the River metrics named in `metrics`.

    Uses the compiled path when it applies (see the module docstring); `Result.path` says
    which path ran and why. `on_row(row)` is called at every report row (every `every` events
    and at the end). `Result.seconds` and the events/s exclude `Result.compile_seconds`, the
    time Numba took to compile or load the code from its cache.

    >>> from river_pa import PAClassifier
    >>> from river_pa.evaluate import datasets
    >>> result = evaluate(datasets.load("phishing"), PAClassifier(C=0.1), ["Accuracy"])
    >>> result.values, result.events, result.path
    ({'Accuracy': 0.8752}, 1250, 'compiled: PAClassifier.progressive_csr')

    """
    blocks, first = _first_block(source, delay, every)
    why_not = _compiled_why_not(first, model, delay)
    kernels = "Numba"
    if why_not is None:
        blocks, kernels = _kernel_tier(first, blocks)
    interpret = kernels != "Numba"
    compile_seconds = source.compile_seconds
    if not interpret:
        compile_seconds += warm_up(model, first, why_not is None, metrics)
    clock = _Clock(on_row, source.read_seconds)
    if why_not is None:
        with jit.interpreted() if interpret else contextlib.nullcontext():
            done = _run_compiled(first, blocks, model, metrics, every, clock)
        if done:
            path = f"compiled: {type(model).__name__}.progressive_csr"
        else:
            why_not = "two columns share one weight (hash collision)"
            kernels = "Numba"
    if why_not is not None:
        import river.evaluate
        import river.metrics  # noqa: F401  (1-3 s: imported before the clock starts)

        clock = _Clock(on_row, source.read_seconds)
        _run_river(first, blocks, model, metrics, delay, every, clock)
        path = f"River iter_progressive_val_score: {why_not}"
    return Result(clock.rows, clock.rows[-1].values, clock.seconds, path, compile_seconds,
                  kernels)


def _kernel_tier(first, blocks) -> tuple:
    """(the blocks after `first`, "Numba" or why the array path runs its kernels
    interpreted): when `first` is all the events and they hold at most `INTERPRET_VALUES`
    values, the interpreter is done before Numba would have loaded the kernels
    (`river_pa._core.jit`). Peeks at the second block (two chunks in memory at most)."""
    second = next(blocks, None)
    if second is not None:
        return itertools.chain([second], blocks), "Numba"
    size = len(first.csr.data) + len(first)
    if size > INTERPRET_VALUES:
        return blocks, "Numba"
    return blocks, (f"interpreted (a small job, {size:,} values: quicker than loading "
                    "Numba's)")


def evaluate_many(source, models: dict, metrics: list[str], delay: int = 0,
                  every: int = 1000) -> dict:
    """{label: Result} of progressive validation of each model of `models` ({label: model}) on
    one pass over `source`: River's `iter_progressive_val_score` for each, fed the same events
    through `itertools.tee` and advanced in lockstep, one report row each at a time, so the
    events are read once and held at most `every` at a time. Each model's figures are those
    of its own run. Events/s count the time spent in each model's steps (the first model to
    read an event also pays for reading it); `compile_seconds` is excluded as in `evaluate`.
    A rejected event raises the error prefixed with the model's label and the event number."""
    from river import evaluate as river_evaluate
    from river import metrics as river_metrics

    blocks, first = _first_block(source, delay, every)
    events = _Events(first, blocks, len(models))
    runs = {}
    for r, (label, model) in enumerate(models.items()):
        stream = events.stream(r)
        compile_seconds = warm_up(model, first, False, metrics)
        bundle = build_metrics(metrics, model)
        steps = river_evaluate.iter_progressive_val_score(
            stream, model, river_metrics.base.Metrics(bundle), delay=delay or None, step=every)
        runs[label] = [steps, bundle, Series(), 0.0, 0, 0.0, compile_seconds]
    active = list(runs)
    while active:
        for label in list(active):
            run = runs[label]
            start = time.perf_counter()
            try:
                state = next(run[0])
            except StopIteration:
                active.remove(label)
                continue
            except datasets.DataError:
                raise
            except (TypeError, ValueError) as exc:
                raise events.refused(exc, list(runs).index(label), f" ({label})") from exc
            run[3] += time.perf_counter() - start
            _row(run, state["Step"])
    out = {}
    for label, (_, bundle, rows, seconds, _, _, compile_seconds) in runs.items():
        if not rows or rows[-1].step != events.read:
            _row(runs[label], events.read)
        out[label] = Result(rows, rows[-1].values, seconds, "River iter_progressive_val_score: "
                            "several models in one pass", compile_seconds)
    return out


def _row(run: list, step: int) -> None:
    """Append a report row to one model's run [steps, metrics, rows, seconds spent, step and
    seconds at the last row, compile seconds]."""
    _, bundle, rows, seconds, last_step, last_seconds, _ = run
    rate = (step - last_step) / max(seconds - last_seconds, 1e-9)
    rows.append(Row(step, {type(m).__name__: m.get() for m in bundle}, rate, rss_mib()))
    run[4], run[5] = step, seconds


# -- output --------------------------------------------------------------------------------


def snapshot(row: Row) -> dict:
    """One report row as a `river_pa.report` snapshot."""
    return {"events": row.step, "metrics": row.values, "throughput_eps": row.events_per_s,
            "rss_mib": row.rss_mib}


def snapshots(result: Result, summary: dict) -> list[dict]:
    """The run as `river_pa.report` snapshots: one per row, the last one with the summary."""
    out = [snapshot(r) for r in result.rows]
    out[-1].update(summary)
    return out


class _Report:
    """The --report-path of one run, written as the run goes: each row is written when the
    next one is made (the last waits for the summary), so an interrupted run leaves the rows
    so far (`close` writes the held one)."""

    def __init__(self, path: str | None):
        self._fh = report.create(path) if path else None
        self._held = None

    def __call__(self, row: Row) -> None:
        if self._held:
            self.write([snapshot(self._held)])
        self._held = row

    def write(self, snapshots: list[dict]) -> None:
        if self._fh:
            report.write(self._fh, snapshots)

    def close(self, last: dict | None = None) -> None:
        """Write `last` (the held row with the run's summary), or else the held row; close."""
        if self._fh:
            self.write([last] if last else [snapshot(self._held)] if self._held else [])
            self._fh.close()
            self._fh = None


class _Progress:
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


# A job on a stderr that is not a terminal (a log, CI) says how it goes at most this often
PROGRESS_EVERY_S = 10.0


class _ProgressLines:
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


def _setup(args):
    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit must be >= 1, got {args.limit}")
    source = datasets.open_source(args.data, target=args.target, task=args.task,
                                  limit=args.limit)
    models = {}
    for name, params in _model_specs(args):
        model = build_model(name, params, source.task)
        label = _label(name or type(model).__name__, params)
        while label in models:
            label += "'"
        models[label] = model
    names = report.metric_names(args.metric) or DEFAULT_METRICS[source.task]
    if len(models) > 1 or not all(n in fastmetrics.SUPPORTED.get(source.task, {})
                                  for n in names):
        for model in models.values():
            build_metrics(names, model)  # validate the names now: a usage error, status 2
    return source, models, names


def _model_specs(args) -> list[tuple]:
    """(name or None, params) of each --model (one default model without any): the shared
    --param/--model-params first, then the model's own, which win."""
    shared = parse_params(args.param, args.model_params)
    specs = args.models or [{"name": None, "param": [], "model_params": None}]
    return [(spec["name"], {**shared, **parse_params(spec["param"], spec["model_params"])})
            for spec in specs]


def _label(name: str, params: dict) -> str:
    """A model's name in tables and plots: its --model name and parameters.

    >>> _label("PAClassifier", {"C": 0.1, "variant": "PA-II"})
    "PAClassifier(C=0.1, variant='PA-II')"

    """
    if not params:
        return name
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in params.items())})"


def _numba_without_blas() -> None:
    """Numba imports scipy.linalg (0.2-0.5 s here) the first time it compiles or loads any
    kernel, only to learn whether np.dot may call BLAS; no river_pa kernel uses BLAS. In the
    evaluate command's own process, that check finds no BLAS without importing SciPy (a
    `module:factory` model whose own Numba code calls np.dot would then fail to compile)."""
    blocked = "scipy.linalg.cython_blas"
    if "numba.np.arraymath" in sys.modules or blocked in sys.modules:
        return
    sys.modules[blocked] = None  # its import raises ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        del sys.modules[blocked]


def _check_outputs(args) -> None:
    """UsageError unless --report-path and --plot can be written: checked before any event
    is read (`river_pa.report.check_output`), so a bad path costs no run."""
    inputs = [args.data] if os.path.isfile(args.data) else []
    try:
        if args.report_path:
            report.check_output(args.report_path, "--report-path", inputs)
        if args.plot:
            report.check_output(args.plot, "--plot", inputs, plot=True)
        if args.report_path and args.plot and os.path.abspath(args.report_path) == \
                os.path.abspath(args.plot):
            raise ValueError(f"--report-path and --plot are the same file {args.plot}")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def run(args) -> int:
    """Run `river-pa evaluate` with the flags parsed by `river_pa.cli`; returns the exit
    status."""
    _numba_without_blas()
    try:
        _check_outputs(args)
        data, models, metrics = _setup(args)
    except ValueError as exc:  # UsageError and data/model errors: one line, status 2
        print(f"river-pa evaluate: {exc}", file=sys.stderr)
        return 2
    if len(models) > 1:
        return _run_many(args, data, models, metrics)
    (model,) = models.values()
    try:
        out = _Report(args.report_path)
    except OSError as exc:
        print(f"river-pa evaluate: cannot write {args.report_path}: {exc}", file=sys.stderr)
        return 1
    progress = None if args.quiet else _Progress(data) if sys.stderr.isatty() else \
        _ProgressLines(data.name)

    def on_row(row):
        out(row)
        if progress:
            progress(row)

    try:
        if progress:
            with progress:
                result = evaluate(data, model, metrics, args.delay, args.every, on_row)
        else:
            result = evaluate(data, model, metrics, args.delay, args.every, on_row)
    except BaseException as exc:  # an error, Ctrl-C: the report keeps the rows so far
        out.close()
        if isinstance(exc, UsageError | datasets.DataError):  # a bad line met during the run
            print(f"river-pa evaluate: {exc}", file=sys.stderr)
            return 2
        if isinstance(exc, TypeError | ValueError):
            print(f"river-pa evaluate: event rejected: {data.name}: {exc}", file=sys.stderr)
            return 1
        raise
    summary = {
        "data": data.name, "task": data.task, "task_from": data.task_from,
        "model": type(model).__name__,
        "params": model._get_params(), "delay": args.delay, "seconds": result.seconds,
        "events_per_s": result.events / max(result.seconds, 1e-9),
        "compile_s": result.compile_seconds, "path": result.path, "kernels": result.kernels,
    }
    rows = snapshots(result, summary)
    report.print_summary(rows[-1])
    return _write_outputs(args, rows, out)


def _run_many(args, data, models: dict, metrics: list[str]) -> int:
    """`run` for several models: one pass, one comparison table, one plot."""
    try:
        results = evaluate_many(data, models, metrics, args.delay, args.every)
    except (UsageError, datasets.DataError) as exc:
        print(f"river-pa evaluate: {exc}", file=sys.stderr)
        return 2
    except (TypeError, ValueError) as exc:
        print(f"river-pa evaluate: event rejected: {data.name}: {exc}", file=sys.stderr)
        return 1
    rows = []
    for label, result in results.items():
        part = snapshots(result, {
            "data": data.name, "task": data.task, "delay": args.delay, "seconds": result.seconds,
            "events_per_s": result.events / max(result.seconds, 1e-9),
            "compile_s": result.compile_seconds, "path": result.path,
        })
        for row in part:
            row["model"] = label
        rows += part
    report.print_comparison(rows)
    return _write_outputs(args, rows)


def _write_outputs(args, rows: list[dict], out: _Report | None = None) -> int:
    """Finish the --report-path (`out`, written as the run went, holding the last row; a new
    one for `rows` without it) with the summary in `rows[-1]` and write the --plot; 1 with
    one line if they cannot be written (the paths were checked before the run)."""
    try:  # after the summary: a failed write does not lose the run's figures
        if out is None:
            out = _Report(args.report_path)
            out.write(rows[:-1])
        out.close(rows[-1])
        if args.plot:
            report.plot(rows, args.plot)
    except (OSError, ValueError) as exc:
        print(f"river-pa evaluate: cannot write the outputs: {exc}", file=sys.stderr)
        return 1
    for what, path in (("report", args.report_path), ("plot", args.plot)):
        if path:
            print(f"{what}: {path}")
    return 0
