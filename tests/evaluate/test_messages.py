"""What a new user of `river-pa evaluate` reads: the summary's labels and task, the path
message, the help, and River's imports outside the timed run."""

from __future__ import annotations

import json
import subprocess
import sys

from river_pa import cli, report
from river_pa.evaluate import datasets


def test_integer_classes_are_regression_and_the_summary_says_why(tmp_path, capsys):
    data = tmp_path / "three.svm"
    data.write_text("".join(f"{i % 3 + 1} 1:{i % 5}\n" for i in range(30)))
    path = tmp_path / "run.jsonl"
    assert cli.main(["evaluate", str(data), "--quiet", "--report-path", str(path)]) == 0
    summary = report.load(path)[-1]
    assert summary["task"] == "regression"
    assert summary["task_from"] == (
        "inferred: 3 distinct numeric labels in the first 30 events (1.0, 2.0, 3.0), not two: give "
        "--task multiclass if they are classes")
    assert "task_from" in capsys.readouterr().out
    assert cli.main(["evaluate", str(data), "--quiet", "--task", "multiclass",
                     "--report-path", str(path)]) == 0
    summary = report.load(path)[-1]
    assert (summary["task"], summary["task_from"]) == ("multiclass", "given")
    assert summary["path"] == ("River iter_progressive_val_score: PAMultiClassifier has no "
                               "progressive_csr (the compiled path exists for PAClassifier and "
                               "PARegressor only)")


def test_the_table_labels_both_rates(capsys):
    assert cli.main(["evaluate", "phishing", "--limit", "200", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "events/s (whole run)" in out and "events/s (last interval)" in out
    assert "events_per_s" not in out and "throughput_eps" not in out


def test_help_shows_one_default_per_flag_and_the_task_choices(capsys):
    assert cli.main(["serve", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    start = text.index("--metric NAME river.metrics")
    metric = text[start:text.index(" --", start + 5)]
    assert metric.count("default") == 1 and "(default: Accuracy, or MAE for regressors" in metric
    assert cli.main(["evaluate", "--help"]) == 0
    assert "--task {binary,multiclass,regression}" in capsys.readouterr().out
    assert cli.main(["evaluate", "--task", "ranking"]) == 2
    assert "invalid choice: 'ranking'" in capsys.readouterr().err


def test_rivers_path_imports_river_before_its_clock_starts(tmp_path):
    """In a fresh process (River not yet imported), the clock of River's path starts with
    river.evaluate and river.metrics already imported, so their 1-3 s are not in `seconds`."""
    code = """if True:
        import json, sys
        from river_pa.evaluate import datasets, job
        seen = []
        class Clock(job._Clock):
            def __init__(self, *args):
                seen.append("river.metrics" in sys.modules and "river.evaluate" in sys.modules)
                super().__init__(*args)
        job._Clock = Clock
        from river_pa import PAClassifier
        job.evaluate(datasets.load("phishing"), PAClassifier(), ["Accuracy"], delay=3)
        print(json.dumps(seen))
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout
    assert json.loads(out)[-1] is True


def test_task_reason_of_each_task():
    assert datasets.task_reason("binary", [0, 1, 1]) == \
        "inferred: 2 distinct labels in the first 3 events (0, 1)"
    assert datasets.task_reason("multiclass", ["a", "b", "c", "d", "e", "f"]) == (
        "inferred: 6 distinct labels in the first 6 events ('a', 'b', 'c', 'd', 'e', ...), "
        "not all numbers")
