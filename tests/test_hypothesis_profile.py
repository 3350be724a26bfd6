"""Hypothesis under CI=true draws the same examples every run (tests/conftest.py's "ci"
profile); without CI it explores at random."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

DRAW = """
import sys
sys.path.insert(0, sys.argv[1])
import conftest  # registers and, under CI, loads the profile, as pytest does first
from hypothesis import given, settings, strategies as st
drawn = []
@settings(max_examples=20)  # a test's own settings keep the profile's derandomize
@given(st.floats(allow_nan=False), st.integers())
def draw(x, n):
    drawn.append((x, n))
draw()
print(settings.default.derandomize, settings.default.print_blob, repr(drawn))
"""


def _draws(ci: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-c", DRAW, str(TESTS)], env=env, check=True,
                          capture_output=True, text=True, cwd=TESTS.parent).stdout


def test_ci_draws_the_same_examples_every_run():
    first, second = _draws(ci=True), _draws(ci=True)
    assert first.startswith("True True [(") and first == second


def test_developers_keep_random_exploration():
    first, second = _draws(ci=False), _draws(ci=False)
    assert first.startswith("False False [(") and first != second
