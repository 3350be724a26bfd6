#!/usr/bin/env bash
# Install river-pa with its test dependencies in the repository's own virtual environment
# (.venv: created on first use, reused after; a fresh clone always builds it new), each
# dependency at its newest release, so the machine's own packages can hide no missing or wrong
# pin. Then start the services the tests need (a local Apache Kafka broker, scripts/kafka.sh,
# which gets the same python), run the whole test suite with that python on two pytest-xdist
# workers (RIVER_PA_TEST_WORKERS), and stop the broker if it started it. Extra arguments go
# to pytest (e.g. `bash scripts/test.sh tests/linear_model/test_pa_updates.py -x`); the exit
# status is pytest's (5: no test collected).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# a .venv without a working pip (an interrupted creation) is built again
if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  python3 -m venv --clear .venv
fi
export PATH="$PWD/.venv/bin:$PATH" PYTHON="$PWD/.venv/bin/python"  # river-pa on PATH too
"$PYTHON" -m pip install --quiet --disable-pip-version-check --upgrade --upgrade-strategy eager \
  -e ".[test]"
if ! bash scripts/kafka.sh status >/dev/null 2>&1; then
  bash scripts/kafka.sh start
  trap 'bash scripts/kafka.sh stop' EXIT
fi
# two workers (pytest-xdist), a test file each at a time: the Kafka tests wait on brokers and
# daemons about a third of the time; the brokers a test stops are its worker's own
# (tests/kafka/conftest.py), and their test files are one unit, run by one worker
# (tests/conftest.py)
# the 25 slowest tests are listed at the end: the suite must stay within 15 minutes
"$PYTHON" -m pytest -n "${RIVER_PA_TEST_WORKERS:-2}" --dist loadfile --durations 25 "$@"
