"""Fine-tune ELECTRA: ``python finetune/run_finetuning.py --help``, the same as ``electra-finetune`` (flags in
electra_tf/cli/finetune.py). Imports the installed package: ``pip install -e .`` (scripts/setup_env.sh does).
"""

import sys

from electra_tf.cli.finetune import main

if __name__ == "__main__":
  sys.exit(main())
