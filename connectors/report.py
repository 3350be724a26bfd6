"""`river-pa report FILE`: a learning-curve PNG and a summary table from a JSONL report.

Reads the lines the daemon appends (`--report-path`); each line is one snapshot.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["load", "main", "plot", "summary_table"]


def load(path: str | Path) -> list[dict]:
    """The snapshots of a JSONL report, skipping a torn last line."""
    out = []
    for line in Path(path).read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def plot(reports: list[dict], png: str | Path) -> None:
    """Cumulative and rolling metric against events seen."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = [r["events"] for r in reports]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(events, [r["value"] for r in reports], label=f"cumulative {reports[-1]['metric']}")
    ax.plot(events, [r["rolling"] for r in reports], alpha=0.6,
            label=f"rolling ({reports[-1]['window']} labels)")
    ax.set_xlabel("events")
    ax.set_ylabel(reports[-1]["metric"])
    ax.set_title("river-pa serve: progressive validation")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def summary_table(report: dict):
    """A rich Table of the last snapshot."""
    from rich.table import Table

    table = Table(title="river-pa serve report")
    table.add_column("figure")
    table.add_column("value", justify="right")
    delay = report.get("label_delay_ms") or {}
    rows = [
        (f"{report['metric']} (cumulative)", f"{report['value']:.6f}"),
        (f"{report['metric']} (rolling {report['window']})", f"{report['rolling']:.6f}"),
        *((k, str(report[k])) for k in ("events", "labelled", "learned", "pending", "expired",
                                        "orphan_labels", "dead_lettered")),
        *((f"dead letters: {k}", str(v)) for k, v in report["dead_letter_reasons"].items()),
        ("label delay mean / p50 / p99 (ms)",
         " / ".join("-" if delay.get(k) is None else f"{delay[k]:.0f}" for k in ("mean", "p50", "p99"))),
        ("throughput (events/s, last interval)", f"{report.get('throughput_eps', 0):.0f}"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def main(argv: list[str] | None = None) -> int:
    """Render FILE's learning curve to a PNG and print the last snapshot as a table."""
    parser = argparse.ArgumentParser(prog="river-pa report", description=__doc__.split("\n")[0])
    parser.add_argument("file", help="JSONL report written by river-pa serve")
    parser.add_argument("--png", help="output image (default: FILE with .png)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    reports = load(args.file)
    if not reports:
        print(f"river-pa report: {args.file} holds no report", file=sys.stderr)
        return 1
    png = args.png or str(Path(args.file).with_suffix(".png"))
    plot(reports, png)
    from rich.console import Console

    Console().print(summary_table(reports[-1]))
    print(f"learning curve: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
