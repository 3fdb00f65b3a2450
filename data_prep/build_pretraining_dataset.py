"""Raw text -> pre-training TFRecords: ``--help`` lists the flags (electra_tf/cli/build_data.py); the same as
``electra-build-data``. Imports the installed package: ``pip install -e .`` (scripts/setup_env.sh does).
"""

import sys

from electra_tf.cli.build_data import main

if __name__ == "__main__":
  sys.exit(main())
