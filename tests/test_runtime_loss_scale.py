"""Dynamic loss scaling (``runtime/loss_scale.py``, both jobs): overflow skips the update and halves the scale,
finite steps grow it back after the growth interval."""

import numpy as np
import tensorflow as tf

from electra_tf.runtime.loss_scale import INITIAL_SCALE, DynamicLossScale


def test_overflow_skips_the_update_halves_the_scale_and_finite_steps_grow_it_back():
  ls = DynamicLossScale(growth_interval=3)
  step = tf.Variable(0, dtype=tf.int64)
  weight = tf.Variable(1.0)

  def update(finite):  # as AdamWeightDecay.apply_if: the weight moves if finite, the step counts either way
    weight.assign_sub(tf.where(finite, 0.5, 0.0))
    step.assign_add(1)

  assert float(ls.scale_loss(tf.constant(2.0))) == 2.0 * INITIAL_SCALE
  np.testing.assert_allclose([float(g) for g in ls.unscale([tf.constant(INITIAL_SCALE)])], [1.0])

  norm = ls.apply(tf.constant(np.inf), update)  # overflow
  assert float(norm) == 0.0 and float(weight) == 1.0  # the update is skipped ...
  assert int(step) == 1  # ... but the step still counts
  assert float(ls.scale) == INITIAL_SCALE / 2 and int(ls.good_steps) == 0

  for i in range(2):
    assert float(ls.apply(tf.constant(1.5), update)) == 1.5
    assert float(ls.scale) == INITIAL_SCALE / 2 and int(ls.good_steps) == i + 1
  ls.apply(tf.constant(1.5), update)  # the third finite step in a row doubles the scale
  assert float(ls.scale) == INITIAL_SCALE and int(ls.good_steps) == 0
  assert float(weight) == 1.0 - 3 * 0.5 and int(step) == 4

  for _ in range(40):  # repeated overflow never takes the scale below 1
    ls.apply(tf.constant(np.nan), update)
  assert float(ls.scale) == 1.0
  assert set(ls.checkpoint_objects()) == {"loss_scale", "good_steps"}
