#!/usr/bin/env bash
# The main job: sets up .venv if needed (the core install and the sample extra: the sample corpus and
# matplotlib; scripts/setup_env.sh), then runs the whole pipeline on the embedded sample data
# (sample text -> vocab -> TFRecords -> pre-training -> fine-tuning vs. no pre-training -> report).
# Extra arguments go to `python -m electra_tf.quickstart` (e.g. --pretrain-steps 2000, --sample-dir DIR).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck disable=SC1091
. scripts/setup_env.sh
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
exec python -m electra_tf.quickstart "$@"
