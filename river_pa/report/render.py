"""Write, read and render reports (the format is in the package docstring)."""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from pathlib import Path

__all__ = ["append", "check_output", "comparison_table", "create", "load", "main", "plot",
           "print_comparison", "print_summary", "summary_table", "write"]

_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO",
          stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket"}


def check_output(path: str | Path, flag: str, inputs=(), plot: bool = False) -> None:
    """Check, before a run, that `path` can take an output: it is new or an existing regular
    file (never a device, FIFO, symbolic link or directory), it is none of `inputs` (the
    files the run reads), its folder exists (or is created) and is writable and, for a plot
    (`plot=True`), its suffix is a format matplotlib writes.

    Raises ValueError naming `flag` and the path.

    >>> check_output("/dev/null", "--report-path")
    Traceback (most recent call last):
    ...
    ValueError: --report-path /dev/null is a character device, not a regular file: give the path of a new or regular file

    """
    where = f"{flag} {path}"
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ValueError(f"{where}: {exc.strerror}") from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise ValueError(f"{where} is {kind}, not a regular file: give the path of a new or "
                         "regular file")
    for source in inputs:
        if mode is not None and os.path.exists(source) and os.path.samefile(path, source):
            raise ValueError(f"{where} is the input file {source}: give another path")
    if plot:
        from matplotlib.backend_bases import FigureCanvasBase

        formats = FigureCanvasBase.get_supported_filetypes()
        suffix = Path(path).suffix.lstrip(".").lower()
        if suffix not in formats:
            raise ValueError(f"{where}: format {suffix or '(no suffix)'!r} is not supported; "
                             f"use one of {', '.join(sorted(formats))}")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        raise ValueError(f"{where}: cannot write in {folder}: {exc.strerror or exc}") from None


def _temporary(path: str | Path) -> str:
    """A new empty file beside `path` (same folder, so `os.replace` is atomic), same suffix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    return tmp


def create(path: str | Path):
    """A new, empty JSONL report at `path`, open for `write`: an existing file there is
    replaced atomically (a new file renamed over it, never deleted first), so a report is
    one run and the snapshots written so far stay if the run is interrupted."""
    tmp = _temporary(path)
    os.replace(tmp, path)
    return open(path, "a")


def write(fh, snapshots: list[dict]) -> None:
    """Append snapshots to a report opened by `create` (or `open(path, "a")`) and flush."""
    for snapshot in snapshots:
        fh.write(json.dumps(snapshot, default=repr) + "\n")
    fh.flush()


def append(path: str | Path, snapshots: list[dict]) -> None:
    """Append snapshots to the JSONL report at `path`, creating its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        write(fh, snapshots)


def load(path: str | Path) -> list[dict]:
    """The snapshots of a report, skipping lines that are not snapshots (a torn last line).

    Raises OSError if the file cannot be read.

    """
    out = []
    with open(path, "rb") as fh:
        for line in fh:
            try:
                snapshot = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(snapshot, dict) and isinstance(snapshot.get("metrics"), dict):
                out.append(snapshot)
    return out


def _title(snapshot: dict, n_models: int = 1) -> str:
    if n_models > 1:
        return f"{n_models} models on {snapshot.get('data')}"
    if "model" in snapshot and "data" in snapshot:
        return f"{snapshot['model']} on {snapshot['data']}"
    return "river-pa serve"


def _by_model(snapshots: list[dict]) -> dict:
    """{model: its snapshots in order}: a report of `evaluate --model A --model B` holds the
    snapshots of each model, each naming it; a snapshot that names none belongs to the run of
    the next one that does (a one-model run names its model in its last snapshot only)."""
    model, models = None, []
    for snapshot in reversed(snapshots):
        model = snapshot.get("model", model)
        models.append(model)
    out = {}
    for snapshot, model in zip(snapshots, reversed(models)):
        out.setdefault(model, []).append(snapshot)
    return out


def plot(snapshots: list[dict], png: str | Path) -> None:
    """Learning curves: one panel per metric, cumulative (and rolling) value against events;
    one line per model when the report holds several."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    last = snapshots[-1]
    runs = _by_model(snapshots)
    names = list(last["metrics"])
    fig, axes = plt.subplots(len(names), 1, figsize=(7, 2.4 * len(names) + 0.6), sharex=True,
                             squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        for model, run in runs.items():
            events = [s["events"] for s in run]
            ax.plot(events, [s["metrics"].get(name) for s in run],
                    label=model if len(runs) > 1 else "cumulative")
            if "rolling" in run[-1]:
                ax.plot(events, [s.get("rolling", {}).get(name) for s in run], alpha=0.6,
                        label=f"rolling ({run[-1].get('window')} labels)")
        if len(runs) > 1 or "rolling" in last:
            ax.legend(loc="best", fontsize="small")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("events")
    fig.suptitle(f"{_title(last, len(runs))}: progressive validation")
    fig.tight_layout()
    tmp = _temporary(png)  # written beside, then renamed over: never a half-written image
    try:
        fig.savefig(tmp, dpi=100, format=Path(png).suffix.lstrip(".").lower() or None)
        os.replace(tmp, png)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.remove(tmp)


def _text(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1e5 else f"{value:.6g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


# figures as the table names them: a reader should not need the report format to read it
_LABELS = {"events_per_s": "events/s (learning loop)", "throughput_eps": "events/s",
           "seconds": "seconds (learning loop)", "rss_mib": "memory (MiB resident)",
           "compile_s": "start-up s (compile or load kernels)"}
_FORMATS = {"events_per_s": ",.0f", "throughput_eps": ",.0f", "seconds": ".3f",
            "rss_mib": ".0f", "compile_s": ".2f"}


def _rows(snapshot: dict):
    """(label, text) of every figure of `snapshot` worth a line: metrics first (6 decimals),
    then the others. The learning loop's events/s of a finished evaluate run is its one
    throughput (the last interval's rate beside it read as a second, contradicting figure);
    the start-up cost is its own line, in seconds. A serve report that scored no label (a
    predictor's) shows no metric rather than a metric of 0, as the metrics endpoint does."""
    if _scored(snapshot):
        for name, value in snapshot["metrics"].items():
            yield name, "-" if value is None else f"{value:.6f}"
        for name, value in snapshot.get("rolling", {}).items():
            yield (f"{name} (rolling {snapshot.get('window')})",
                   "-" if value is None else f"{value:.6f}")
    for key, value in snapshot.items():
        if key in ("metrics", "rolling", "window") or \
                (key == "throughput_eps" and "events_per_s" in snapshot):
            continue
        if isinstance(value, float) and key in _FORMATS:
            yield _LABELS[key], format(value, _FORMATS[key])
        elif isinstance(value, dict):
            yield from _nested(key, value)
        else:
            yield _LABELS.get(key, key), _text(value)


def _nested(prefix: str, figures: dict):
    """A line per figure of a nested dict (a serve report's challengers, each with its
    metrics), labelled by its path: "challengers: c01: metrics: Accuracy"."""
    for key, value in figures.items():
        if isinstance(value, dict):
            yield from _nested(f"{prefix}: {key}", value)
        else:
            yield f"{prefix}: {key}", _text(value)


def _scored(snapshot: dict) -> bool:
    """False for a serve report of a role that scored no label (evaluate's always score)."""
    return snapshot.get("labelled", 1) != 0


def summary_table(snapshot: dict):
    """A rich Table of one snapshot (`_rows`)."""
    from rich.table import Table

    table = Table(title=_title(snapshot))
    table.add_column("figure")
    table.add_column("value", justify="right")
    for label, text in _rows(snapshot):
        table.add_row(label, text)
    return table


def print_summary(snapshot: dict) -> None:
    """Print `summary_table(snapshot)` on stdout."""
    from rich.console import Console

    Console().print(summary_table(snapshot))


def comparison_table(snapshots: list[dict]):
    """A rich Table with one row per model of a report: its last metrics and events/s."""
    from rich.table import Table

    runs = _by_model(snapshots)
    lasts = [run[-1] for run in runs.values()]
    names = list(lasts[0]["metrics"])
    table = Table(title=f"{_title(lasts[0], len(runs))}, {_text(lasts[0]['events'])} events")
    table.add_column("model")
    for name in [*names, "events/s"]:
        table.add_column(name, justify="right")
    for model, last in zip(runs, lasts):
        values = ["-" if last["metrics"].get(n) is None else f"{last['metrics'][n]:.6f}"
                  for n in names]
        rate = last.get("events_per_s")
        table.add_row(str(model), *values, "-" if rate is None else format(rate, ",.0f"))
    return table


def print_comparison(snapshots: list[dict]) -> None:
    """Print `comparison_table(snapshots)` on stdout."""
    from rich.console import Console

    Console().print(comparison_table(snapshots))


def main(file: str, png: str | None = None) -> int:
    """`river-pa report FILE`: write the learning curves to a PNG (default FILE with .png)
    and print the last snapshot as a table; 1 with one line if FILE holds no report."""
    try:
        snapshots = load(file)
    except OSError as exc:
        print(f"river-pa report: cannot read {file}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    if not snapshots:
        print(f"river-pa report: {file} holds no report", file=sys.stderr)
        return 1
    if not _scored(snapshots[-1]):
        print_summary(snapshots[-1])
        print("no learning curve: no label was scored (a predictor's report, or a learner's "
              "before its first label)")
        return 0
    png = png or str(Path(file).with_suffix(".png"))
    try:
        check_output(png, "--png", inputs=[file], plot=True)
    except ValueError as exc:
        print(f"river-pa report: {exc}", file=sys.stderr)
        return 2
    existed = os.path.exists(png)
    try:
        plot(snapshots, png)
    except (OSError, ValueError) as exc:
        print(f"river-pa report: cannot write {png}: {exc}", file=sys.stderr)
        return 1
    if len(_by_model(snapshots)) > 1:
        print_comparison(snapshots)
    else:
        print_summary(snapshots[-1])
    print(f"learning curve: {png}" + (" (replaced the file that was there)" if existed else ""))
    return 0
