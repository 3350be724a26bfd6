"""The --report-path of `river-pa evaluate`: a run's rows as `river_pa.report` snapshots, the
last one with the run's summary, written as the run goes (`ReportFile`)."""

from __future__ import annotations

from river_pa import report
from river_pa.evaluate.results import Result, Row

__all__ = ["ReportFile", "snapshot", "snapshots"]


def snapshot(row: Row) -> dict:
    """One report row as a `river_pa.report` snapshot."""
    return {"events": row.step, "metrics": row.values, "throughput_eps": row.events_per_s,
            "rss_mib": row.rss_mib}


def snapshots(result: Result, summary: dict) -> list[dict]:
    """The run as `river_pa.report` snapshots: one per row, the last one with the summary."""
    out = [snapshot(r) for r in result.rows]
    out[-1].update(summary)
    return out


class ReportFile:
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
