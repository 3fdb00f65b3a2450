"""Writers: the reference TF1 layout, this project's model directory, and a Hugging Face directory. Each
writes into a temporary directory beside the destination and renames it at the end, so an interrupted
export never leaves a half-written model behind."""

import json
import os
import typing

import numpy as np
import tensorflow as tf

from electra_tf import fileio
from electra_tf.convert import hf_mapping
from electra_tf.convert.architecture import Architecture
from electra_tf.convert.layout import CONFIG_FILE, FORMAT_TAG, HF_WEIGHT_FILES, RUN_CONFIG_FILE, WEIGHTS_PREFIX
from electra_tf.convert.source import Source, generator_arrays, holds_weight
from electra_tf.convert.vocab_files import check_vocab, copy_vocab, hf_tokenizer_config
from electra_tf.errors import ConversionError
from electra_tf.runtime.atomic_files import atomic_directory


def _save_bundle(prefix: str, arrays: typing.Mapping[str, np.ndarray], global_step: int):
  """A V2 checkpoint bundle with exactly these names (what a tf.compat.v1 Saver writes for variables of
  those names), readable by ``tf.train.load_checkpoint`` and the reference's ``init_from_checkpoint``."""
  names = sorted(arrays)
  tensors = [tf.constant(np.asarray(arrays[n], np.float32)) for n in names]
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names + ["global_step"], shape_and_slices=[""] * (len(names) + 1),
                    tensors=tensors + [tf.constant(int(global_step), tf.int64)])


def _write_checkpoint_state(folder: str, relative_prefix: str):
  """The ``checkpoint`` file through which ``tf.train.latest_checkpoint(folder)`` finds the bundle."""
  with fileio.open_file(os.path.join(folder, "checkpoint"), "w", encoding="utf-8") as f:
    f.write(f'model_checkpoint_path: "{relative_prefix}"\nall_model_checkpoint_paths: "{relative_prefix}"\n')


def write_tf1(out_dir: str, arrays: typing.Mapping[str, np.ndarray], global_step: int = 0,
              vocab_file: typing.Optional[str] = None, overwrite: bool = False,
              architecture: typing.Optional[Architecture] = None) -> str:
  """A reference-layout checkpoint ``<out_dir>/model.ckpt-<step>`` (+ ``checkpoint`` state file and vocab),
  with exactly the given names and shapes plus ``global_step`` (int64), and no optimizer slots, as the
  released checkpoints. Returns the prefix.

  The layout has no place for the head count: an ``architecture`` whose head count (activation, dropout)
  came from a config is written beside it as pre-training hparams (``pretraining_config.json``), which
  ``read_tf1`` reads back; the reference's own code ignores the file."""
  global_step = int(global_step or 0)
  name = f"model.ckpt-{global_step}"
  with atomic_directory(out_dir, overwrite) as tmp:
    _save_bundle(os.path.join(tmp, name), arrays, global_step)
    _write_checkpoint_state(tmp, name)
    copy_vocab(vocab_file, tmp)
    if architecture is not None and architecture.stated:
      with fileio.open_file(os.path.join(tmp, RUN_CONFIG_FILE), "w", encoding="utf-8") as f:
        json.dump(architecture.pretraining_hparams(), f, indent=2, sort_keys=True)
  return os.path.join(out_dir, name)


def write_model_dir(out_dir: str, source: Source, overwrite: bool = False) -> str:
  """This project's model directory from any ``Source`` (its files are listed in ``layout``).

  The weights are stored by reference name, not as a TF2 object graph: Keras 3 layers held in Python lists
  (our transformer stack) are invisible to ``tf.train.Checkpoint``, and names keep the file independent of
  how a model object happens to be assembled."""
  arch = source.architecture
  check_vocab(source.vocab_file, arch)
  arrays = {n: v for n, v in source.arrays.items() if holds_weight(arch, n)}
  parts = sorted({"discriminator": True, "discriminator_head": arch.has_discriminator_head,
                  "generator": arch.generator is not None}.items())
  meta = dict(format=FORMAT_TAG, version=1, architecture=arch.to_json(),
              pretraining_hparams=arch.pretraining_hparams(), description=arch.describe(),
              do_lower_case=source.do_lower_case if source.do_lower_case is not None else True,
              source=dict(format=source.format, path=fileio.abspath(source.path)),
              global_step=source.global_step, weights=[k for k, held in parts if held])
  with atomic_directory(out_dir, overwrite) as tmp:
    os.makedirs(os.path.join(tmp, os.path.dirname(WEIGHTS_PREFIX)))
    _save_bundle(os.path.join(tmp, WEIGHTS_PREFIX), arrays, source.global_step or 0)
    _write_checkpoint_state(tmp, WEIGHTS_PREFIX)  # the directory is also a reference init_checkpoint
    copy_vocab(source.vocab_file, tmp)
    with fileio.open_file(os.path.join(tmp, CONFIG_FILE), "w", encoding="utf-8") as f:
      json.dump(meta, f, indent=2, sort_keys=True)
  return out_dir


def hf_config(model_config, architecture_class: str, **extra) -> dict:
  return dict(architectures=[architecture_class], model_type="electra",
              **hf_mapping.hf_config_dict(model_config), **extra)


def write_hf(out_dir: str, source: Source, target: str, overwrite: bool = False,
             state: typing.Optional[dict] = None, config: typing.Optional[dict] = None) -> str:
  """A transformers directory: ``config.json``, ``model.safetensors`` and the tokenizer files.

  ``target`` ``discriminator`` -> ``ElectraForPreTraining``; ``generator`` -> ``ElectraForMaskedLM``
  (its own config: the generator's width, depth and the shared embedding width). ``state``/``config``
  override both (used for fine-tuned heads)."""
  from safetensors.numpy import save_file  # pylint: disable=g-import-not-at-top
  arch = source.architecture
  if state is None:
    if target == hf_mapping.GENERATOR:
      if arch.generator is None:
        raise ConversionError(f"{source.path} holds no generator weights to export")
      state = hf_mapping.to_hf_state_dict(generator_arrays(source), hf_mapping.GENERATOR)
      config = hf_config(arch.generator, "ElectraForMaskedLM")
    else:
      if not arch.has_discriminator_head:
        raise ConversionError(f"{source.path} holds no discriminator head; it cannot be an ElectraForPreTraining")
      state = hf_mapping.to_hf_state_dict(source.arrays, hf_mapping.DISCRIMINATOR)
      config = hf_config(arch.discriminator, "ElectraForPreTraining")
  check_vocab(source.vocab_file, arch)
  with atomic_directory(out_dir, overwrite) as tmp:
    save_file({k: np.ascontiguousarray(v, np.float32) for k, v in state.items()},
              os.path.join(tmp, HF_WEIGHT_FILES[0]), metadata={"format": "pt"})
    with fileio.open_file(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
      json.dump(config, f, indent=2, sort_keys=True)
    if source.vocab_file:
      copy_vocab(source.vocab_file, tmp)
      lower = True if source.do_lower_case is None else bool(source.do_lower_case)
      with fileio.open_file(os.path.join(tmp, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(hf_tokenizer_config(source.vocab_file, lower, config.get("max_position_embeddings", 512)),
                  f, indent=2)
  return out_dir
