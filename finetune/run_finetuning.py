"""Fine-tune ELECTRA: ``python finetune/run_finetuning.py --help`` (flags in electra_tf/cli/finetune.py)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

from electra_tf.cli.finetune import main  # pylint: disable=wrong-import-position

if __name__ == "__main__":
  sys.exit(main())
