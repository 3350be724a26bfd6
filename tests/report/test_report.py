"""`river-pa report FILE` renders a report written by `evaluate` or by the daemon's reporter:
the PNG exists and the table shows the values read back."""

from __future__ import annotations

import itertools
import math
import os
import sys

import pytest
from river import datasets as river_datasets
from river import evaluate as river_evaluate
from river import metrics

from river_pa import PAClassifier, cli, report
from river_pa.connectors.observe.reporting import Reporter, Stats, serve_metrics

PNG = b"\x89PNG\r\n\x1a\n"


def render(capsys, path):
    assert cli.main(["report", str(path)]) == 0
    png = path.with_suffix(".png")
    assert png.read_bytes()[:8] == PNG and png.stat().st_size > 10_000
    return capsys.readouterr().out


def test_a_daemon_report_renders(tmp_path, capsys):
    path = tmp_path / "serve.jsonl"
    reporter = Reporter(every_events=1, every_seconds=0, path=str(path), send=lambda r: None)
    stats = Stats(serve_metrics(["Accuracy"], PAClassifier()), window=3)
    for i, (y, p) in enumerate([(True, True), (False, True), (True, True), (True, False)]):
        stats.counts["events"] += 1
        stats.score(y, p, delay_ms=100 * i)
        snapshot = stats.snapshot(pending=0)
        snapshot["challengers"] = {"c01": {"metrics": {"Accuracy": 0.625}, "errors": 0}}
        reporter.publish(snapshot, i + 1)
    with open(path, "a") as fh:
        fh.write('{"torn')
    out = render(capsys, path)
    assert "0.500000" in out and "0.333333" in out  # cumulative 2/4, rolling 1/3
    assert "label_delay_ms: p50" in out and "300" in out  # the largest delay
    assert "challengers: c01: metrics: Accuracy" in out and "0.625" in out  # not a raw dict


def test_an_evaluate_report_renders(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    assert cli.main(["evaluate", "phishing", "--limit", "500", "--every", "100", "--quiet",
                     "--metric", "Accuracy", "--metric", "LogLoss",
                     "--report-path", str(path)]) == 0
    capsys.readouterr()
    bundle = metrics.base.Metrics([metrics.Accuracy(), metrics.LogLoss()])
    river_evaluate.progressive_val_score(itertools.islice(river_datasets.Phishing(), 500),
                                         PAClassifier(), bundle)
    out = render(capsys, path)
    for metric in bundle:
        assert f"{metric.get():.6f}" in out
    assert "PAClassifier on phishing" in out
    assert [s["events"] for s in report.load(path)] == [100, 200, 300, 400, 500]


def test_serve_takes_several_metrics_and_reports_each():
    stats = Stats(serve_metrics(["Accuracy,LogLoss"], PAClassifier()), window=2)
    for y, proba in [(True, {True: 0.9, False: 0.1}), (False, {True: 0.6, False: 0.4})]:
        stats.score(y, proba, delay_ms=None)
    snapshot = stats.snapshot(pending=0)
    assert snapshot["metrics"]["Accuracy"] == 0.5  # the label-metric gets the argmax
    assert snapshot["metrics"]["LogLoss"] == pytest.approx(
        -(math.log(0.9) + math.log(0.4)) / 2)
    assert stats.uses_proba


def test_a_file_without_snapshots_is_one_line(tmp_path, capsys):
    path = tmp_path / "empty.jsonl"
    path.write_text("not json\n[1, 2]\n")
    assert cli.main(["report", str(path)]) == 1
    assert capsys.readouterr().err == f"river-pa report: {path} holds no report\n"
    assert cli.main(["report", str(tmp_path / "missing.jsonl")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_report_into_a_closed_pipe_ends_quietly(tmp_path, monkeypatch, capsys):
    """`river-pa report FILE | head -2`: the reader leaves after the table (which rich writes,
    and whose broken pipe rich handles itself), so the last line, the path of the PNG, raises
    BrokenPipeError (it was a traceback); the command ends quietly with SIGPIPE's status 141.
    stdout is a real pipe whose reading end is closed, and the table is skipped, so the first
    write is that last line."""
    path = tmp_path / "run.jsonl"
    assert cli.main(["evaluate", "phishing", "--limit", "300", "--every", "100", "--quiet",
                     "--report-path", str(path)]) == 0
    read_end, write_end = os.pipe()
    os.close(read_end)
    with open(write_end, "w") as closed_pipe:
        monkeypatch.setattr(sys, "stdout", closed_pipe)
        monkeypatch.setattr(report.render, "print_summary", lambda snapshot: None)
        assert cli.main(["report", str(path)]) == 141
        monkeypatch.undo()
    assert capsys.readouterr().err == ""
