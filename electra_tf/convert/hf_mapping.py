"""Reference TF1 names <-> Hugging Face transformers' PyTorch ELECTRA names and configs.

Follows the rules of transformers' own TF1 converter (``load_tf_weights_in_electra``): ``dense_1`` is
``dense_prediction``, ``output_bias`` is the LM head's bias, kernels are transposed to [out, in], and a
generator's ``generator/*`` scopes become ``electra.*`` next to the shared ``electra/embeddings``.
"""

import re
import typing

import numpy as np

from electra_tf.configs import ModelConfig

DISCRIMINATOR = "discriminator"
GENERATOR = "generator"


def hf_name(reference_name: str, target: str) -> typing.Optional[str]:
  """The HF parameter name for a reference variable name, or None if ``target`` has no such weight."""
  name = reference_name
  if target == GENERATOR:
    if name.startswith(("discriminator_predictions/", "electra/encoder/", "electra/embeddings_project/")):
      return None
    if name.startswith("generator/"):
      name = "electra/" + name[len("generator/"):]
    if name == "generator_predictions/output_bias":
      return "generator_lm_head.bias"
  else:
    if name.startswith(("generator/", "generator_predictions/")):
      return None
  name = name.replace("discriminator_predictions/dense_1/", "discriminator_predictions/dense_prediction/")
  name = re.sub(r"layer_(\d+)", r"layer.\1", name)
  name = re.sub(r"/(kernel|gamma)$", "/weight", name)
  name = re.sub(r"/beta$", "/bias", name)
  name = re.sub(r"(_embeddings)$", r"\1/weight", name)
  return name.replace("/", ".")


def is_kernel(reference_name: str) -> bool:
  return reference_name.endswith("/kernel")


def to_hf_state_dict(reference_arrays: typing.Mapping[str, np.ndarray], target: str) -> dict:
  """``{reference_name: array}`` -> ``{hf_name: array}`` for ``ElectraForPreTraining`` (discriminator)
  or ``ElectraForMaskedLM`` (generator; includes the tied ``generator_lm_head.weight``)."""
  state = {}
  for ref, value in reference_arrays.items():
    name = hf_name(ref, target)
    if name is None:
      continue
    value = np.asarray(value, dtype=np.float32)
    state[name] = np.ascontiguousarray(value.T) if is_kernel(ref) else value
  if target == GENERATOR and "electra.embeddings.word_embeddings.weight" in state:
    state["generator_lm_head.weight"] = state["electra.embeddings.word_embeddings.weight"]
  return state


def from_hf_state_dict(hf_state: typing.Mapping[str, np.ndarray], reference_names: typing.Iterable[str],
                       target: str) -> dict:
  """The inverse: ``{reference_name: array}`` for the given reference names found in ``hf_state``."""
  arrays = {}
  for ref in reference_names:
    name = hf_name(ref, target)
    if name is None or name not in hf_state:
      continue
    value = np.asarray(hf_state[name], dtype=np.float32)
    arrays[ref] = np.ascontiguousarray(value.T) if is_kernel(ref) else value
  return arrays


def hf_config_dict(config: ModelConfig, embedding_size: typing.Optional[int] = None) -> dict:
  """Arguments of ``transformers.ElectraConfig`` for one of our model configs."""
  return dict(vocab_size=config.vocab_size, embedding_size=embedding_size or config.embedding_size,
              hidden_size=config.hidden_size, num_hidden_layers=config.num_hidden_layers,
              num_attention_heads=config.num_attention_heads, intermediate_size=config.intermediate_size,
              hidden_act=config.hidden_act, hidden_dropout_prob=config.hidden_dropout_prob,
              attention_probs_dropout_prob=config.attention_probs_dropout_prob,
              max_position_embeddings=config.max_position_embeddings, type_vocab_size=config.type_vocab_size,
              initializer_range=config.initializer_range, layer_norm_eps=1e-12)
