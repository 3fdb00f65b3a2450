"""Helpers shared by the conversion tests: perturbed networks, a tiny pre-training run, inputs, our,
transformers' and keras-hub's outputs."""

import numpy as np
import tensorflow as tf

from electra_tf.checkpoint_names import reference_variables
from electra_tf.configs import PretrainingConfig
from electra_tf.modeling import build_pretraining_networks
from electra_tf.pretraining import trainer

import _pretraining_testlib as lib


def perturbed_networks(preset=None, seed=0, **hparams):
  """Networks whose every weight (LayerNorm, biases, output_bias included) is random, so a swapped
  gamma/beta or a missing transpose cannot pass a parity test by accident."""
  nets = build_pretraining_networks(PretrainingConfig.create(preset=preset, **hparams))
  rng = np.random.default_rng(seed)
  for var in {id(v): v for v in reference_variables(nets).values()}.values():
    var.assign(var.numpy() + rng.normal(0.0, 0.05, var.shape).astype(np.float32))
  return nets


def random_inputs(vocab_size, batch=2, seq=12, seed=1):
  rng = np.random.default_rng(seed)
  ids = rng.integers(0, vocab_size, (batch, seq)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[1, seq - 4:] = 0  # padding in the second row
  segments = np.zeros_like(ids)
  segments[:, seq // 2:] = 1
  return ids, mask, segments


def our_logits(model, inputs):
  ids, mask, seg = (tf.constant(x) for x in inputs)
  return model(ids, mask, seg, training=False)["logits"].numpy()


def hf_logits(model, inputs):
  import torch  # pylint: disable=g-import-not-at-top
  ids, mask, seg = (torch.tensor(x, dtype=torch.long) for x in inputs)
  model.eval()
  with torch.no_grad():
    return model(input_ids=ids, attention_mask=mask, token_type_ids=seg).logits.numpy()


def max_diff(a, b):
  return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def tiny_pretraining_run(root, data_dir, bert_vocab, **hparams):
  """A tiny pre-training run on a ~300-token vocab (the 5 special tokens and the text's most frequent pieces),
  trained to its end; returns (config, trainer). ``hparams`` override ``_pretraining_testlib.tiny_hparams``."""
  root = lib.build_tfrecords(root, data_dir, bert_vocab, max_lines=300, top_k=300)
  vocab_size = len((root / "vocab.txt").read_text(encoding="utf-8").split())
  cfg = PretrainingConfig.create("tiny_run", str(root), **lib.tiny_hparams(vocab_size=vocab_size, **hparams))
  t = trainer.Trainer(cfg, progress=False, log_fn=lambda *_: None)
  t.train()
  return cfg, t


def keras_hub_outputs(backbone, inputs, exact_gelu=False):
  """keras-hub's sequence output; ``exact_gelu`` swaps its tanh-approximate GELU for the exact one, so the
  comparison isolates the weight mapping from the one deliberate difference between the two models."""
  import keras
  ids, mask, seg = inputs
  layers = [layer._feedforward_intermediate_dense for layer in backbone.transformer_layers]  # pylint: disable=protected-access
  before = [layer.activation for layer in layers]
  if exact_gelu:
    for layer in layers:
      layer.activation = keras.activations.gelu  # approximate=False
  try:
    return backbone({"token_ids": ids, "padding_mask": mask, "segment_ids": seg})["sequence_output"].numpy()
  finally:
    for layer, activation in zip(layers, before):
      layer.activation = activation


def encoder_outputs(encoder, inputs):
  import tensorflow as tf
  ids, mask, seg = (tf.constant(x) for x in inputs)
  return encoder(ids, mask, seg, training=False)["sequence_output"].numpy()
