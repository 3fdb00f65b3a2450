"""Readers to ``Source`` of the reference TF1 layout, this project's model directory and a pre-training run
(Hugging Face in ``hf_reader``, keras-hub in ``keras_hub_preset``; ``formats.read_source`` picks the one)."""

import dataclasses
import json
import os
import re

import tensorflow as tf

from electra_tf import fileio
from electra_tf.configs import PretrainingConfig
from electra_tf.convert.architecture import Architecture, infer_architecture, is_reference_weight
from electra_tf.convert.layout import (CONFIG_FILE, FORMAT_TAG, MODEL_DIR, PRETRAINING_RUN, RUN_CONFIG_FILE, TF1,
                                       WEIGHTS_PREFIX, read_json_object, run_config_path)
from electra_tf.convert.source import Source, source_from_networks
from electra_tf.convert.vocab_files import sibling_vocab
from electra_tf.errors import ConversionError, HParamError, first_line
from electra_tf.modeling.models import build_pretraining_networks
from electra_tf.runtime.restore import restore_checkpoint

# What to do about a model directory whose config does not read.
_MODEL_DIR_FIX = ("write the directory again with electra-convert import-tf1 / import-hf, or restore the file "
                  "from a copy")


def read_tf1(prefix: str) -> Source:
  """A reference-layout TF1 checkpoint: pre-training weights, ``task_specific/*`` extras, the rest ignored.

  The layout has no place for the head count (or the activation, dropout, initializer range): they are taken
  from the hparams in ``pretraining_config.json`` beside the checkpoint (``write_tf1`` writes them there) when
  there is one, else derived as the reference does (heads max(1, H//64))."""
  reader = tf.compat.v1.train.NewCheckpointReader(prefix)
  shapes = reader.get_variable_to_shape_map()
  arch = infer_architecture(shapes, source=prefix)
  if fileio.isfile(run_config_path(prefix)):
    try:
      cfg = read_pretraining_config(prefix)
      disc, gen = cfg.discriminator_config(), cfg.generator_config()
    except HParamError as e:
      raise ConversionError(f"{run_config_path(prefix)}: {e}") from None
    arch = arch.with_stated(disc, gen, source=run_config_path(prefix))
  arrays, extra, ignored = {}, {}, []
  for name in sorted(shapes):
    if is_reference_weight(name):
      arrays[name] = _read_tensor(reader, prefix, name)
    elif name.startswith("task_specific/") and not name.endswith(("/adam_m", "/adam_v")):
      extra[name] = _read_tensor(reader, prefix, name)
    elif name != "global_step":
      ignored.append(name)
  step = int(_read_tensor(reader, prefix, "global_step")) if "global_step" in shapes else None
  return Source(TF1, prefix, arrays, arch, extra, ignored, sibling_vocab(prefix), None, step)


def _read_tensor(reader, prefix: str, name: str):
  """One variable of a TF1 checkpoint; a truncated or corrupt ``.data`` file is one ConversionError (the
  ``.index`` lists every variable, so the checkpoint opens, and the damage shows only when a value is read)."""
  try:
    return reader.get_tensor(name)
  except (tf.errors.OpError, IndexError, ValueError, RuntimeError, OSError) as e:
    raise ConversionError(f"{prefix}: cannot read {name} ({first_line(e)}): its .data file is truncated or corrupt; "
                          "copy or download the checkpoint again") from None


def read_model_dir(path: str) -> Source:
  """This project's model directory: its reference-named weights plus the recorded architecture."""
  meta = read_model_config(path)
  try:
    arch = Architecture.from_json(meta["architecture"])
  except (KeyError, TypeError, ValueError, AttributeError) as e:
    raise ConversionError(f"{os.path.join(path, CONFIG_FILE)} has no valid architecture ({type(e).__name__}: "
                          f"{e}); {_MODEL_DIR_FIX}") from None
  source = read_tf1(os.path.join(path, WEIGHTS_PREFIX))
  return dataclasses.replace(source, format=MODEL_DIR, path=path, architecture=arch,
                             vocab_file=sibling_vocab(path),
                             do_lower_case=meta.get("do_lower_case"), global_step=meta.get("global_step"))


def read_model_config(path: str) -> dict:
  meta = read_json_object(os.path.join(path, CONFIG_FILE), _MODEL_DIR_FIX)
  if meta.get("format") != FORMAT_TAG:
    raise ConversionError(f"{path}/{CONFIG_FILE} is not an electra-tf model config (format "
                          f"{meta.get('format')!r})")
  return meta


def read_pretraining_config(path: str) -> PretrainingConfig:
  """The hparams a ``run_pretraining.py`` run saved beside its checkpoints (``path``: the model directory or
  a checkpoint prefix; unknown keys, from another version, are dropped)."""
  path = run_config_path(path)
  try:
    with fileio.open_file(path, encoding="utf-8") as f:
      saved = json.load(f)
  except (OSError, ValueError) as e:
    raise ConversionError(f"{path}: cannot read the run's hparams ({e}); restore it from the run's "
                          "--hparams or rerun pre-training") from None
  cfg = PretrainingConfig()
  return cfg.update({k: v for k, v in saved.items() if k in cfg.field_map()})


def read_pretraining_run(prefix: str) -> Source:
  """A pre-training checkpoint: the networks are rebuilt from the run's saved hparams, restored by object
  structure (as the trainer saved them, optimizer slots left unread) and read back by reference name."""
  cfg = read_pretraining_config(prefix)
  nets = build_pretraining_networks(cfg)
  reason = restore_checkpoint(prefix, nets.checkpoint_objects())
  if reason is not None:
    raise ConversionError(f"{prefix} does not match the networks of {run_config_path(prefix)} ({reason})")
  numbered = re.search(r"-(\d+)$", prefix)  # the trainer numbers its checkpoints by step
  step = int(numbered.group(1)) if numbered else None
  vocab = cfg.vocab_file if cfg.vocab_file and fileio.isfile(cfg.vocab_file) else None
  source = source_from_networks(nets, vocab, cfg.do_lower_case, step)  # heads etc. from the run's configs
  return dataclasses.replace(source, format=PRETRAINING_RUN, path=prefix)


def read_tf2(prefix: str) -> Source:
  """A bare TF2 object checkpoint has no names to read by: refused (``load_pretrained_weights`` restores it by
  object structure instead)."""
  raise ConversionError(f"{prefix} is a TF2 pre-training checkpoint without the run's {RUN_CONFIG_FILE} "
                        "(written by pre-training runs of electra-tf 0.1.0 and later); write the run's hparams "
                        f"there as JSON ({{\"model_size\": ..., \"vocab_size\": ...}}) or rerun pre-training")
