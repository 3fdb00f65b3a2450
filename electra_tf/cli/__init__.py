"""The command lines: each module parses its flags and calls the library (``common.run_cli`` turns every
``ElectraError`` into one ``error:`` line and exit status 2). The scripts under pretrain/, finetune/ and
data_prep/ and ``python -m electra_tf.convert`` call ``main`` here."""

import os

from electra_tf.runtime import set_default_xla_flags  # no TensorFlow

# Before any command imports TensorFlow: its C++ start-up chatter (CUDA probing on CPU machines) would bury
# our one-line messages; and XLA reads its flags once, at its first use.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
set_default_xla_flags()
