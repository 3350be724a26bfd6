"""What a new user of `river-pa evaluate` reads: the summary's labels and task, the path
message, the help, and River's imports outside the timed run."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from river_pa import cli, report
from river_pa.evaluate import datasets, progress, targets


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


def table(out: str) -> dict[str, str]:
    """{figure: value} of a printed summary table (rows that wrap are joined)."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 2 and cells[0]:
            rows[cells[0]] = cells[1]
        elif len(cells) == 2 and rows:  # a wrapped value
            rows[list(rows)[-1]] += " " + cells[1]
    return rows


def test_the_table_shows_one_throughput_and_the_start_up_as_its_own_line(capsys):
    # it showed "events/s (last interval) 214,595" beside "events/s (whole run) 6849.66",
    # "compile_s 8.91e-07", and "task_from: given" when no task was given
    assert cli.main(["evaluate", "phishing", "--limit", "200", "--quiet"]) == 0
    rows = table(capsys.readouterr().out)
    assert [k for k in rows if "events/s" in k] == ["events/s (learning loop)"]
    assert re.fullmatch(r"[\d,]+", rows["events/s (learning loop)"])
    assert re.fullmatch(r"\d+\.\d\d", rows["start-up s (compile or load kernels)"])
    assert rows["task_from"] == "the data set's"
    assert rows["kernels"] == "interpreted (a small job, 2,000 values: quicker than loading " \
                              "Numba's)"
    assert not {"events_per_s", "throughput_eps", "compile_s", "rss_mib"} & set(rows)


def test_the_paths_written_are_printed(tmp_path, capsys):
    report_path, plot = tmp_path / "run.jsonl", tmp_path / "run.png"
    assert cli.main(["evaluate", "phishing", "--limit", "200", "--quiet", "--report-path",
                     str(report_path), "--plot", str(plot)]) == 0
    assert capsys.readouterr().out.endswith(f"┘\nreport: {report_path}\nplot: {plot}\n")
    assert report_path.exists() and plot.exists()


def test_a_long_job_says_how_it_goes_on_a_stderr_that_is_not_a_terminal(monkeypatch, capsys):
    # a first run of `evaluate a9a` compiled for a minute with nothing shown in a log
    monkeypatch.setattr(progress, "PROGRESS_EVERY_S", 0.0)
    assert cli.main(["evaluate", "phishing", "--every", "500"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[-2:] == [line for line in err[-2:] if line.startswith("river-pa evaluate: phishing: ")]
    assert [line.split(": ", 2)[2].split(" (")[0] for line in err if "events," in line] == \
        [f"{n:,} events, Accuracy {a}" for n, a in ((500, "0.8080"), (1000, "0.8330"),
                                                    (1250, "0.8416"))]
    assert cli.main(["evaluate", "phishing", "--every", "500", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_a_report_that_scored_no_label_shows_no_metric(tmp_path, capsys):
    # a predictor's report said "Accuracy 0.000000" although it scores no labels
    path = tmp_path / "predict.jsonl"
    report.write(path.open("w"), [{"metrics": {"Accuracy": 0.0}, "rolling": {"Accuracy": 0.0},
                                   "window": 1000, "events": 625, "labelled": 0,
                                   "model_version": 3}])
    assert cli.main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    rows = table(out)
    assert "Accuracy" not in out and rows["events"] == "625" and rows["model_version"] == "3"
    assert out.endswith("no learning curve: no label was scored (a predictor's report, or a "
                        "learner's before its first label)\n")
    assert not path.with_suffix(".png").exists()


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
        class Clock(job.Clock):
            def __init__(self, *args):
                seen.append("river.metrics" in sys.modules and "river.evaluate" in sys.modules)
                super().__init__(*args)
        job.Clock = Clock
        from river_pa import PAClassifier
        job.evaluate(datasets.load("phishing"), PAClassifier(), ["Accuracy"], delay=3)
        print(json.dumps(seen))
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout
    assert json.loads(out)[-1] is True


def test_task_reason_of_each_task():
    assert targets.task_reason("binary", [0, 1, 1]) == \
        "inferred: 2 distinct labels in the first 3 events (0, 1)"
    assert targets.task_reason("multiclass", ["a", "b", "c", "d", "e", "f"]) == (
        "inferred: 6 distinct labels in the first 6 events ('a', 'b', 'c', 'd', 'e', ...), "
        "not all numbers")


def run_bad(capsys, *args) -> str:
    assert cli.main(["evaluate", *args, "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.removeprefix("river-pa evaluate: ").rstrip("\n")


def _unclosed_quote(tmp_path, capsys) -> str:
    """evaluate's one line for a CSV file whose third line opens a quote never closed."""
    path = tmp_path / "quote.csv"
    path.write_text('a,y\n1,0\n"2,1\n' + "3,0\n" * 50_000)
    err = run_bad(capsys, str(path), "--target", "y")
    assert err.startswith(f"{path}:")
    line = int(err.split(":")[1])
    assert 3 < line <= 50_003  # where the reader stopped, past the quote on line 3
    return err


def test_an_unclosed_csv_quote_is_one_line_naming_the_file_and_line(tmp_path, capsys):
    assert "field larger than field limit (131072) (an unclosed quote?)" in _unclosed_quote(
        tmp_path, capsys)


@pytest.mark.parametrize("text, message", [
    ('{"x": {"a": 1}}\n', "expected a JSON object {\"x\": {...}, \"y\": ...}; it has no 'y'"),
    ("[1, 2]\n", "expected a JSON object {\"x\": {...}, \"y\": ...}, got an array"),
    ('{"x": {"a": 1}, "y": 1' + "0" * 5000 + "}\n",
     "expected a JSON object {\"x\": {...}, \"y\": ...}, not valid JSON: Exceeds the limit"),
    ('{"x": {"a": 1}, "y": 1}\n{"x": {"a": NaN}, "y": 0}\n', "feature 'a' has a non-finite value nan"),
    ('{"x": {"a": 1}, "y": 1}\n\n{"x": {"a": 1e400}, "y": 0}\n',
     "feature 'a' has a non-finite value inf"),
])
def test_bad_jsonl_lines_name_the_file_and_line(tmp_path, capsys, text, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    line = text.rstrip("\n").count("\n") + 1
    assert run_bad(capsys, str(path)).startswith(f"{path}:{line}: {message}")


def test_non_finite_csv_values_name_the_line(tmp_path, capsys):
    path = tmp_path / "text.csv"
    path.write_text("a,b,y\n1,2,0\n3,4,1\ninf,1,0\n")
    err = run_bad(capsys, str(path), "--target", "y")
    assert err == f"{path}:4: feature 'a' has a non-finite value inf"


@pytest.mark.parametrize("delay", [0, 2])
def test_a_string_value_a_learner_refuses_names_the_file_and_line(tmp_path, capsys, delay):
    # the reader keeps strings (a River pipeline may encode them); PAClassifier refused the
    # event with exit status 1 and its number, not the line, unlike every other bad line
    path = tmp_path / "text.csv"
    path.write_text("a,b,y\n1,2,0\n3,4,1\n\"5\",x,0\n")
    err = run_bad(capsys, str(path), "--target", "y", "--delay", str(delay))
    learned = " (or the one it learned, 2 earlier)" if delay else ""
    assert err == f"{path}:4{learned}: feature 'b' has a non-numeric value 'x' of type str"


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-Infinity", "1e400"])
def test_a_non_finite_libsvm_value_says_so(tmp_path, capsys, value):
    path = tmp_path / "v.svm"
    path.write_text(f"1 1:1\n-1 1:{value}\n")
    assert run_bad(capsys, str(path)) == f"{path}:2: value is not finite"


def test_file_names_in_messages(tmp_path, capsys, monkeypatch):
    missing = tmp_path / "nonexist.svm"
    assert run_bad(capsys, str(missing)) == f"{missing}: no such file"
    assert run_bad(capsys, "nonexist.svm") == "nonexist.svm: no such file"
    assert run_bad(capsys, "nonexist").startswith("unknown data set 'nonexist'; choose one of")
    fake = tmp_path / "fake.zst"
    fake.write_bytes(b"\x28\xb5\x2f\xfd")
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if zstandard were not installed
    assert run_bad(capsys, str(fake)) == (f"{fake}: reading .zst needs the zstandard package "
                                          "(pip install 'river-pa[zstd]')")


def test_shared_data_is_found_from_the_current_folder(tmp_path, capsys, monkeypatch):
    """Not relative to the installed package: from the current folder (or one above)."""
    import bz2

    folder = tmp_path / "shared" / "data" / "a9a"
    folder.mkdir(parents=True)
    (folder / "a9a.bz2").write_bytes(bz2.compress(b"+1 3:1 7:1\n-1 2:1\n+1 3:1\n"))
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.delenv("RIVER_PA_DATA", raising=False)
    monkeypatch.chdir(repo)
    assert datasets.shared_folders()[0] == tmp_path / "shared" / "data"
    path = tmp_path / "run.jsonl"
    assert cli.main(["evaluate", "a9a", "--quiet", "--report-path", str(path)]) == 0
    assert report.load(path)[-1]["events"] == 3
    monkeypatch.setenv("RIVER_PA_DATA", str(tmp_path / "nowhere"))
    assert run_bad(capsys, "a9a") == (
        f"shared data set 'a9a' not found (looked for {tmp_path / 'nowhere' / 'a9a/a9a.bz2'}); "
        "set RIVER_PA_DATA to the shared data folder (see its SOURCES.md)")


def test_the_csv_field_limit_holds_after_another_library_lifted_it(tmp_path, capsys):
    import csv

    csv.field_size_limit(2**31 - 1)  # what scipy.io.arff.loadarff does, process-wide
    try:
        err = _unclosed_quote(tmp_path, capsys)
    finally:
        csv.field_size_limit(131072)
    assert "field larger than field limit (131072) (an unclosed quote?)" in err
