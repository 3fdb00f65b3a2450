"""The command lines: each module parses its flags and calls the library (``common.run_cli`` turns every
``ElectraError`` into one ``error:`` line and exit status 2). The scripts under pretrain/, finetune/ and
data_prep/ and ``python -m electra_tf.convert`` call ``main`` here."""

import os

# Before any command imports TensorFlow: its C++ start-up chatter (CUDA probing on CPU machines) would bury
# our one-line messages.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
