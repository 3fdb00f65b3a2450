"""Raw text -> pre-training TFRecords: ``--help`` lists the flags (electra_tf/cli/build_data.py)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

from electra_tf.cli.build_data import main  # pylint: disable=wrong-import-position

if __name__ == "__main__":
  sys.exit(main())
