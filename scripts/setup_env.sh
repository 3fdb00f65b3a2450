#!/usr/bin/env bash
# Creates .venv (Python 3.11+) and installs electra-tf with its test extras. Idempotent: a second run
# only checks that the pinned packages are present. Sourced by quickstart.sh and test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
stamp=.venv/.electra_tf_installed
if [ ! -f "$stamp" ] || [ requirements.txt -nt "$stamp" ] || [ requirements-test.txt -nt "$stamp" ] \
   || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ]; then
  python -m pip install -q --upgrade pip
  python -m pip install -q -r requirements-test.txt
  python -m pip install -q --no-deps -e .
  touch "$stamp"
fi
