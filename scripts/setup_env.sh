#!/usr/bin/env bash
# Creates .venv (Python 3.11+) and installs electra-tf. Idempotent: a second run only checks that the pinned
# packages are present. Sourced by quickstart.sh (the runtime pins, requirements.txt) and by test.sh, which sets
# ELECTRA_SETUP=test for requirements-test.txt (the runtime pins plus torch, transformers, Apache Beam,
# keras-hub and pytest: 80 s more of set-up that the main job does not need).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
if [ "${ELECTRA_SETUP:-runtime}" = test ]; then
  requirements=requirements-test.txt stamp=.venv/.electra_tf_test_installed
else
  requirements=requirements.txt stamp=.venv/.electra_tf_installed
fi
if [ ! -f "$stamp" ] || [ requirements.txt -nt "$stamp" ] || [ "$requirements" -nt "$stamp" ] \
   || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ]; then
  python -m pip install -q --upgrade pip
  python -m pip install -q -r "$requirements"
  python -m pip install -q --no-deps -e .
  touch "$stamp"
fi
