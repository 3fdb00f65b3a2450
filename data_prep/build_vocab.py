"""Learn a WordPiece vocab.txt or a SentencePiece model: ``--help`` (electra_tf/cli/build_vocab.py); the same as
``electra-build-vocab``. Imports the installed package: ``pip install -e .`` (scripts/setup_env.sh does).
"""

import sys

from electra_tf.cli.build_vocab import main

if __name__ == "__main__":
  sys.exit(main())
