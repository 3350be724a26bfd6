#!/usr/bin/env bash
# Install river-pa with its test dependencies, start the services the tests need (a local Apache
# Kafka broker, scripts/kafka.sh), run the whole test suite, and stop the broker if it started it.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh tests/linear_model/test_pa_updates.py -x`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"
if ! bash scripts/kafka.sh status >/dev/null 2>&1; then
  bash scripts/kafka.sh start
  trap 'bash scripts/kafka.sh stop' EXIT
fi
python3 -m pytest "$@"
