"""Recognising an input: the format a path holds (``detect_format``) and the files each format is made of.

Formats:

* ``tf1``: a TF1 checkpoint in the reference's layout (spec section 4), e.g. Google's released
  ``electra_small``. Adam slots and ``global_step`` are ignored on import; the released zips have no slots.
* ``electra-tf``: this project's model directory (``writers.write_model_dir``)::

    <dir>/electra_config.json   format tag, detected Architecture, pre-training hparams, casing, source
    <dir>/vocab.txt             the vocab (when one was given or found next to the source); a
                                SentencePiece model is stored as spiece.model instead
    <dir>/weights/model.ckpt.*  the weights in the reference's TF1 layout (names of spec section 4)

* ``huggingface``: a transformers directory (``config.json`` + ``model.safetensors`` or
  ``pytorch_model.bin``) of ``ElectraForPreTraining`` / ``ElectraForMaskedLM`` / ``ElectraModel``.
* ``pretraining-run``: a ``run_pretraining.py`` model directory (its latest checkpoint) or one of its
  checkpoint prefixes (``<dir>/ckpt-<step>``): TF2 object checkpoints next to ``pretraining_config.json``,
  the run's hparams, from which the networks are rebuilt and restored, then read by reference name.
* ``tf2``: a bare TF2 object checkpoint of ``PretrainingNetworks`` without that file (runs of electra-tf
  before it was written); it can only be restored into networks of the same structure.
"""

import json
import os
import typing

import tensorflow as tf

from electra_tf import fileio
from electra_tf.configs import PretrainingConfig
from electra_tf.errors import ConversionError

TF1, MODEL_DIR, HF, TF2, PRETRAINING_RUN = "tf1", "electra-tf", "huggingface", "tf2", "pretraining-run"
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


def detect_format(path: str) -> typing.Tuple[str, str]:
  """(format, resolved path): the checkpoint prefix for TF1/TF2, the directory otherwise."""
  path = os.fspath(path)
  if not fileio.exists(path) and not fileio.exists(path + ".index"):
    raise ConversionError(f"{path}: no such file or directory")
  if fileio.isdir(path) and fileio.isfile(os.path.join(path, CONFIG_FILE)):
    return MODEL_DIR, path
  if fileio.isdir(path) and fileio.isfile(os.path.join(path, "config.json")):
    if not any(fileio.isfile(os.path.join(path, f)) for f in HF_WEIGHT_FILES):
      raise ConversionError(f"{path} has a Hugging Face config.json but no {' or '.join(HF_WEIGHT_FILES)}")
    return HF, path
  prefix = find_checkpoint_prefix(path)
  if prefix is None:
    raise ConversionError(f"{path} holds no checkpoint ({CONFIG_FILE}, a Hugging Face config.json, "
                          "or a TF checkpoint .index file)")
  try:
    names = tf.compat.v1.train.NewCheckpointReader(prefix).get_variable_to_shape_map()
  except Exception as e:  # pylint: disable=broad-except
    raise ConversionError(f"{prefix}: not a readable TF checkpoint ({str(e).splitlines()[0]})") from None
  if "_CHECKPOINTABLE_OBJECT_GRAPH" not in names:
    return TF1, prefix
  return (PRETRAINING_RUN if fileio.isfile(run_config_path(prefix)) else TF2), prefix


def run_config_path(path: str) -> str:
  """The run's saved hparams, for its model directory or one of its checkpoint prefixes."""
  return os.path.join(path if fileio.isdir(path) else os.path.dirname(path), RUN_CONFIG_FILE)


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
