"""`--report-path` and `--plot` of `river-pa evaluate`, and `river-pa report`'s image: checked
before any event is read, never anything but a regular file, never the input, replaced by a
rename (never deleted first), and the JSONL report written as the run goes."""

from __future__ import annotations

import os
import stat

import pytest

from river_pa import cli, report
from river_pa.evaluate import datasets, readers


def evaluate(*args):
    return cli.main(["evaluate", *args, "--quiet"])


def one_line(capsys, start: str) -> str:
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(start) and err.count("\n") == 1, (out, err)
    assert "Traceback" not in err
    return err


def events_file(tmp_path, n: int = 50):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(f'{{"x": {{"a": {i % 7}}}, "y": {i % 2}}}\n' for i in range(n)))
    return path


@pytest.mark.parametrize("kind", ["device", "fifo", "symlink", "directory"])
@pytest.mark.parametrize("flag", ["--report-path", "--plot"])
def test_a_path_that_is_not_a_regular_file_is_refused_and_kept(tmp_path, capsys, kind, flag):
    target = tmp_path / "target.png"
    if kind == "device":  # a copy of /dev/null in tmp_path: never risk the real one
        try:
            os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("creating a device needs root")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink":
        (tmp_path / "elsewhere.png").write_text("keep me")
        target.symlink_to(tmp_path / "elsewhere.png")
    else:
        target.mkdir()
    mode = os.lstat(target).st_mode
    assert evaluate("phishing", flag, str(target)) == 2
    err = one_line(capsys, f"river-pa evaluate: {flag} {target} is a")
    assert "not a regular file" in err
    assert os.lstat(target).st_mode == mode  # untouched
    if kind == "symlink":
        assert (tmp_path / "elsewhere.png").read_text() == "keep me"


@pytest.mark.parametrize("flag", ["--report-path", "--plot"])
def test_the_input_file_is_never_an_output(tmp_path, capsys, flag):
    data = events_file(tmp_path)
    before = data.read_bytes()
    alias = tmp_path / "alias.jsonl"
    os.link(data, alias)  # another name of the same file
    for path in (data, alias):
        assert evaluate(str(data), flag, str(path)) == 2
        one_line(capsys, f"river-pa evaluate: {flag} {path} is the input file {data}")
    assert data.read_bytes() == before


def test_a_bad_plot_format_is_a_usage_error_before_the_run(tmp_path, capsys):
    report_path = tmp_path / "run.jsonl"
    assert evaluate("phishing", "--plot", str(tmp_path / "a.txt"),
                    "--report-path", str(report_path)) == 2
    err = one_line(capsys, f"river-pa evaluate: --plot {tmp_path / 'a.txt'}: format 'txt' is "
                   "not supported; use one of ")
    assert "png" in err and "svg" in err
    assert not report_path.exists()  # nothing ran, nothing was written


def test_an_unwritable_folder_is_refused_before_the_run(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(locked, os.W_OK):  # root writes anywhere
            pytest.skip("running as root: every folder is writable")
        assert evaluate("phishing", "--report-path", str(locked / "run.jsonl")) == 2
        one_line(capsys, f"river-pa evaluate: --report-path {locked / 'run.jsonl'}: cannot "
                 f"write in {locked}: Permission denied")
    finally:
        locked.chmod(stat.S_IRWXU)


def test_an_existing_report_is_replaced_by_a_new_file_not_rewritten(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"events": 1, "metrics": {"Accuracy": 0.0}}\n')
    old = tmp_path / "old.jsonl"
    os.link(path, old)  # a second name of the old report sees the old bytes only if replaced
    assert evaluate("phishing", "--limit", "300", "--every", "100", "--report-path",
                    str(path)) == 0
    assert old.read_text() == '{"events": 1, "metrics": {"Accuracy": 0.0}}\n'
    assert [s["events"] for s in report.load(path)] == [100, 200, 300]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl", "run.jsonl"]  # no .tmp


def test_the_report_is_written_as_the_run_goes(tmp_path, capsys, monkeypatch):
    """A run stopped by a bad line at event 2,501 leaves its rows 1,000 and 2,000."""
    monkeypatch.setattr(readers, "ROWS", 500)  # chunks of 500 lines: the bad one comes late
    data = events_file(tmp_path, 2500)
    with open(data, "a") as fh:
        fh.write("[1, 2]\n")
    path = tmp_path / "run.jsonl"
    assert evaluate(str(data), "--report-path", str(path)) == 2
    capsys.readouterr()
    rows = report.load(path)
    assert [s["events"] for s in rows] == [1000, 2000]
    assert rows[0]["metrics"]["Accuracy"] > 0


def test_report_says_it_replaced_an_image_and_refuses_its_own_input(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    assert evaluate("phishing", "--limit", "200", "--every", "100", "--report-path",
                    str(path)) == 0
    png = tmp_path / "run.png"
    assert cli.main(["report", str(path)]) == 0
    assert capsys.readouterr().out.rstrip().endswith(f"learning curve: {png}")
    assert cli.main(["report", str(path)]) == 0
    assert capsys.readouterr().out.rstrip().endswith(
        f"learning curve: {png} (replaced the file that was there)")
    before = path.read_bytes()
    assert cli.main(["report", str(path), "--png", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"river-pa report: --png {path} is the input file {path}: give another path\n"
    assert path.read_bytes() == before
