"""The documentation site (mkdocs.yml, docs/) builds with --strict, and every code block of the
getting-started page runs and prints what the page shows after it.

--strict turns every warning into a failure: a broken link between pages, a page missing from
the nav, an API reference that names no object, a docstring mkdocstrings cannot parse. Shown
output is compared as doctest does with ELLIPSIS (`...` stands for anything) and whitespace
normalised; the install lines (a venv, pip) are not run: the suite runs in the installed
package already.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GETTING_STARTED = ROOT / "docs" / "getting-started.md"
INSTALL = ("python3 -m venv", "pip install")


def test_the_site_builds_with_strict(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
    api = (tmp_path / "site" / "api" / "learners" / "index.html").read_text()
    assert "PAClassifier" in api and "Passive-Aggressive" in api  # generated from docstrings


def blocks(page: Path) -> list[tuple[str, str, str | None]]:
    """(language, code, the output shown after it or None) of each bash or python block."""
    found = re.findall(r"```(\w+)\n(.*?)```", page.read_text(), flags=re.S)
    out = []
    for i, (language, code) in enumerate(found):
        if language in ("bash", "python"):
            shown = found[i + 1][1] if i + 1 < len(found) and found[i + 1][0] == "text" else None
            out.append((language, code, shown))
    return out


@pytest.mark.parametrize("index", range(len(blocks(GETTING_STARTED))))
def test_getting_started_runs_and_prints_what_it_shows(index, tmp_path_factory):
    folder = tmp_path_factory.getbasetemp() / "getting-started"  # one folder for the page
    folder.mkdir(exist_ok=True)
    language, code, shown = blocks(GETTING_STARTED)[index]
    if language == "bash":
        code = "\n".join(line for line in code.splitlines() if not line.startswith(INSTALL))
        command = ["bash", "-e", "-c", code]
    else:
        command = [sys.executable, "-c", code]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "COLUMNS": "80"}
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    if shown is not None:
        checker = doctest.OutputChecker()
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        assert checker.check_output(shown, done.stdout, flags), \
            f"the page shows:\n{shown}\nthe code printed:\n{done.stdout}"
