"""The names of the formats and the files each is made of (``formats`` is the registry that detects, reads
and writes them), and the small readers every format shares: a checkpoint prefix, a run's saved hparams,
a JSON config.

This project's model directory (``electra-tf``, ``writers.write_model_dir``)::

    <dir>/electra_config.json   format tag, detected Architecture, pre-training hparams, casing, source
    <dir>/vocab.txt             the vocab (when one was given or found next to the source); a
                                SentencePiece model is stored as spiece.model instead
    <dir>/weights/model.ckpt.*  the weights in the reference's TF1 layout (names of spec section 4)

A keras-hub preset's files are named in ``keras_hub_preset``.
"""

import json
import os
import typing

import tensorflow as tf

from electra_tf import fileio
from electra_tf.configs import PretrainingConfig
from electra_tf.errors import ConversionError

TF1, MODEL_DIR, HF, TF2, PRETRAINING_RUN = "tf1", "electra-tf", "huggingface", "tf2", "pretraining-run"
KERAS_HUB = "keras-hub-preset"
RUN_CONFIG_FILE = PretrainingConfig.SAVED_CONFIG_FILE
CONFIG_FILE = "electra_config.json"
FORMAT_TAG = "electra-tf-model"
WEIGHTS_PREFIX = os.path.join("weights", "model.ckpt")
HF_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def find_checkpoint_prefix(path: str) -> typing.Optional[str]:
  """A checkpoint prefix for a prefix, an ``.index`` file or a directory (its ``checkpoint`` state file,
  else its newest ``*.index``); None if there is none."""
  path = os.fspath(path)
  if path.endswith(".index") and fileio.isfile(path):
    return path[:-len(".index")]
  if fileio.isfile(path + ".index"):
    return path
  if fileio.isdir(path):
    latest = tf.train.latest_checkpoint(path)
    if latest and fileio.isfile(latest + ".index"):
      return latest
    indexes = sorted(fileio.glob(os.path.join(path, "*.index")), key=fileio.getmtime)
    if indexes:
      return indexes[-1][:-len(".index")]
  return None


def run_config_path(path: str) -> str:
  """The run's saved hparams, for its model directory or one of its checkpoint prefixes."""
  return os.path.join(path if fileio.isdir(path) else os.path.dirname(path), RUN_CONFIG_FILE)


def read_json(path: str) -> typing.Optional[dict]:
  """The JSON object in ``path``; None when it does not read or holds something else (for recognising a file,
  where ``read_json_object`` is for reading one that must be right)."""
  try:
    with fileio.open_file(path, encoding="utf-8") as f:
      data = json.load(f)
  except (OSError, ValueError):
    return None
  return data if isinstance(data, dict) else None


_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean",
               type(None): "null"}


def read_json_object(path: str, fix: str) -> dict:
  """The JSON object in the config file ``path``; a ConversionError naming the file, what is wrong with it
  and ``fix`` when it is not UTF-8, not JSON (a truncated or hand-edited file) or not an object."""
  try:
    with fileio.open_file(path, encoding="utf-8") as f:
      data = json.load(f)
  except UnicodeDecodeError:
    raise ConversionError(f"{path} is not UTF-8 text; {fix}") from None
  except ValueError as e:
    raise ConversionError(f"{path} is not valid JSON ({e}); {fix}") from None
  if not isinstance(data, dict):
    raise ConversionError(f"{path} holds {_JSON_TYPES.get(type(data), 'a value')}, not a JSON object; {fix}")
  return data
