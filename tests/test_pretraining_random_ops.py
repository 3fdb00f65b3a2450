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
