"""``python -m electra_tf.convert``: the conversion command line (electra_tf/cli/convert.py; also installed as
``electra-convert``).

An entry point, not part of the package: the command needs fine-tuning and serving, which import convert.
"""

import sys

from electra_tf.cli.convert import main

if __name__ == "__main__":
  sys.exit(main(prog="python -m electra_tf.convert"))
