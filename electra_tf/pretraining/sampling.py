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
  return tf.stop_gradient(tf.argmax(logits + gumbel_noise(u), -1, output_type=tf.int32))
