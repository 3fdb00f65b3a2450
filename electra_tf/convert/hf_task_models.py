"""Fine-tuned heads as Hugging Face task models, where the heads correspond.

* Classification / regression: the reference's head is dropout + dense(n) on [CLS]; HF's
  ``ElectraClassificationHead`` is dropout + dense(H) + GELU + dropout + dense(n). The extra layer is set
  to an exact identity: ``dense = I`` with a bias shift c, so GELU(x + c) = x + c, and ``out_proj``
  subtracts W c again. That is exact because the encoder's last op is a LayerNorm, so every [CLS] feature
  satisfies |x_i| <= sqrt(H - 1) |gamma_i| + |beta_i| (a normalised vector has sum z^2 = H), and c is that
  bound + 10, where GELU's erf factor is 1 to float precision. Logits match inference exactly; further
  fine-tuning in HF would train that extra layer, which the reference's head does not have.
* Tagging: ``ElectraForTokenClassification`` is dropout + dense(n) per token, the reference's head (the
  reference feeds segment ids 1 for tagging: pass ``token_type_ids=1`` in HF).
* QA: the reference's joint start/end head with beam search and answerable classifier has no HF
  counterpart (``ElectraForQuestionAnswering`` is one dense(2)); exporting it is refused.

Which function exports which head family is said by the family (``finetuning.head_families``).
"""

import numpy as np

from electra_tf.convert import hf_mapping
from electra_tf.convert.source import Source
from electra_tf.convert.writers import hf_config

GELU_MARGIN = 10.0  # Phi(10) = 1 - 8e-24: GELU(x) == x in float32 beyond this


def _encoder_state(source: Source) -> dict:
  encoder = {n: v for n, v in source.arrays.items() if n.startswith("electra/")}
  return hf_mapping.to_hf_state_dict(encoder, hf_mapping.DISCRIMINATOR)


def layer_norm_bound(source: Source) -> float:
  """max_i sqrt(H-1)|gamma_i| + |beta_i| of the encoder's final LayerNorm: a bound on every output."""
  d = source.architecture.discriminator
  last = f"electra/encoder/layer_{d.num_hidden_layers - 1}/output/LayerNorm"
  gamma, beta = source.arrays[f"{last}/gamma"], source.arrays[f"{last}/beta"]
  return float(np.max(np.sqrt(d.hidden_size - 1) * np.abs(gamma) + np.abs(beta)))


def _head_arrays(source: Source, task: str, info: dict):
  """(kernel [H, n], bias [n], label maps for config.json) of a fine-tuned task's dense head."""
  scope = f"task_specific/{task}"
  kernel, bias = source.extra[f"{scope}/dense/kernel"], source.extra[f"{scope}/dense/bias"]  # [H, n], [n]
  labels = info.get("labels") or [f"LABEL_{i}" for i in range(kernel.shape[1])]
  label_maps = dict(id2label={str(i): l for i, l in enumerate(labels)},
                    label2id={l: i for i, l in enumerate(labels)})
  return kernel, bias, label_maps


def token_classification(source: Source, task: str, info: dict):
  """(state dict, config.json dict, note) of a tagging head as ``ElectraForTokenClassification``."""
  kernel, bias, label_maps = _head_arrays(source, task, info)
  state = _encoder_state(source)
  state.update({"classifier.weight": kernel.T.copy(), "classifier.bias": bias})
  config = hf_config(source.architecture.discriminator, "ElectraForTokenClassification",
                     num_labels=kernel.shape[1], **label_maps)
  return state, config, "ElectraForTokenClassification: the same head; the reference tags with token_type_ids = 1"


def sequence_classification(source: Source, task: str, info: dict, regression: bool = False):
  """(state dict, config.json dict, note) of a classification (or ``regression``) head as
  ``ElectraForSequenceClassification``, its extra dense + GELU an exact identity."""
  d = source.architecture.discriminator
  kernel, bias, label_maps = _head_arrays(source, task, info)
  state = _encoder_state(source)
  shift = layer_norm_bound(source) + GELU_MARGIN
  hidden = d.hidden_size
  state.update({"classifier.dense.weight": np.eye(hidden, dtype=np.float32),
                "classifier.dense.bias": np.full([hidden], shift, np.float32),
                "classifier.out_proj.weight": kernel.T.copy(),
                "classifier.out_proj.bias": (bias - shift * kernel.sum(0)).astype(np.float32)})
  config = hf_config(d, "ElectraForSequenceClassification", num_labels=kernel.shape[1],
                     problem_type="regression" if regression else "single_label_classification",
                     **({} if regression else label_maps))
  note = ("ElectraForSequenceClassification: HF's head has an extra dense+GELU the reference lacks; it is "
          f"exported as an exact identity (shift {shift:.1f}), so logits match")
  if regression:
    note += "; the regression output is label / 5, as the reference trains STS"
  return state, config, note
