"""Keyed randomness (``pretraining/random_ops.py``): draws depend on (seed, step, global row) only."""

import numpy as np

from electra_tf.pretraining import random_ops


def test_keyed_uniform_is_independent_of_how_rows_are_split():
  key = random_ops.step_key(5, 11, random_ops.GUMBEL)
  full = random_ops.keyed_uniform(key, [4, 3, 7]).numpy()
  halves = [random_ops.keyed_uniform(key, [2, 3, 7], row_offset=o).numpy() for o in (0, 2)]
  np.testing.assert_array_equal(full, np.concatenate(halves))
  assert 0.0 <= full.min() and full.max() < 1.0
  other = random_ops.keyed_uniform(random_ops.step_key(5, 12, random_ops.GUMBEL), [4, 3, 7]).numpy()
  assert not np.allclose(full, other)
  big = random_ops.keyed_uniform(key, [64, 4096]).numpy()
  assert abs(big.mean() - 0.5) < 0.005 and abs(big.var() - 1 / 12) < 0.002


def _lowbias32(x):
  """Wellons' lowbias32 on uint32 numpy arrays (wrapping arithmetic), written from its published constants."""
  x = x.astype(np.uint64)
  x ^= x >> 16
  x = (x * 0x7FEB352D) & 0xFFFFFFFF
  x ^= x >> 15
  x = (x * 0x846CA68B) & 0xFFFFFFFF
  x ^= x >> 16
  return x


def test_keyed_uniform_equals_its_definition_in_numpy():
  """Row r of a draw: the row's key hash(hash(row * golden + key) ^ key), then per value c hash(hash(row key +
  c * 0x85EBCA6B) + row key), its top 24 bits as a fraction; the same numbers eagerly and inside a graph."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  key, offset, shape = 0xDEADBEEF, 5, [3, 4, 6]
  rows = np.arange(offset, offset + shape[0], dtype=np.uint64)
  row_keys = _lowbias32(_lowbias32((rows * 0x9E3779B9 + key) & 0xFFFFFFFF) ^ key)[:, None]
  cols = np.arange(4 * 6, dtype=np.uint64)[None, :]
  x = _lowbias32((row_keys + cols * 0x85EBCA6B) & 0xFFFFFFFF)
  x = _lowbias32((x + row_keys) & 0xFFFFFFFF)
  expected = ((x >> 8).astype(np.float64) / (1 << 24)).astype(np.float32).reshape(shape)
  tf_key = tf.constant(key, tf.uint32)
  np.testing.assert_array_equal(random_ops.keyed_uniform(tf_key, shape, offset).numpy(), expected)
  in_graph = tf.function(lambda k: random_ops.keyed_uniform(k, shape, tf.constant(offset)))
  np.testing.assert_array_equal(in_graph(tf_key).numpy(), expected)
  np.testing.assert_array_equal(random_ops.hash32(tf.constant(rows, tf.uint32)).numpy(), _lowbias32(rows))


def test_the_draw_is_traced_once_and_the_result_keeps_its_static_shape():
  """Every call site and every graph of a process calls the one traced draw and hash (a trainer built later
  adds no tracing of its own), and the result has the static shape the given shape is known to have."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  from electra_tf.modeling import keyed_random  # pylint: disable=import-outside-toplevel
  key = random_ops.step_key(1, 2, random_ops.GUMBEL)
  random_ops.keyed_uniform(key, [2, 3])
  traced = (keyed_random._keyed_rows.experimental_get_tracing_count(),  # pylint: disable=protected-access
            keyed_random._hash32_traced.experimental_get_tracing_count())  # pylint: disable=protected-access
  assert all(traced)
  shapes = []

  def draw(x):
    u = random_ops.keyed_uniform(random_ops.step_key(3, 4, random_ops.MASK_POSITIONS), tf.shape(x), 2)
    shapes.append(u.shape.as_list())
    return u

  tf.function(draw, input_signature=[tf.TensorSpec([None, 3, 7])])(tf.zeros([2, 3, 7]))
  tf.function(draw, input_signature=[tf.TensorSpec([4, 5])])(tf.zeros([4, 5]))
  assert shapes == [[None, 3, 7], [4, 5]]
  assert (keyed_random._keyed_rows.experimental_get_tracing_count(),  # pylint: disable=protected-access
          keyed_random._hash32_traced.experimental_get_tracing_count()) == traced  # pylint: disable=protected-access
