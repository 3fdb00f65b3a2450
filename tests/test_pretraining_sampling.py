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


def test_materialized_argmax_is_argmax_with_and_without_xla():
  rng = np.random.default_rng(0)
  x = rng.normal(size=[6, 5, 300]).astype(np.float32)
  x[0, 0, [7, 100, 250]] = 9.0  # ties: the first index wins
  x[1, 2, :] = 0.0
  x[1, 3, :] = -np.inf
  x[2, 1, 40] = np.inf
  expected = np.argmax(x, -1)
  eager = sampling.materialized_argmax(tf.constant(x)).numpy()
  compiled = tf.function(sampling.materialized_argmax, jit_compile=True)(tf.constant(x)).numpy()
  np.testing.assert_array_equal(eager, expected)
  np.testing.assert_array_equal(compiled, expected)
  assert eager[0, 0] == 7 and eager[1, 2] == 0 and eager[2, 1] == 40
  x[3, 4, 17] = np.nan  # a diverged generator's row: 0 on every backend
  for fn in (sampling.materialized_argmax, tf.function(sampling.materialized_argmax, jit_compile=True)):
    out = fn(tf.constant(x)).numpy()
    assert out[3, 4] == 0
    np.testing.assert_array_equal(np.delete(out.reshape(-1), 3 * 5 + 4), np.delete(expected.reshape(-1), 3 * 5 + 4))


def test_compiled_sampling_draws_the_reference_gumbel_max():
  # the reference's argmax(logits + Gumbel noise), computed directly from the same uniforms, under XLA
  logits = tf.random.stateless_normal([4, 3, 2000], seed=[1, 2])
  u = sampling.random_ops.keyed_uniform(sampling.random_ops.step_key(5, 9, sampling.random_ops.GUMBEL),
                                        tf.shape(logits), 0)
  expected = np.argmax((logits + sampling.gumbel_noise(u)).numpy(), -1)
  drawn = tf.function(lambda l: sampling.sample_tokens(l, 5, 9), jit_compile=True)(logits).numpy()
  np.testing.assert_array_equal(drawn, expected)
