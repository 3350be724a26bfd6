"""`river-pa report FILE`: a PNG learning curve and a summary table."""

from __future__ import annotations

import json

from river import metrics

from river_pa.connectors import report
from river_pa.connectors.reporting import Stats


def test_report_renders_png_and_table(tmp_path, capsys):
    stats = Stats(metrics.Accuracy(), window=3)
    lines = []
    for i, (y, p) in enumerate([(True, True), (False, True), (True, True), (True, False)]):
        stats.counts["events"] += 1
        stats.score(y, p, delay_ms=100 * i)
        lines.append(json.dumps({**stats.snapshot(pending=0), "throughput_eps": 10.0}))
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n{\"torn")
    assert report.main([str(path)]) == 0
    png = tmp_path / "r.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    out = capsys.readouterr().out
    assert "0.500000" in out and "0.333333" in out  # cumulative 2/4, rolling 1/3
