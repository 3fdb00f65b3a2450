#!/usr/bin/env bash
# Creates .venv (Python 3.11+) and installs electra-tf. Idempotent: a second run only checks that the pinned
# packages are present. Sourced by quickstart.sh (the main job's pins, requirements-sample.txt: the core install's
# requirements.txt plus the sample extra, the sample corpus and matplotlib) and by test.sh, which sets
# ELECTRA_SETUP=test for requirements-test.txt (the main job's pins plus torch, transformers, Apache Beam,
# keras-hub and pytest: 80 s more of set-up that the main job does not need).
#
# pip byte-compiles every file of every package it installs, one at a time, most of them never imported
# (TensorFlow's tests, tools and rarely used modules): on 2 cores half of the runtime install's time. Neither
# set-up lets pip do it. The runtime set-up compiles only what the commands import, once, by importing it with
# bytecode writing on whatever PYTHONDONTWRITEBYTECODE says (the venv's own cache, which pip would have written
# anyway). The test set-up compiles every installed file with compileall on all cores, as pip would have, since
# its hundreds of processes import more than the commands do (on 2 cores: 45 s of install and 33 s of compiling
# in place of pip's 99 s).
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
  requirements=requirements-sample.txt stamp=.venv/.electra_tf_installed
fi
if [ ! -f "$stamp" ] || [ requirements.txt -nt "$stamp" ] || [ requirements-sample.txt -nt "$stamp" ] \
   || [ "$requirements" -nt "$stamp" ] \
   || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ]; then
  python -m pip install -q --upgrade pip
  python -m pip install -q --no-compile -r "$requirements"
  python -m pip install -q --no-deps -e .
  if [ "$requirements" = requirements-sample.txt ]; then
    # the main job and every console command the package declares (pyproject.toml's [project.scripts])
    env -u PYTHONDONTWRITEBYTECODE TF_CPP_MIN_LOG_LEVEL=3 python -c "import importlib, importlib.metadata as md
import electra_tf.quickstart
for e in md.entry_points(group='console_scripts'):
  if e.value.startswith('electra_tf.'):
    importlib.import_module(e.module)" 2>/dev/null \
      || echo "note: importing electra-tf's commands failed; python -c 'import electra_tf.quickstart' shows why"
  else  # every installed file, the runtime set-up's too when it made this venv (up-to-date ones are skipped)
    python -m compileall -q -j 0 "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
      >/dev/null 2>&1 || true  # a package's test data may hold files of other Python versions: not fatal
  fi
  touch "$stamp"
fi
