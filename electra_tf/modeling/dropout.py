"""Dropout driven by explicit seeds: a stateless Philox ``[2]`` seed, or a per-example ``RowKeyedSeed``.

Every random draw of a training step derives from one seed that the training loop owns, so a resumed run
replays the same masks and XLA compiles the generator instead of the slow stateful path.
- ``RowKeyedSeed`` (what the training loops pass by default, ``per_example_dropout``): each example's mask
  is keyed by (key, its global row) through ``keyed_random``, so the masks of an example are the same
  whether it is computed in one batch, on any replica or in any micro-batch of gradient accumulation, with
  XLA or without; XLA fuses the hash into the step (faster than Philox there: benchmarks/README.md,
  "Dropout's random numbers").
- ``[2]`` int seed (``per_example_dropout`` false, and ad-hoc calls): Philox over the whole tensor; a
  replica's masks depend on its seed, so they change with the replica count (and with ``use_xla``:
  TensorFlow's Philox draws differently there).
Both are inverted Bernoulli dropout with the same rate; only which numbers are drawn differs.
"""

import tensorflow as tf

from electra_tf.modeling import keyed_random


class RowKeyedSeed:
  """Per-example dropout seed: a uint32 scalar ``key`` and the global row of the batch's first example.

  Created inside the compiled step (a Python object, not a tensor: never pass it across a tf.function).
  """

  def __init__(self, key, row_offset):
    self.key = key
    self.row_offset = row_offset

  def fold(self, index: int) -> "RowKeyedSeed":
    return RowKeyedSeed(keyed_random.fold_key(self.key, index), self.row_offset)


def derive_seed(seed, index: int):
  """A new seed for site ``index`` of a computation seeded by ``seed`` (same kind as ``seed``)."""
  if isinstance(seed, RowKeyedSeed):
    return seed.fold(index)
  return tf.random.experimental.stateless_fold_in(seed, index)


def fresh_seed():
  """A ``[2]`` seed for callers that train without handing one in (ad-hoc use, not the training loops)."""
  return tf.random.uniform([2], maxval=tf.int32.max, dtype=tf.int32)


def stateless_dropout(x, rate: float, seed, draw_shape=None):
  """Inverted dropout as ``tf.nn.dropout``: zero with probability ``rate``, scale the rest by 1/(1-rate).

  ``x``: [B, ...] (rows are examples when ``seed`` is a ``RowKeyedSeed``). ``draw_shape``: draw the mask of a
  tensor of this shape and keep its leading corner of ``x``'s shape, so a computation that keeps part of a
  tensor (the [CLS] queries of a last layer) drops exactly what the whole computation would."""
  if rate <= 0.0:
    return x
  shape = tf.shape(x) if draw_shape is None else draw_shape
  if isinstance(seed, RowKeyedSeed):
    u = keyed_random.keyed_uniform(seed.key, shape, seed.row_offset)
  else:
    u = tf.random.stateless_uniform(shape, seed=seed, alg="philox")
  if draw_shape is not None:
    u = tf.slice(u, tf.zeros_like(tf.shape(x)), tf.shape(x))
  keep = u >= rate
  return tf.where(keep, x * tf.cast(1.0 / (1.0 - rate), x.dtype), tf.zeros_like(x))
