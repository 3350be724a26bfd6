"""Shared fixtures: the shared real data sets, the example scripts, and a seeded `random`;
hypothesis' CI profile; the brokers a run started stopped at its end."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from river_pa.evaluate.datasets import shared_folder

# shared fixtures of a family, registered here (pytest takes pytest_plugins only at the top)
pytest_plugins = ["tests.connectors.fake_kafka"]

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


STARTED_HERE = pytest.StashKey[bool]()
# The test files with tests on a worker's own brokers (tests/kafka/conftest.py: the 3-broker
# cluster, the private broker), and those fixtures. pytest-xdist gives these files to one
# worker, so one cluster starts, not one a worker: 3 brokers cost about 35 s of CPU to start
# and 7 s a minute idle on these 2 cores.
OWN_BROKER_FILES = frozenset({
    "tests/faults/test_faults.py", "tests/kafka/test_broker_restart.py",
    "tests/kafka/test_cluster.py", "tests/kafka/test_coordinator_restart.py",
    "tests/kafka/test_stop_without_broker.py", "tests/kafka/test_topics.py"})
OWN_BROKER_FIXTURES = ("cluster_bootstrap", "private_bootstrap")


def pytest_addoption(parser):
    parser.addoption("--all-modes", action="store_true",
                     help="run the Kafka scenarios marked one_mode in both delivery modes")


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` (scripts/test.sh) with the files of OWN_BROKER_FILES as one unit, the
    units handed out in collection order (see `pytest_collection_modifyitems`), not by their
    number of tests (xdist's default put that unit, about 6 minutes on one worker, last)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class OwnBrokersTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "own brokers" if scope in OWN_BROKER_FILES else scope

    config.option.loadscopereorder = False
    return OwnBrokersTogether(config, log)


def pytest_collection_modifyitems(items):
    """The longest units first (the files on a worker's own brokers, then the other Kafka
    tests), so the short ones fill the workers at the end; a test on a worker's own brokers
    must be in a file of OWN_BROKER_FILES."""
    def rank(item) -> int:
        path = item.nodeid.split("::", 1)[0]
        if path not in OWN_BROKER_FILES and set(OWN_BROKER_FIXTURES) & set(item.fixturenames):
            raise pytest.UsageError(f"{item.nodeid} runs on a worker's own brokers: add {path} "
                                    "to OWN_BROKER_FILES in tests/conftest.py")
        return 0 if path in OWN_BROKER_FILES else 1 if path.startswith("tests/kafka/") else 2

    items.sort(key=rank)


def pytest_configure(config):
    """The folder where tests/kafka/conftest.py writes down the brokers it starts; made by the
    run's first process (pytest-xdist's workers, and pytest runs inside a test, inherit it)."""
    if "RIVER_PA_STARTED" not in os.environ:
        os.environ["RIVER_PA_STARTED"] = tempfile.mkdtemp(prefix="river-pa-started-")
        config.stash[STARTED_HERE] = True


def pytest_sessionfinish(session):
    """Stop the brokers this run started (the 3-broker cluster, the private broker), once every
    worker is done: in the run's first process, as a worker cannot know that the others are
    done with them."""
    if not session.config.stash.get(STARTED_HERE, False):
        return
    folder = Path(os.environ["RIVER_PA_STARTED"])
    for path in sorted(folder.glob("*")):
        stop, env = json.loads(path.read_text())
        subprocess.run(["bash", str(REPO / "scripts" / "kafka.sh"), stop],
                       env={**os.environ, **env}, capture_output=True, timeout=600)
        path.unlink()
    folder.rmdir()


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
