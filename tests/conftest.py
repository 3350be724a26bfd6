"""Shared fixtures: the shared real data sets, the example scripts, and a seeded `random`;
hypothesis' CI profile."""

from __future__ import annotations

import importlib.util
import os
import random
from pathlib import Path

import pytest
from hypothesis import settings

from river_pa.evaluate.datasets import shared_folder

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

# CI (CI=true) draws the same examples every run, so a run cannot fail on a draw the previous
# one did not make (a flaky NaN in test_extreme_inputs did); a failure prints the blob that
# reproduces it. Developers keep hypothesis' random exploration (and its example database).
# Loaded here, before the test modules import: their @settings inherit the profile. Recent
# hypothesis versions (6.170 here) load a built-in "ci" profile like it by themselves; registering
# it keeps the pyproject floor (6.100) deterministic too.
settings.register_profile("ci", derandomize=True, print_blob=True, database=None, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_folder()
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} is absent (set RIVER_PA_DATA to its location)")
    return path


def _emotions(folder: Path, n: int) -> list:
    """The first n events of the emotions multilabel set: ({72 features}, {6 labels: bool})."""
    import gzip
    import io

    from scipy.io import arff

    with gzip.open(folder / "emotions" / "emotions.arff.gz", "rt") as f:
        data, meta = arff.loadarff(io.StringIO(f.read()))
    labels, features = meta.names()[:6], meta.names()[6:]
    return [({k: float(r[k]) for k in features}, {k: r[k] == b"1" for k in labels})
            for r in data[:n]]


@pytest.fixture(scope="session")
def emotions(shared_data):
    """A function n -> the first n events of the shared emotions set (multilabel)."""
    return lambda n: _emotions(shared_data, n)


@pytest.fixture(autouse=True)
def seeded_random():
    """Seed the global `random` before each test.

    River's checks (e.g. `check_shuffle_features_no_impact`) draw from it without a seed, so
    without this a test's inputs would depend on which tests ran before it.

    """
    random.seed(0)


def _load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def load_example():
    """A function loading `examples/<name>.py` as a fresh module (the examples are scripts)."""
    return _load_example
