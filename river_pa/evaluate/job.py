"""`river-pa evaluate`: progressive validation of a learner on a data set.

Every event is first predicted, then learned (River's `evaluate.iter_progressive_val_score`,
with ``--delay N`` for labels that arrive N events late). With no arguments it runs PA-I on
River's bundled Phishing data: the project's main job.

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
one line naming the valid choices; an unreadable data file), 1 when an event is rejected during
the run (the message names the data and the event number) or the report or plot cannot be
written (after the summary is printed).

"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import sys
import time

import numpy as np

from river_pa.evaluate import fastmetrics
from river_pa.evaluate import datasets

__all__ = ["main", "evaluate", "Result"]

DEFAULT_METRICS = {
    "binary": ["Accuracy", "F1", "LogLoss"],
    "multiclass": ["Accuracy", "MacroF1", "CrossEntropy"],
    "regression": ["MAE", "RMSE", "R2"],
}
DEFAULT_MODELS = {"binary": "PAClassifier", "multiclass": "PAMultiClassifier",
                  "regression": "PARegressor"}


class UsageError(ValueError):
    """A bad command line: reported on one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="river-pa evaluate", description=__doc__.split("\n\n")[0])
    p.add_argument("data", nargs="?", default="phishing",
                   help=f"a data set ({', '.join(datasets.names())}) or a libsvm, CSV or JSONL "
                   "file (default: River's bundled phishing)")
    p.add_argument("--target", help="target column of a CSV file")
    p.add_argument("--task", choices=datasets.TASKS, help="override the inferred task")
    p.add_argument("--model", help="river_pa class name or 'module:factory' "
                   "(default by task: PAClassifier, PAMultiClassifier, PARegressor)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="model parameter, repeatable; values parsed as JSON (numbers, "
                   "true/false/null), else strings")
    p.add_argument("--params", metavar="JSON", help="model parameters as a JSON object")
    p.add_argument("--delay", type=int, default=0, metavar="N",
                   help="event i's label is learned just before event i+N is predicted "
                   "(River's integer delay: 0 and 1 both mean no delay)")
    p.add_argument("--metric", action="append", default=[],
                   help="river.metrics class name, repeatable or comma-separated "
                   "(default: Accuracy, F1, LogLoss / MAE, RMSE, R2)")
    p.add_argument("--limit", type=int, metavar="N", help="evaluate the first N events only")
    p.add_argument("--every", type=int, default=1000, metavar="N",
                   help="a report row (and progress update) every N events (default 1000)")
    p.add_argument("--report", metavar="PATH", help="JSON summary; CSV rows next to it")
    p.add_argument("--plot", metavar="PATH.png", help="learning curves")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


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
    """Merge ``--params JSON`` and ``--param key=value`` (the latter win)."""
    params = {}
    if text:
        try:
            params = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--params is not valid JSON: {exc}") from None
        if not isinstance(params, dict):
            raise UsageError(f"--params must be a JSON object, got {text!r}")
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param expects KEY=VALUE, got {pair!r}")
        params[key] = parse_value(value)
    return params


def build_model(name: str | None, params: dict, task: str):
    from river_pa import registry

    if name is None and DEFAULT_MODELS[task] not in registry.learners():
        raise UsageError(f"river_pa has no {DEFAULT_MODELS[task]} here for {task} data; give "
                         "--model, e.g. river.linear_model:SoftmaxRegression")
    name = name or DEFAULT_MODELS[task]
    if name not in registry.learners() and ":" not in name:
        raise UsageError(
            f"unknown model {name!r}; choose one of {', '.join(sorted(registry.learners()))}, "
            "or give an import path 'module:factory'"
        )
    try:
        return registry.make_model(name, params)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def metric_names(values: list[str], task: str) -> list[str]:
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    return names or DEFAULT_METRICS[task]


def build_metrics(names: list[str], model) -> list:
    from river import metrics

    valid = sorted(
        n for n in dir(metrics)
        if isinstance(getattr(metrics, n), type) and issubclass(getattr(metrics, n),
                                                                metrics.base.Metric)
    )
    out = []
    for name in names:
        if name not in valid:
            raise UsageError(f"unknown metric {name!r}; choose one of {', '.join(valid)}")
        metric = getattr(metrics, name)()
        if not metric.works_with(model):
            raise UsageError(
                f"metric {name} does not work with {type(model).__name__}; the default metrics "
                "follow the data's task: give --metric names for this model, --task, or a "
                "--model for this task"
            )
        out.append(metric)
    return out


# -- running -------------------------------------------------------------------------------


@dataclasses.dataclass
class Row:
    """One checkpoint: events seen, metric values, throughput since the last row, memory."""

    step: int
    values: dict
    events_per_s: float
    rss_mib: float


@dataclasses.dataclass
class Result:
    rows: list
    values: dict
    seconds: float
    path: str

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

    def __init__(self, on_row):
        self.rows = []
        self._on_row = on_row
        self._start = self._last = time.perf_counter()
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


def _compiled_applies(data, model, delay: int) -> bool:
    from river_pa.linear_model.pa import PAClassifier, PARegressor

    kind = {PAClassifier: "binary", PARegressor: "regression"}.get(type(model))
    return data.csr is not None and delay == 0 and kind == data.task


def _margin_tracker(names: list[str], model, task: str):
    """Metrics fed from margins: compiled when every name has a compiled twin (River's
    metric module, which imports scipy.stats, is then never imported), else River's."""
    if all(n in fastmetrics.SUPPORTED[task] for n in names):
        return fastmetrics.MarginMetrics(names, task)
    return fastmetrics.RiverMarginMetrics(build_metrics(names, model), task)


def _run_compiled(data, model, names: list[str], every: int, clock: _Clock) -> str | None:
    """Progressive validation in compiled blocks of `every` events (the model's
    `progressive_csr`); None if not applicable (two columns of the first block share a weight).
    A later block whose columns share a weight is learned one event at a time."""
    csr = data.csr
    keys = csr.keys if csr.keys is not None else range(int(csr.indices.max(initial=-1)) + 1)
    tracker = _margin_tracker(names, model, data.task)
    for lo in range(0, len(csr), every):
        hi = min(lo + every, len(csr))
        start, end = csr.indptr[lo], csr.indptr[hi]
        block = (csr.indptr[lo : hi + 1] - start, csr.indices[start:end], csr.data[start:end])
        try:
            margins = model.progressive_csr(*block, csr.y[lo:hi], keys)
        except ValueError:
            if lo == 0:
                return None
            margins = _margins_one_by_one(model, *block, csr.y[lo:hi], keys)
        tracker.update(csr.y[lo:hi], margins)
        clock.checkpoint(hi, tracker.values())
    return "compiled (learn_csr)"


def _margins_one_by_one(model, indptr, indices, data, y, keys) -> np.ndarray:
    """The margins of a predict-then-learn loop over the rows of a CSR block, as dicts."""
    margin = getattr(model, "decision_function_one", model.predict_one)
    out = np.empty(len(y))
    for i in range(len(y)):
        lo, hi = indptr[i], indptr[i + 1]
        x = {keys[j]: v for j, v in zip(indices[lo:hi].tolist(), data[lo:hi].tolist())}
        out[i] = margin(x)
        model.learn_one(x, y[i])
    return out


def _run_river(data, model, names: list[str], delay: int, every: int, clock: _Clock) -> str:
    from river import evaluate as river_evaluate
    from river import metrics as river_metrics

    metrics = build_metrics(names, model)
    bundle = river_metrics.base.Metrics(metrics)
    read = 0

    def events():
        nonlocal read
        for read, event in enumerate(data, start=1):  # read: the events read so far
            yield event

    steps = river_evaluate.iter_progressive_val_score(
        events(), model, bundle, delay=delay or None, step=every
    )
    try:
        for state in steps:
            clock.checkpoint(state["Step"], {type(m).__name__: m.get() for m in metrics})
    except (TypeError, ValueError) as exc:  # name where: River's loop does not
        where = f"event {read}" + (f" (or the one it learned, {delay} earlier)" if delay else "")
        raise type(exc)(f"{data.name}: {where}: {exc}") from exc
    if not clock.rows or clock.rows[-1].step != len(data):
        clock.checkpoint(len(data), {type(m).__name__: m.get() for m in metrics})
    return "River iter_progressive_val_score" + (f" (delay {delay})" if delay else "")


def evaluate(data, model, metrics: list[str], delay: int = 0, every: int = 1000,
             on_row=None) -> Result:
    """Progressive validation of `model` on `data` (a `datasets.Data`) with the River
    metrics named in `metrics`.

    Uses the compiled path when it applies (see the module docstring). `on_row(row)` is
    called at every checkpoint (every `every` events and at the end).

    >>> from river_pa import PAClassifier
    >>> from river_pa.evaluate import datasets
    >>> result = evaluate(datasets.load("phishing"), PAClassifier(C=0.1), ["Accuracy"])
    >>> result.values, result.events
    ({'Accuracy': 0.8752}, 1250)

    """
    if delay < 0:
        raise UsageError(f"--delay must be >= 0, got {delay}")
    if every < 1:
        raise UsageError(f"--every must be >= 1, got {every}")
    if len(data) == 0:
        raise UsageError(f"{data.name} has no events")
    clock = _Clock(on_row)
    path = None
    if _compiled_applies(data, model, delay):
        path = _run_compiled(data, model, metrics, every, clock)
    if path is None:
        path = _run_river(data, model, metrics, delay, every, clock)
    return Result(clock.rows, clock.rows[-1].values, clock.seconds, path)


# -- output --------------------------------------------------------------------------------


def write_report(path: str, result: Result, summary: dict) -> str:
    """Write the JSON summary at `path` and the rows as CSV next to it; returns the CSV path."""
    stem = path[:-5] if path.endswith(".json") else path
    csv_path = stem + ".csv"
    names = list(result.values)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(csv_path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["step", *names, "events_per_s", "rss_mib"])
        for row in result.rows:
            writer.writerow([row.step, *(row.values[n] for n in names),
                             round(row.events_per_s, 1), round(row.rss_mib, 1)])
    with open(path, "w") as f:
        json.dump({**summary, "rows_csv": os.path.basename(csv_path)}, f, indent=2, default=repr)
        f.write("\n")
    return csv_path


def write_plot(path: str, result: Result, title: str) -> None:
    """Learning curves: one panel per metric, value against events seen."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result.values)
    steps = [r.step for r in result.rows]
    fig, axes = plt.subplots(len(names), 1, figsize=(7, 2.4 * len(names)), sharex=True,
                             squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        ax.plot(steps, [r.values[name] for r in result.rows])
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("events")
    fig.suptitle(title)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _print_summary(summary: dict, result: Result) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{summary['model']}[/bold] on [bold]{summary['data']}[/bold]: "
                  f"{summary['events']:,} events, {summary['task']}", highlight=False)
    table = Table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in result.values.items():
        table.add_row(name, f"{value:.6f}")
    table.add_row("events/s", f"{summary['events_per_s']:,.0f}")
    table.add_row("seconds", f"{summary['seconds']:.3f}")
    table.add_row("path", summary["path"])
    console.print(table)


class _Progress:
    """A rich progress bar with the live metric on stderr (TTY only)."""

    def __init__(self, total: int, label: str):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self._bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                             MofNCompleteColumn(), TextColumn("{task.fields[metric]}"),
                             console=Console(stderr=True), transient=True)
        self._task = self._bar.add_task(label, total=total, metric="")

    def __enter__(self):
        self._bar.start()
        return self

    def __exit__(self, *exc):
        self._bar.stop()

    def __call__(self, row: Row) -> None:
        name, value = next(iter(row.values.items()))
        self._bar.update(self._task, completed=row.step, metric=f"{name} {value:.4f}")


def _setup(args):
    data = datasets.load(args.data, target=args.target, task=args.task)
    if args.limit is not None:
        if args.limit < 1:
            raise UsageError(f"--limit must be >= 1, got {args.limit}")
        data = data.head(args.limit)
    params = parse_params(args.param, args.params)
    model = build_model(args.model, params, data.task)
    names = metric_names(args.metric, data.task)
    if not all(n in fastmetrics.SUPPORTED.get(data.task, {}) for n in names):
        build_metrics(names, model)  # validate the names now: a usage error, status 2
    return data, model, names


def main(argv: list[str] | None = None) -> int:
    """Run `river-pa evaluate` with the given arguments; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = _parser().parse_args(argv)
        data, model, metrics = _setup(args)
    except ValueError as exc:  # UsageError and data/model errors: one line, status 2
        print(f"river-pa evaluate: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return exc.code or 0
    show = not args.quiet and sys.stderr.isatty()
    progress = _Progress(len(data), data.name) if show else None
    try:
        if progress:
            with progress:
                result = evaluate(data, model, metrics, args.delay, args.every, progress)
        else:
            result = evaluate(data, model, metrics, args.delay, args.every)
    except UsageError as exc:
        print(f"river-pa evaluate: {exc}", file=sys.stderr)
        return 2
    except (TypeError, ValueError) as exc:
        print(f"river-pa evaluate: event rejected: {exc}", file=sys.stderr)
        return 1
    summary = {
        "data": data.name, "task": data.task, "model": type(model).__name__,
        "params": model._get_params(), "metrics": result.values, "events": result.events,
        "delay": args.delay, "seconds": result.seconds,
        "events_per_s": result.events / max(result.seconds, 1e-9), "path": result.path,
    }
    _print_summary(summary, result)
    try:  # after the summary: a bad output path does not lose the run's figures
        if args.report:
            write_report(args.report, result, summary)
        if args.plot:
            write_plot(args.plot, result, f"{summary['model']} on {data.name}")
    except (OSError, ValueError) as exc:
        print(f"river-pa evaluate: cannot write the outputs: {exc}", file=sys.stderr)
        return 1
    return 0
