"""Dropout driven by explicit stateless seeds.

Every random draw of a training step derives from one ``[2]`` int seed that the training loop owns, so
a resumed run replays the same masks, replicas differ only by the seed they are handed, and XLA compiles
the Philox generator instead of the slow stateful path (measured 7-10x slower on CPU).
"""

import tensorflow as tf


def derive_seed(seed, index: int):
  """A new ``[2]`` seed for site ``index`` of a computation seeded by ``seed``."""
  return tf.random.experimental.stateless_fold_in(seed, index)


def fresh_seed():
  """A ``[2]`` seed for callers that train without handing one in (ad-hoc use, not the training loops)."""
  return tf.random.uniform([2], maxval=tf.int32.max, dtype=tf.int32)


def stateless_dropout(x, rate: float, seed):
  """Inverted dropout as ``tf.nn.dropout``: zero with probability ``rate``, scale the rest by 1/(1-rate)."""
  if rate <= 0.0:
    return x
  keep = tf.random.stateless_uniform(tf.shape(x), seed=seed, alg="philox") >= rate
  return tf.where(keep, x * tf.cast(1.0 / (1.0 - rate), x.dtype), tf.zeros_like(x))
