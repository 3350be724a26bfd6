"""scripts/test.sh, README's one test command (and CI's, .ci/run): it builds the repository's
own virtual environment and runs everything with it, never the machine's python3, whose
installed packages hid a missing pin. The script runs for real against a `python3` on PATH
that records its calls and builds a stand-in venv (creating a real one and installing every
dependency from the package index takes minutes; CI does that on every run)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Logs each call (its own path, PYTHON, the first folder on PATH and its arguments); `-m venv
# [--clear] DIR` copies itself to DIR/bin/python; `-m pytest` exits with $PYTEST_EXIT; anything
# else (pip, kafka.sh's broker probe `python -`) succeeds.
STUB = """#!/usr/bin/env bash
echo "$0|${PYTHON:-}|${PATH%%:*}|$*" >> "$CALLS"
if [[ "$1 $2" == "-m venv" ]]; then
  dir="${@: -1}"; mkdir -p "$dir/bin"; cp "$0" "$dir/bin/python"
elif [[ "$1 $2" == "-m pytest" ]]; then
  exit "${PYTEST_EXIT:-0}"
fi
"""


def run_script(repo: Path, *args: str, pytest_exit: int = 0) -> tuple[int, list[list[str]]]:
    bin_dir = repo.parent / "bin"
    calls = repo.parent / "calls.log"
    calls.unlink(missing_ok=True)
    env = {key: value for key, value in os.environ.items() if key != "PYTHON"}
    env.update(PATH=f"{bin_dir}:{env['PATH']}", CALLS=str(calls), PYTEST_EXIT=str(pytest_exit))
    done = subprocess.run(["bash", "scripts/test.sh", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, [line.split("|") for line in calls.read_text().splitlines()]


def fresh_clone(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for script in ("test.sh", "kafka.sh"):
        shutil.copy(ROOT / "scripts" / script, repo / "scripts" / script)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3").write_text(STUB)
    (tmp_path / "bin" / "python3").chmod(0o755)
    return repo


def test_a_fresh_clone_builds_its_venv_and_runs_everything_with_it(tmp_path):
    repo = fresh_clone(tmp_path)
    system, venv = str(tmp_path / "bin" / "python3"), str(repo / ".venv" / "bin" / "python")
    here, bin_ = str(tmp_path / "bin"), str(repo / ".venv" / "bin")  # its river-pa on PATH
    code, calls = run_script(repo, "tests/test_cli.py", "-k", "model spec")
    assert code == 0
    bootstrap = f"127.0.0.1:{os.environ.get('RIVER_PA_BROKER_PORT', '19092')}"
    assert calls == [
        [system, "", here, "-m venv --clear .venv"],  # the only call to the machine's python3
        [venv, venv, bin_, "-m pip install --quiet --disable-pip-version-check --upgrade "
                           "--upgrade-strategy eager -e .[test]"],
        [venv, venv, bin_, f"- {bootstrap}"],  # kafka.sh's probe: the broker is up, none started
        [venv, venv, bin_, "-m pytest -n 2 --dist loadfile --durations 25 tests/test_cli.py -k "
                           "model spec"],
    ]
    # a local .venv is reused (and upgraded); pytest's status is the script's, 5 included
    code, calls = run_script(repo, pytest_exit=5)
    assert code == 5
    assert calls[0] == [".venv/bin/python", "", here, "-m pip --version"]  # works: no new venv
    assert [call[:3] for call in calls[1:]] == [[venv, venv, bin_]] * 3
    assert calls[-1][3] == "-m pytest -n 2 --dist loadfile --durations 25"


def test_the_venv_is_git_ignored():
    assert ".venv/" in (ROOT / ".gitignore").read_text().splitlines()
