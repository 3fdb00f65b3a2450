"""Reading and writing ELECTRA weights in every supported format, always through reference names.

Formats (``detect_format``):

* ``tf1``: a TF1 checkpoint in the reference's layout (spec section 4), e.g. Google's released
  ``electra_small``. Adam slots and ``global_step`` are ignored on import; the released zips have no slots.
* ``electra-tf``: this project's model directory (``write_model_dir``)::

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

Every reader returns a ``Source`` whose ``arrays`` are keyed by reference names; every writer takes such
arrays. ``electra_tf.checkpoint_names.reference_variables`` is the one place that ties those names to our
variables.
"""

import dataclasses
import json
import os
import re
import typing

import numpy as np
import tensorflow as tf

from electra_tf import fileio, runtime
from electra_tf.checkpoint_names import reference_variables
from electra_tf.configs import PretrainingConfig
from electra_tf.modeling.models import build_pretraining_networks
from electra_tf.convert import hf_mapping
from electra_tf.convert.architecture import Architecture, ConversionError, infer_architecture, is_reference_weight
from electra_tf.errors import VocabError
from electra_tf.tokenization import read_vocab

TF1, MODEL_DIR, HF, TF2, PRETRAINING_RUN = "tf1", "electra-tf", "huggingface", "tf2", "pretraining-run"
RUN_CONFIG_FILE = PretrainingConfig.SAVED_CONFIG_FILE
CONFIG_FILE = "electra_config.json"
FORMAT_TAG = "electra-tf-model"
VOCAB_FILE = "vocab.txt"
# A SentencePiece model travels under the name transformers' SentencePiece tokenizers look for.
SPM_FILE = "spiece.model"
WEIGHTS_PREFIX = os.path.join("weights", "model.ckpt")
HF_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


@dataclasses.dataclass
class Source:
  """Weights read from any format, under reference names."""
  format: str
  path: str
  arrays: typing.Dict[str, np.ndarray]  # pre-training weights (spec section 4 names)
  architecture: Architecture
  extra: typing.Dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # e.g. task_specific/*
  ignored: typing.List[str] = dataclasses.field(default_factory=list)  # optimizer slots, unknown names
  vocab_file: typing.Optional[str] = None
  do_lower_case: typing.Optional[bool] = None
  global_step: typing.Optional[int] = None


# ---------------------------------------------------------------------------------------------------
# Locating and recognising inputs.


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
  return (PRETRAINING_RUN if fileio.isfile(_run_config_path(prefix)) else TF2), prefix


def _run_config_path(path: str) -> str:
  """The run's saved hparams, for its model directory or one of its checkpoint prefixes."""
  return os.path.join(path if fileio.isdir(path) else os.path.dirname(path), RUN_CONFIG_FILE)


def _vocab(vocab_file: str, check_special: bool = False):
  """``tokenization.read_vocab`` with its error as a ConversionError."""
  try:
    return read_vocab(vocab_file, check_special=check_special)
  except VocabError as e:
    raise ConversionError(str(e)) from None


def count_vocab(vocab_file: str) -> int:
  """Tokens in a WordPiece vocab (counted as the reference reads it: up to the first empty line) or pieces
  in a SentencePiece model."""
  return _vocab(vocab_file).size


def vocab_kind(vocab_file: str) -> str:
  """"wordpiece" or "sentencepiece"."""
  return _vocab(vocab_file).kind


def vocab_file_name(vocab_file: str) -> str:
  """The name a vocab is copied under beside exported weights (where ``_sibling_vocab`` finds it)."""
  return SPM_FILE if vocab_kind(vocab_file) == "sentencepiece" else VOCAB_FILE


def _copy_vocab(vocab_file: typing.Optional[str], folder: str):
  if vocab_file:
    fileio.copy(vocab_file, os.path.join(folder, vocab_file_name(vocab_file)))


def check_vocab(vocab_file: typing.Optional[str], arch: Architecture):
  if vocab_file is None:
    return
  if not fileio.isfile(vocab_file):
    raise ConversionError(f"vocab {vocab_file}: no such file")
  n, rows = count_vocab(vocab_file), arch.discriminator.vocab_size
  if n != rows:
    raise ConversionError(f"vocab {vocab_file} has {n} tokens but the checkpoint's word embeddings have "
                          f"{rows} rows; pass the vocab the model was trained with")


def _sibling_vocab(path: str) -> typing.Optional[str]:
  folder = path if fileio.isdir(path) else os.path.dirname(path)
  for name in (VOCAB_FILE, SPM_FILE):
    candidate = os.path.join(folder, name)
    if fileio.isfile(candidate):
      return candidate
  return None


# ---------------------------------------------------------------------------------------------------
# Readers.


def read_tf1(prefix: str) -> Source:
  """A reference-layout TF1 checkpoint: pre-training weights, ``task_specific/*`` extras, the rest ignored."""
  reader = tf.compat.v1.train.NewCheckpointReader(prefix)
  shapes = reader.get_variable_to_shape_map()
  arch = infer_architecture(shapes, source=prefix)
  arrays, extra, ignored = {}, {}, []
  for name in sorted(shapes):
    if is_reference_weight(name):
      arrays[name] = reader.get_tensor(name)
    elif name.startswith("task_specific/") and not name.endswith(("/adam_m", "/adam_v")):
      extra[name] = reader.get_tensor(name)
    elif name != "global_step":
      ignored.append(name)
  step = int(reader.get_tensor("global_step")) if "global_step" in shapes else None
  return Source(TF1, prefix, arrays, arch, extra, ignored, _sibling_vocab(prefix), None, step)


def reference_name_from_hf(key: str, target: str) -> typing.Optional[str]:
  """The inverse of ``hf_mapping.hf_name`` (checked against it), or None for keys with no reference twin
  (the tied ``generator_lm_head.weight``, buffers, HF-only heads)."""
  if key == "generator_lm_head.bias":
    return "generator_predictions/output_bias"
  name = re.sub(r"layer\.(\d+)", r"layer_\1", key.replace("dense_prediction", "dense_1")).replace(".", "/")
  if name.endswith("_embeddings/weight"):
    name = name[:-len("/weight")]
  elif "/LayerNorm/" in name:
    name = re.sub(r"/weight$", "/gamma", re.sub(r"/bias$", "/beta", name))
  else:
    name = re.sub(r"/weight$", "/kernel", name)
  if target == hf_mapping.GENERATOR and name.startswith(("electra/encoder/", "electra/embeddings_project/")):
    name = "generator/" + name[len("electra/"):]
  if not is_reference_weight(name) or hf_mapping.hf_name(name, target) != key:
    return None
  return name


def _hf_target(config: dict, path: str) -> str:
  if config.get("model_type") != "electra":
    raise ConversionError(f"{path} is a Hugging Face {config.get('model_type')!r} model, not ELECTRA")
  archs = config.get("architectures") or ["ElectraModel"]
  return hf_mapping.GENERATOR if "ElectraForMaskedLM" in archs else hf_mapping.DISCRIMINATOR


def read_hf_state(path: str) -> typing.Tuple[dict, dict]:
  """(config.json dict, {hf_key: array}) of a transformers directory."""
  with fileio.open_file(os.path.join(path, "config.json"), encoding="utf-8") as f:
    config = json.load(f)
  _hf_target(config, path)
  weights = os.path.join(path, HF_WEIGHT_FILES[0])
  if fileio.isfile(weights):
    from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top
    with fileio.local_copy(weights) as local:  # safetensors and torch open local files only
      return config, load_file(local)
  import torch  # pylint: disable=g-import-not-at-top  (only for legacy .bin files)
  with fileio.local_copy(os.path.join(path, HF_WEIGHT_FILES[1])) as local:
    state = torch.load(local, map_location="cpu", weights_only=True)
  return config, {k: v.float().numpy() for k, v in state.items()}


def read_hf(path: str, generator_path: typing.Optional[str] = None) -> Source:
  """A Hugging Face discriminator (or generator) directory, optionally with the matching generator.

  HF stores the generator's copy of the shared embeddings separately; when the widths match they are taken
  as shared (``electra/embeddings``), as the reference trains them; a different width means the generator
  had its own (``untied_generator_embeddings``)."""
  config, state = read_hf_state(path)
  target = _hf_target(config, path)
  arrays, ignored = {}, []
  for key, value in state.items():
    ref = reference_name_from_hf(key, target)
    if ref is None:
      ignored.append(key)
    else:
      arrays[ref] = hf_mapping.from_hf_state_dict({key: value}, [ref], target)[ref]
  if generator_path is not None:
    if target != hf_mapping.DISCRIMINATOR:
      raise ConversionError(f"{path} is a generator (ElectraForMaskedLM); pass the discriminator first")
    gen_config, gen_state = read_hf_state(generator_path)
    if _hf_target(gen_config, generator_path) != hf_mapping.GENERATOR:
      raise ConversionError(f"{generator_path} is not an ElectraForMaskedLM generator")
    own = gen_config.get("embedding_size") != config.get("embedding_size")
    for key, value in gen_state.items():
      ref = reference_name_from_hf(key, hf_mapping.GENERATOR)
      if ref is None:
        ignored.append("generator:" + key)
        continue
      if ref.startswith("electra/embeddings/"):
        if not own:
          continue  # shared: the discriminator's copy is the one the reference trains
        ref = "generator/" + ref[len("electra/"):]
      arrays[ref] = hf_mapping.from_hf_state_dict({key: value}, [ref], hf_mapping.GENERATOR)[ref]
  arch = infer_architecture({k: v.shape for k, v in arrays.items()}, source=path)
  lower = _hf_lower_case(path)
  return Source(HF, path, arrays, arch, ignored=ignored, vocab_file=_sibling_vocab(path), do_lower_case=lower)


def _hf_lower_case(path: str) -> typing.Optional[bool]:
  tok = os.path.join(path, "tokenizer_config.json")
  if fileio.isfile(tok):
    with fileio.open_file(tok, encoding="utf-8") as f:
      return json.load(f).get("do_lower_case")
  return None


def read_model_dir(path: str) -> Source:
  """This project's model directory: its reference-named weights plus the recorded architecture."""
  meta = read_model_config(path)
  source = read_tf1(os.path.join(path, WEIGHTS_PREFIX))
  return dataclasses.replace(source, format=MODEL_DIR, path=path,
                             architecture=Architecture.from_json(meta["architecture"]),
                             vocab_file=_sibling_vocab(path),
                             do_lower_case=meta.get("do_lower_case"), global_step=meta.get("global_step"))


def read_model_config(path: str) -> dict:
  with fileio.open_file(os.path.join(path, CONFIG_FILE), encoding="utf-8") as f:
    meta = json.load(f)
  if meta.get("format") != FORMAT_TAG:
    raise ConversionError(f"{path}/{CONFIG_FILE} is not an electra-tf model config (format "
                          f"{meta.get('format')!r})")
  return meta


def read_pretraining_config(path: str) -> PretrainingConfig:
  """The hparams a ``run_pretraining.py`` run saved beside its checkpoints (``path``: the model directory or
  a checkpoint prefix; unknown keys, from another version, are dropped)."""
  path = _run_config_path(path)
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
  reason = runtime.restore_checkpoint(prefix, nets.checkpoint_objects())
  if reason is not None:
    raise ConversionError(f"{prefix} does not match the networks of {_run_config_path(prefix)} ({reason})")
  numbered = re.search(r"-(\d+)$", prefix)  # the trainer numbers its checkpoints by step
  step = int(numbered.group(1)) if numbered else None
  vocab = cfg.vocab_file if cfg.vocab_file and fileio.isfile(cfg.vocab_file) else None
  source = source_from_networks(nets, vocab, cfg.do_lower_case, step)
  # Weights cannot tell the head count (or dropout); the run's own configs can.
  arch = source.architecture
  generator = None if arch.generator is None else (
      cfg.discriminator_config() if arch.tied_generator else cfg.generator_config())
  arch = dataclasses.replace(arch, discriminator=cfg.discriminator_config(), generator=generator)
  return dataclasses.replace(source, format=PRETRAINING_RUN, path=prefix, architecture=arch)


def read_source(path: str, generator_path: typing.Optional[str] = None) -> Source:
  """Any supported format -> ``Source`` (reference-named arrays and the detected architecture)."""
  fmt, resolved = detect_format(path)
  if generator_path is not None and fmt != HF:
    raise ConversionError("a separate generator directory is only read with a Hugging Face discriminator")
  if fmt == TF1:
    return read_tf1(resolved)
  if fmt == HF:
    return read_hf(resolved, generator_path)
  if fmt == MODEL_DIR:
    return read_model_dir(resolved)
  if fmt == PRETRAINING_RUN:
    return read_pretraining_run(resolved)
  raise ConversionError(f"{resolved} is a TF2 pre-training checkpoint without the run's {RUN_CONFIG_FILE} "
                        "(written by pre-training runs of electra-tf 0.1.0 and later); write the run's hparams "
                        f"there as JSON ({{\"model_size\": ..., \"vocab_size\": ...}}) or rerun pre-training")


def holds_weight(arch: Architecture, name: str) -> bool:
  """Whether a checkpoint with this architecture holds the weight ``name`` (heads/generator may be absent)."""
  if name.startswith("discriminator_predictions/"):
    return arch.has_discriminator_head
  if name.startswith(("generator/", "generator_predictions/")):
    return arch.generator is not None
  return True


def source_from_networks(nets, vocab_file: typing.Optional[str] = None, do_lower_case: bool = True,
                         global_step: typing.Optional[int] = None) -> Source:
  """Our in-memory ``PretrainingNetworks`` as a ``Source`` (so every writer can export them)."""
  arrays = {n: v.numpy() for n, v in reference_variables(nets).items()}
  arch = infer_architecture({n: a.shape for n, a in arrays.items()}, source="the networks")
  return Source("networks", "<memory>", arrays, arch, vocab_file=vocab_file, do_lower_case=do_lower_case,
                global_step=global_step)


# ---------------------------------------------------------------------------------------------------
# Writers. Each writes into a temporary directory beside the destination and renames it at the end, so an
# interrupted export never leaves a half-written model behind.


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
              vocab_file: typing.Optional[str] = None, overwrite: bool = False) -> str:
  """A reference-layout checkpoint ``<out_dir>/model.ckpt-<step>`` (+ ``checkpoint`` state file and vocab),
  with exactly the given names and shapes plus ``global_step`` (int64), and no optimizer slots, as the
  released checkpoints. Returns the prefix."""
  global_step = int(global_step or 0)
  name = f"model.ckpt-{global_step}"
  with runtime.atomic_directory(out_dir, overwrite) as tmp:
    _save_bundle(os.path.join(tmp, name), arrays, global_step)
    _write_checkpoint_state(tmp, name)
    _copy_vocab(vocab_file, tmp)
  return os.path.join(out_dir, name)


def write_model_dir(out_dir: str, source: Source, overwrite: bool = False) -> str:
  """This project's model directory from any ``Source`` (see the module docstring for the layout).

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
  with runtime.atomic_directory(out_dir, overwrite) as tmp:
    os.makedirs(os.path.join(tmp, os.path.dirname(WEIGHTS_PREFIX)))
    _save_bundle(os.path.join(tmp, WEIGHTS_PREFIX), arrays, source.global_step or 0)
    _write_checkpoint_state(tmp, WEIGHTS_PREFIX)  # the directory is also a reference init_checkpoint
    _copy_vocab(source.vocab_file, tmp)
    with fileio.open_file(os.path.join(tmp, CONFIG_FILE), "w", encoding="utf-8") as f:
      json.dump(meta, f, indent=2, sort_keys=True)
  return out_dir


def generator_arrays(source: Source) -> dict:
  """The generator's weights named as a ``generator/*`` tower next to ``electra/embeddings`` (the layout
  ``hf_mapping`` exports): a tied generator's ``electra`` encoder is renamed, and untied embeddings are
  used instead of the discriminator's."""
  arch, out = source.architecture, {}
  for name, value in source.arrays.items():
    if name.startswith("discriminator_predictions/"):
      continue
    if arch.tied_generator and name.startswith(("electra/encoder/", "electra/embeddings_project/")):
      name = "generator/" + name[len("electra/"):]
    elif arch.untied_generator_embeddings and name.startswith("electra/"):
      continue
    out[name] = value
  return out


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
  with runtime.atomic_directory(out_dir, overwrite) as tmp:
    save_file({k: np.ascontiguousarray(v, np.float32) for k, v in state.items()},
              os.path.join(tmp, HF_WEIGHT_FILES[0]), metadata={"format": "pt"})
    with fileio.open_file(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
      json.dump(config, f, indent=2, sort_keys=True)
    if source.vocab_file:
      _copy_vocab(source.vocab_file, tmp)
      lower = True if source.do_lower_case is None else bool(source.do_lower_case)
      with fileio.open_file(os.path.join(tmp, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(hf_tokenizer_config(source.vocab_file, lower, config.get("max_position_embeddings", 512)),
                  f, indent=2)
  return out_dir


def hf_tokenizer_config(vocab_file: str, do_lower_case: bool, max_length: int) -> dict:
  """``tokenizer_config.json`` for the copied vocab. WordPiece: ``ElectraTokenizer``. SentencePiece:
  transformers has no ELECTRA SentencePiece tokenizer; ``AlbertTokenizer`` over ``spiece.model`` builds the
  same ``[CLS] a [SEP] b [SEP]`` inputs with the same ids as the sentencepiece library (keep_accents: no
  accent stripping of its own; remove_space only collapses spaces, as the model's normaliser does), its
  special tokens named after the model's pieces. It also turns `` and '' into a double quote, which
  electra-tf does not: text with those differs (docs/interop.md)."""
  vocab = read_vocab(vocab_file)
  if vocab.kind != "sentencepiece":
    return {"tokenizer_class": "ElectraTokenizer", "do_lower_case": do_lower_case,
            "model_max_length": max_length}
  pieces = vocab.id_to_token()
  token = {name: pieces[i] for name, i in vocab.special.items()}
  return {"tokenizer_class": "AlbertTokenizer", "do_lower_case": do_lower_case, "keep_accents": True,
          "remove_space": True, "model_max_length": max_length,
          "unk_token": token["[UNK]"], "pad_token": token["[PAD]"], "cls_token": token["[CLS]"],
          "sep_token": token["[SEP]"], "mask_token": token["[MASK]"], "bos_token": token["[CLS]"],
          "eos_token": token["[SEP]"]}


# ---------------------------------------------------------------------------------------------------
# Our variables.


def assign_arrays(nets_or_variables, arrays: typing.Mapping[str, np.ndarray]) -> typing.List[str]:
  """Assigns ``arrays`` to the matching reference-named variables (shape-checked); returns the names set."""
  variables = (nets_or_variables if isinstance(nets_or_variables, typing.Mapping)
               else reference_variables(nets_or_variables))
  done = []
  for name, var in variables.items():
    if name not in arrays:
      continue
    value = np.asarray(arrays[name])
    if tuple(value.shape) != tuple(var.shape):
      raise ConversionError(f"{name}: checkpoint shape {list(value.shape)} does not match the model's "
                            f"{list(var.shape)}")
    var.assign(value.astype(np.float32))
    done.append(name)
  return done
