"""Write, read and render reports (the format is in the package docstring)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

__all__ = ["append", "load", "main", "plot", "print_summary", "summary_table"]


def append(path: str | Path, snapshots: list[dict]) -> None:
    """Append snapshots to the JSONL report at `path`, creating its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        for snapshot in snapshots:
            fh.write(json.dumps(snapshot, default=repr) + "\n")


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


def _title(snapshot: dict) -> str:
    if "model" in snapshot and "data" in snapshot:
        return f"{snapshot['model']} on {snapshot['data']}"
    return "river-pa serve"


def plot(snapshots: list[dict], png: str | Path) -> None:
    """Learning curves: one panel per metric, cumulative (and rolling) value against events."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    last = snapshots[-1]
    names = list(last["metrics"])
    events = [s["events"] for s in snapshots]
    fig, axes = plt.subplots(len(names), 1, figsize=(7, 2.4 * len(names) + 0.6), sharex=True,
                             squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        ax.plot(events, [s["metrics"].get(name) for s in snapshots], label="cumulative")
        if "rolling" in last:
            ax.plot(events, [s.get("rolling", {}).get(name) for s in snapshots], alpha=0.6,
                    label=f"rolling ({last.get('window')} labels)")
            ax.legend(loc="best")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("events")
    fig.suptitle(f"{_title(last)}: progressive validation")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)


def _text(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1e5 else f"{value:.6g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def summary_table(snapshot: dict):
    """A rich Table of one snapshot: metrics first (6 decimals), then every other figure."""
    from rich.table import Table

    table = Table(title=_title(snapshot))
    table.add_column("figure")
    table.add_column("value", justify="right")
    for name, value in snapshot["metrics"].items():
        table.add_row(name, "-" if value is None else f"{value:.6f}")
    for name, value in snapshot.get("rolling", {}).items():
        table.add_row(f"{name} (rolling {snapshot.get('window')})",
                      "-" if value is None else f"{value:.6f}")
    for key, value in snapshot.items():
        if key in ("metrics", "rolling", "window"):
            continue
        if isinstance(value, dict):
            for sub, v in value.items():
                table.add_row(f"{key}: {sub}", _text(v))
        else:
            table.add_row(key, _text(value))
    return table


def print_summary(snapshot: dict) -> None:
    """Print `summary_table(snapshot)` on stdout."""
    from rich.console import Console

    Console().print(summary_table(snapshot))


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
    png = png or str(Path(file).with_suffix(".png"))
    try:
        plot(snapshots, png)
    except (OSError, ValueError) as exc:
        print(f"river-pa report: cannot write {png}: {exc}", file=sys.stderr)
        return 1
    print_summary(snapshots[-1])
    print(f"learning curve: {png}")
    return 0
