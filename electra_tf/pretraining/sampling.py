"""Sampling from the generator: Gumbel-max in float32, with stop-gradient (reference ``sample_from_softmax``)."""

import tensorflow as tf

from electra_tf.pretraining import random_ops


def gumbel_noise(u):
  """The reference's ``-log(-log(U + 1e-9) + 1e-9)``."""
  return -tf.math.log(-tf.math.log(u + 1e-9) + 1e-9)


def sample_tokens(logits, seed, step, row_offset=0, temperature: float = 1.0, disallow_ids=None):
  """int32 [B, P] token ids drawn from softmax(logits / temperature), logits [B, P, V].

  Always float32, even under mixed precision (float16 Gumbel noise is biased; see torch #41663).
  ``disallow_ids`` [B, P]: subtract 1000 from that token's logit (``disallow_correct``). The reference
  takes argmax(softmax(logits + noise)); softmax is monotonic, so argmax(logits + noise) is the same
  draw without materialising a second [B, P, V] tensor.
  """
  logits = tf.cast(logits, tf.float32) / temperature
  if disallow_ids is not None:
    logits -= 1000.0 * tf.one_hot(disallow_ids, tf.shape(logits)[-1], dtype=tf.float32)
  u = random_ops.keyed_uniform(random_ops.step_key(seed, step, random_ops.GUMBEL), tf.shape(logits),
                               row_offset)
  return tf.stop_gradient(materialized_argmax(logits + gumbel_noise(u)))


def materialized_argmax(x):
  """``tf.argmax(x, -1)`` (int32, first index on ties) computed so that XLA on a CPU materialises ``x``.

  A plain argmax of the noisy logits lets XLA fuse the noise (a hash and two logarithms per vocabulary entry)
  into the argmax's two-operand reduction loop, which its CPU backend runs without vectorising. Checking each
  row for NaN too gives ``x`` a second consumer, so XLA computes it once in a vectorised elementwise loop and
  both reductions read the result, with the same draws.
  The check decides one case: a row holding a NaN (logits of a diverged generator) gives 0, where
  ``tf.argmax``'s answer depends on the backend.
  """
  index = tf.argmax(x, -1, output_type=tf.int32)
  return tf.where(tf.reduce_any(tf.math.is_nan(x), -1), tf.zeros_like(index), index)
