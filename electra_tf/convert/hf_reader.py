"""Reading a Hugging Face transformers directory (``ElectraForPreTraining``, ``ElectraForMaskedLM``,
``ElectraModel``; safetensors or a legacy ``pytorch_model.bin``) into reference names."""

import os
import re
import typing

from electra_tf import fileio
from electra_tf.configs import ModelConfig
from electra_tf.convert import hf_mapping
from electra_tf.convert.architecture import infer_architecture, is_reference_weight
from electra_tf.convert.layout import HF, HF_WEIGHT_FILES, read_json_object
from electra_tf.convert.source import Source
from electra_tf.convert.vocab_files import sibling_vocab
from electra_tf.errors import ConversionError, HParamError, first_line

# What to do about a Hugging Face directory whose files do not read.
_HF_FIX = "save the model again with transformers' save_pretrained, or download the directory again"
# What transformers' ElectraConfig takes for the fields a config.json leaves out.
_HF_DEFAULTS = dict(num_attention_heads=4, hidden_act="gelu", hidden_dropout_prob=0.1,
                    attention_probs_dropout_prob=0.1, initializer_range=0.02)


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
  config = read_json_object(os.path.join(path, "config.json"), _HF_FIX)
  _hf_target(config, path)
  weights = os.path.join(path, HF_WEIGHT_FILES[0])
  if fileio.isfile(weights):
    from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top
    with fileio.local_copy(weights) as local:  # safetensors and torch open local files only
      try:
        return config, load_file(local)
      except Exception as e:  # pylint: disable=broad-except  (safetensors raises its own SafetensorError)
        raise _unreadable(weights, e) from None
  import torch  # pylint: disable=g-import-not-at-top  (only for legacy .bin files)
  weights = os.path.join(path, HF_WEIGHT_FILES[1])
  with fileio.local_copy(weights) as local:
    try:
      state = torch.load(local, map_location="cpu", weights_only=True)
    except Exception as e:  # pylint: disable=broad-except  (torch raises pickle's, zipfile's and its own)
      raise _unreadable(weights, e) from None
  if not isinstance(state, dict):
    raise ConversionError(f"{weights} holds a {type(state).__name__}, not a state dict; {_HF_FIX}")
  return config, {k: v.float().numpy() for k, v in state.items()}


def stated_fields(config: dict, path: str) -> dict:
  """The fields of a transformers config that weights cannot show (the head count, activation, dropout,
  initializer range; transformers' defaults for those it leaves out), as ``ModelConfig`` fields.

  Raises ConversionError for a value electra-tf cannot build: an activation other than gelu, relu or tanh, a
  LayerNorm epsilon other than the reference's 1e-12, or position embeddings that are not absolute."""
  config_file = os.path.join(path, "config.json")
  fields = {k: config.get(k, default) for k, default in _HF_DEFAULTS.items()}
  try:
    ModelConfig().update(fields)
  except HParamError as e:
    raise ConversionError(f"{config_file}: {e}") from None
  eps = config.get("layer_norm_eps", 1e-12)
  if eps != 1e-12:
    raise ConversionError(f"{config_file}: layer_norm_eps {eps!r}; electra-tf builds ELECTRA's LayerNorm "
                          "with epsilon 1e-12 only")
  positions = config.get("position_embedding_type", "absolute")
  if positions != "absolute":
    raise ConversionError(f"{config_file}: position_embedding_type {positions!r}; electra-tf builds ELECTRA's "
                          "absolute position embeddings only")
  return fields


def _unreadable(weights: str, error: Exception) -> ConversionError:
  return ConversionError(f"{weights} is corrupt or truncated ({first_line(error)}); {_HF_FIX}")


def read_hf(path: str, generator_path: typing.Optional[str] = None) -> Source:
  """A Hugging Face discriminator (or generator) directory, optionally with the matching generator.

  The sizes come from the weights' shapes; the head count, activation, dropout and initializer range from
  ``config.json`` (``stated_fields``). HF stores the generator's copy of the shared embeddings separately;
  when the widths match they are taken as shared (``electra/embeddings``), as the reference trains them; a
  different width means the generator had its own (``untied_generator_embeddings``)."""
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
  # The head count and activation are in config.json only: the weights have the same shapes for any.
  stated = {"generator" if target == hf_mapping.GENERATOR else "discriminator": stated_fields(config, path)}
  if generator_path is not None:
    stated["generator"] = stated_fields(gen_config, generator_path)
  arch = arch.with_stated(**stated, source=path)
  lower = _hf_lower_case(path)
  return Source(HF, path, arrays, arch, ignored=ignored, vocab_file=sibling_vocab(path), do_lower_case=lower)


def _hf_lower_case(path: str) -> typing.Optional[bool]:
  tok = os.path.join(path, "tokenizer_config.json")
  if fileio.isfile(tok):
    return read_json_object(tok, _HF_FIX).get("do_lower_case")
  return None
