"""Predict with a fine-tuned model: ``python finetune/run_predict.py --help``, the same as ``electra-predict``
(flags in electra_tf/cli/predict.py). Imports the installed package: ``pip install -e .`` (scripts/setup_env.sh
does).
"""

import sys

from electra_tf.cli.predict import main

if __name__ == "__main__":
  sys.exit(main())
