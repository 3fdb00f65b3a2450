"""Reading a Hugging Face transformers directory (``ElectraForPreTraining``, ``ElectraForMaskedLM``,
``ElectraModel``; safetensors or a legacy ``pytorch_model.bin``) into reference names."""

import json
import os
import re
import typing

from electra_tf import fileio
from electra_tf.convert import hf_mapping
from electra_tf.convert.architecture import infer_architecture, is_reference_weight
from electra_tf.convert.detect import HF, HF_WEIGHT_FILES
from electra_tf.convert.source import Source
from electra_tf.convert.vocab_files import sibling_vocab
from electra_tf.errors import ConversionError


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
  return Source(HF, path, arrays, arch, ignored=ignored, vocab_file=sibling_vocab(path), do_lower_case=lower)


def _hf_lower_case(path: str) -> typing.Optional[bool]:
  tok = os.path.join(path, "tokenizer_config.json")
  if fileio.isfile(tok):
    with fileio.open_file(tok, encoding="utf-8") as f:
      return json.load(f).get("do_lower_case")
  return None
