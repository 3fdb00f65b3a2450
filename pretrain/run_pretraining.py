"""Pre-train ELECTRA: ``python pretrain/run_pretraining.py --help``, the same as ``electra-pretrain`` (flags in
electra_tf/cli/pretrain.py). Imports the installed package: ``pip install -e .`` (scripts/setup_env.sh does).
"""

import sys

from electra_tf.cli.pretrain import main

if __name__ == "__main__":
  sys.exit(main())
