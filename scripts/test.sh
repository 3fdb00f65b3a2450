#!/usr/bin/env bash
# The test command: sets up .venv with the test pins if needed, then runs the whole suite (the default tests and
# the ones marked slow) with one pytest-xdist worker per core (ELECTRA_TEST_WORKERS overrides; 0 runs in this
# process).
# Whole files go to a worker in the order tests/conftest.py gives them (the files with long and slow tests
# first; --no-loadscope-reorder keeps xdist from sorting files by their number of tests). Extra arguments
# go to pytest, e.g. `bash scripts/test.sh -m "not slow"` for the quick set.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck disable=SC1091
ELECTRA_SETUP=test . scripts/setup_env.sh
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
workers=${ELECTRA_TEST_WORKERS:-$(python -c 'import os; print(os.cpu_count() or 1)')}
python -m pytest -q -p no:cacheprovider --durations=15 -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
