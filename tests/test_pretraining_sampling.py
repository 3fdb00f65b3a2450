"""Generator sampling (``pretraining/sampling.py``) against the softmax it draws from."""

import numpy as np
import tensorflow as tf

from electra_tf.pretraining import sampling


def test_gumbel_sampling_matches_softmax_and_options():
  logits = np.log(np.array([0.5, 0.3, 0.15, 0.05], np.float32))
  batch = np.tile(logits, [20000, 1, 1])  # [B, 1, V]
  draws = sampling.sample_tokens(tf.constant(batch), seed=0, step=1).numpy().ravel()
  freq = np.bincount(draws, minlength=4) / draws.size
  np.testing.assert_allclose(freq, [0.5, 0.3, 0.15, 0.05], atol=0.012)
  hot = sampling.sample_tokens(tf.constant(batch), seed=0, step=1, temperature=0.05).numpy().ravel()
  assert np.mean(hot == 0) > 0.99  # low temperature -> argmax
  banned = sampling.sample_tokens(tf.constant(batch), 0, 1, disallow_ids=tf.zeros([20000, 1], tf.int32))
  assert not (banned.numpy() == 0).any()  # disallow_correct: never the original
  half = sampling.sample_tokens(tf.constant(batch[:10000]), 0, 1).numpy().ravel()
  np.testing.assert_array_equal(half, draws[:10000])  # same rows, same draws
  bf16 = sampling.sample_tokens(tf.constant(batch, tf.bfloat16), seed=0, step=1)
  assert bf16.dtype == tf.int32
