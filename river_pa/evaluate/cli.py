"""`river-pa evaluate`: the command line around `river_pa.evaluate.job`.

`run` takes the flags parsed by `river_pa.cli`: it opens the data, builds the models and
metrics (`river_pa.evaluate.params`), runs one model (`job.evaluate`, its report written as it
goes, its progress shown) or several in one pass (`job.evaluate_many`), prints the summary or
the comparison table and writes the --report-path and --plot. With no arguments it runs PA-I
on River's bundled Phishing data: the project's main job.

Exit status: 0 on success, 2 on a usage error (unknown data set, model, parameter or metric:
one line naming the valid choices; an unreadable data file or a bad line in it; a --report-path
or --plot that cannot take the output, checked before any event is read; an event of a CSV
or JSONL file that the model refuses, e.g. a string value: the message names the file and
line), 1 when the model rejects an event of a libsvm file or a River data set during the run
(the message names the data and the event number) or a write fails after the checks (after
the summary is printed).

"""

from __future__ import annotations

import os
import sys

from river_pa import report
from river_pa.evaluate import datasets, fastmetrics, progress
from river_pa.evaluate.files import DataError
from river_pa.evaluate.job import evaluate, evaluate_many
from river_pa.evaluate.kernels import numba_without_blas
from river_pa.evaluate.outputs import ReportFile, snapshots
from river_pa.evaluate.params import UsageError, build_metrics, build_model, parse_params
from river_pa.evaluate.shards import MAX_SHARDS, evaluate_shards
from river_pa.mixing import check_mixable

__all__ = ["run"]

DEFAULT_METRICS = {
    "binary": ["Accuracy", "F1", "LogLoss"],
    "multiclass": ["Accuracy", "MacroF1", "CrossEntropy"],
    "regression": ["MAE", "RMSE", "R2"],
}


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
    _check_shards(args, models)
    names = report.metric_names(args.metric) or DEFAULT_METRICS[source.task]
    if len(models) > 1 or not all(n in fastmetrics.SUPPORTED.get(source.task, {})
                                  for n in names):
        for model in models.values():
            build_metrics(names, model)  # validate the names now: a usage error, status 2
    return source, models, names


def _check_shards(args, models: dict) -> None:
    """UsageError for --shards flags that do not fit (their numbers, several models, a
    learner that cannot be mixed: `river_pa.mixing.check_mixable`'s line); sets their
    defaults."""
    if args.shards is None:
        if args.mix_every is not None or args.shard_by is not None:
            raise UsageError("--mix-every and --shard-by need --shards")
        return
    args.mix_every = 1000 if args.mix_every is None else args.mix_every
    args.shard_by = args.shard_by or "round-robin"
    for flag, value, most in (("--shards", args.shards, MAX_SHARDS),
                              ("--mix-every", args.mix_every, None)):
        if value < 1 or (most is not None and value > most):
            within = f"from 1 to {most}" if most else ">= 1"
            raise UsageError(f"{flag} must be {within}, got {str(value)[:40]}")
    if len(models) > 1:
        raise UsageError("--shards takes one --model")
    try:
        check_mixable(next(iter(models.values())))
    except ValueError as exc:
        raise UsageError(f"--shards: {exc}") from None


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
    numba_without_blas()
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
        out = ReportFile(args.report_path)
    except OSError as exc:
        print(f"river-pa evaluate: cannot write {args.report_path}: {exc}", file=sys.stderr)
        return 1
    shown = None if args.quiet else progress.Bar(data) if sys.stderr.isatty() else \
        progress.Lines(data.name)

    def on_row(row):
        out(row)
        if shown:
            shown(row)

    def job():
        if args.shards is None:
            return evaluate(data, model, metrics, args.delay, args.every, on_row)
        return evaluate_shards(data, model, metrics, args.shards, args.mix_every,
                               args.shard_by, args.delay, args.every, on_row)[0]

    try:
        if shown:
            with shown:
                result = job()
        else:
            result = job()
    except BaseException as exc:  # an error, Ctrl-C: the report keeps the rows so far
        out.close()
        if isinstance(exc, UsageError | DataError):  # a bad line met during the run
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
    if args.shards is not None:
        summary.update(shards=args.shards, mix_every=args.mix_every, shard_by=args.shard_by)
    rows = snapshots(result, summary)
    report.print_summary(rows[-1])
    return _write_outputs(args, rows, out)


def _run_many(args, data, models: dict, metrics: list[str]) -> int:
    """`run` for several models: one pass, one comparison table, one plot."""
    try:
        results = evaluate_many(data, models, metrics, args.delay, args.every)
    except (UsageError, DataError) as exc:
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


def _write_outputs(args, rows: list[dict], out: ReportFile | None = None) -> int:
    """Finish the --report-path (`out`, written as the run went, holding the last row; a new
    one for `rows` without it) with the summary in `rows[-1]` and write the --plot; 1 with
    one line if they cannot be written (the paths were checked before the run)."""
    try:  # after the summary: a failed write does not lose the run's figures
        if out is None:
            out = ReportFile(args.report_path)
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
