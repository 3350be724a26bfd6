"""Progressive validation of a learner on a data set: the engines of `river-pa evaluate`.

Every event is first predicted, then learned (River's `evaluate.iter_progressive_val_score`,
with ``delay=N`` for labels that arrive N events late). With several models, every model runs
over the same events in one pass (`evaluate_many`).

Two paths give the same numbers:

* generic: River's `iter_progressive_val_score` with River's metric objects, for any model,
  data set and delay (here);
* compiled: when the data has CSR arrays (a libsvm file, a numeric CSV), the model is a fresh
  river_pa `PAClassifier` or `PARegressor` and there is no delay, its `progressive_csr` runs the
  predict-then-learn loop over a block of events in one call and returns the margins it
  predicted before each update (`river_pa.evaluate.compiled`); its kernels run in Numba or,
  for a small job, in the interpreter (`river_pa.evaluate.kernels`).

The command line around them is `river_pa.evaluate.cli`.

"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator

from river_pa._core import jit
from river_pa.evaluate import compiled
from river_pa.evaluate.events import Events
from river_pa.evaluate.files import DataError
from river_pa.evaluate.kernels import kernel_tier
from river_pa.evaluate.params import UsageError, build_metrics
from river_pa.evaluate.results import Clock, Result

__all__ = ["evaluate", "evaluate_many"]


def warm_up(model, first, use_compiled: bool, names: list[str]) -> float:
    """Compile (or load from Numba's cache) what the run will call, on a clone of the model
    and the first event, so that the run's events/s excludes it; returns the seconds spent."""
    start = time.perf_counter()
    probe = model.clone()
    try:
        if use_compiled:
            csr = first.csr.head(1)
            margins = probe.progressive_csr(csr.indptr, csr.indices, csr.data, csr.y,
                                            compiled.keys(csr))
            compiled.margin_tracker(names, probe, first.task).update(csr.y, margins)
        else:
            x, y = next(iter(first.head(1)))
            probe.predict_one(x)
            probe.learn_one(x, y)
            numba_path = getattr(model, "_warm_numba_path", None)
            if numba_path is not None:  # the kernels the C step leaves some events to
                numba_path(x, y)
    except (TypeError, ValueError, KeyError):  # a bad first event: the run reports it
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
    why_not = compiled.why_not(first, model, delay)
    kernels = "Numba"
    if why_not is None:
        blocks, kernels = kernel_tier(first, blocks)
    interpret = kernels != "Numba"
    compile_seconds = source.compile_seconds
    if not interpret:
        compile_seconds += warm_up(model, first, why_not is None, metrics)
    clock = Clock(on_row, source.read_seconds)
    if why_not is None:
        with jit.interpreted() if interpret else contextlib.nullcontext():
            done = compiled.run(first, blocks, model, metrics, every, clock)
        if done:
            path = f"compiled: {type(model).__name__}.progressive_csr"
        else:
            why_not = "two columns share one weight (hash collision)"
            kernels = "Numba"
    if why_not is not None:
        import river.evaluate
        import river.metrics  # noqa: F401  (1-3 s: imported before the clock starts)

        clock = Clock(on_row, source.read_seconds)
        _run_river(first, blocks, model, metrics, delay, every, clock)
        path = f"River iter_progressive_val_score: {why_not}"
    return Result(clock.rows, clock.rows[-1].values, clock.seconds, path, compile_seconds,
                  kernels)


def _values(metrics: list) -> dict:
    """{name: value} of River's metric objects."""
    return {type(m).__name__: m.get() for m in metrics}


def _run_river(first, blocks, model, names: list[str], delay: int, every: int,
               clock: Clock) -> None:
    from river import evaluate as river_evaluate
    from river import metrics as river_metrics

    metrics = build_metrics(names, model)
    bundle = river_metrics.base.Metrics(metrics)
    events = Events(first, blocks)
    steps = river_evaluate.iter_progressive_val_score(
        events.stream(), model, bundle, delay=delay or None, step=every
    )
    try:
        for state in steps:
            clock.checkpoint(state["Step"], _values(metrics))
    except DataError:
        raise
    except (TypeError, ValueError, KeyError) as exc:  # name where: River's loop does not
        note = f" (or the one it learned, {delay} earlier)" if delay else ""
        raise events.refused(exc, note=note) from exc
    if not clock.rows or clock.rows[-1].step != events.read:
        clock.checkpoint(events.read, _values(metrics))


@dataclasses.dataclass
class _Run:
    """One model's run in `evaluate_many`: River's steps over its copy of the events, its
    metric objects, and the seconds spent in its steps, which are its clock's time."""

    steps: Iterator[dict]
    metrics: list
    compile_seconds: float
    seconds: float = 0.0
    clock: Clock = dataclasses.field(init=False)

    def __post_init__(self):
        self.clock = Clock(timer=lambda: self.seconds)

    def row(self, step: int) -> None:
        self.clock.checkpoint(step, _values(self.metrics))


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
    events = Events(first, blocks, len(models))
    runs = {}
    for r, (label, model) in enumerate(models.items()):
        stream = events.stream(r)
        compile_seconds = warm_up(model, first, False, metrics)
        bundle = build_metrics(metrics, model)
        steps = river_evaluate.iter_progressive_val_score(
            stream, model, river_metrics.base.Metrics(bundle), delay=delay or None, step=every)
        runs[label] = _Run(steps, bundle, compile_seconds)
    active = list(runs)
    while active:
        for label in list(active):
            run = runs[label]
            start = time.perf_counter()
            try:
                state = next(run.steps)
            except StopIteration:  # the step that ends the run counts too (its last events)
                active.remove(label)
                continue
            except DataError:
                raise
            except (TypeError, ValueError, KeyError) as exc:  # KeyError: a column a
                # pipeline selects (compose.Select) missing from the event
                raise events.refused(exc, list(runs).index(label), f" ({label})") from exc
            finally:
                run.seconds += time.perf_counter() - start
            run.row(state["Step"])
    out = {}
    for label, run in runs.items():
        if not run.clock.rows or run.clock.rows[-1].step != events.read:
            run.row(events.read)
        rows = run.clock.rows
        out[label] = Result(rows, rows[-1].values, run.seconds, "River "
                            "iter_progressive_val_score: several models in one pass",
                            run.compile_seconds)
    return out
