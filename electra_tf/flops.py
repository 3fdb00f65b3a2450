"""Training FLOPs as google-research/electra's ``flops_computation.py`` counts them: the paper's convention for
comparing pre-training runs at equal compute.

A matmul is 2mn, backward = forward, embedding lookups are dense (one-hot matmuls), the masked-LM softmax is paid
on 15.625% of the positions, and the small per-activation ops use the script's constants. Written from its
description against our ``ModelConfig``; tests/test_flops.py checks it against the script's published totals.
"""

DROPOUT, LAYER_NORM, ACTIVATION, SOFTMAX, OUTPUT_FRAC = 4, 5, 8, 5, 0.15625


def _block_flops(h, i, heads, s):
  attention = (6 * h * h + 3 * h + 2 * h * s + (SOFTMAX + DROPOUT + 1) * s * heads + 2 * h * s + 2 * h * h + h
               + DROPOUT * h + h + LAYER_NORM)  # the script counts this LayerNorm once, not per unit
  ffn = 2 * h * i + ACTIVATION * i + i + 2 * h * i + h + DROPOUT * h + h + LAYER_NORM * h
  return (attention + ffn) * s


def _input_embedding_flops(h, e, v, s):
  f = 2 * e * v + 2 * e * (s + 2) + 2 * e + LAYER_NORM * e + DROPOUT * e
  if e != h:
    f += 2 * h * e + h
  return f * s


def _mlm_head_flops(h, e, v, s):
  return OUTPUT_FRAC * (2 * e * v + 2 * h * e + e + ACTIVATION * e + LAYER_NORM * e + SOFTMAX * v + 2 * v) * s


def _rtd_head_flops(h, s):
  return (2 * h * h + h + ACTIVATION * h + 2 * h) * s


def train_flops_per_sequence(c, s: int, discriminator: bool) -> float:
  """Forward + backward FLOPs of one sequence of length ``s`` for a ``ModelConfig``-like ``c`` (``hidden_size``,
  ``embedding_size`` (None: the hidden size), ``vocab_size``, ``num_hidden_layers``, ``intermediate_size``,
  ``num_attention_heads``): with the replaced-token-detection head if ``discriminator``, else the masked-LM
  head."""
  h, e, v = c.hidden_size, c.embedding_size or c.hidden_size, c.vocab_size
  head = _rtd_head_flops(h, s) if discriminator else _mlm_head_flops(h, e, v, s)
  return 2 * (c.num_hidden_layers * _block_flops(h, c.intermediate_size, c.num_attention_heads, s)
              + _input_embedding_flops(h, e, v, s) + head)


def flops_per_step(cfg) -> float:
  """Training FLOPs of one step of a ``PretrainingConfig``: discriminator + generator for ELECTRA, the one model
  for MLM-only (``electra_objective`` false)."""
  s, disc = cfg.max_seq_length, cfg.discriminator_config()
  if not cfg.electra_objective:
    return cfg.train_batch_size * train_flops_per_sequence(disc, s, False)
  return cfg.train_batch_size * (train_flops_per_sequence(disc, s, True) +
                                 train_flops_per_sequence(cfg.generator_config(), s, False))
