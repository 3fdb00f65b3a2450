"""Dynamic loss scaling for float16 training, both jobs (bfloat16 and float32 need none).

The loss is multiplied by ``scale`` before the gradient so small float16 gradients do not underflow, and
the gradients are divided by it again. A step whose gradient overflows is skipped (the step still counts,
so the schedule and the input position stay in line) and the scale halves; after ``GROWTH_INTERVAL``
finite steps in a row it doubles. Both variables are checkpointed, so a resumed run continues the scale.
"""

import tensorflow as tf

INITIAL_SCALE = 2.0 ** 15
GROWTH_INTERVAL = 2000


class DynamicLossScale:
  """Create under the strategy's scope; ``apply`` runs inside the replica step."""

  def __init__(self, initial_scale: float = INITIAL_SCALE, growth_interval: int = GROWTH_INTERVAL):
    self.growth_interval, self.initial_scale = growth_interval, initial_scale
    self.scale = tf.Variable(initial_scale, trainable=False, dtype=tf.float32, name="loss_scale",
                             aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    self.good_steps = tf.Variable(0, trainable=False, dtype=tf.int64, name="good_steps",
                                  aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

  def reset(self):
    """Back to the start: the initial scale, no good steps counted."""
    self.scale.assign(self.initial_scale)
    self.good_steps.assign(0)

  def scale_loss(self, loss):
    return loss * self.scale

  def unscale(self, grads):
    return [g / self.scale for g in grads]

  def apply(self, norm, apply_update):
    """Runs ``apply_update(finite)``, which must update the weights only if ``finite`` (whether ``norm``, of the
    unscaled gradient, is finite) holds and advance the step either way (``AdamWeightDecay.apply_if``), and
    updates the scale. Returns the norm, 0 for a skipped step. No ``tf.cond``: under several replicas
    TensorFlow cannot hold a cross-replica update (the optimizer's, or these variables') in a branch."""
    finite = tf.math.is_finite(norm)
    apply_update(finite)
    grow = tf.logical_and(finite, self.good_steps + 1 >= self.growth_interval)
    self.scale.assign(tf.where(finite, tf.where(grow, self.scale * 2.0, self.scale),
                               tf.maximum(self.scale / 2.0, 1.0)))
    self.good_steps.assign(tf.where(tf.logical_and(finite, tf.logical_not(grow)), self.good_steps + 1,
                                    tf.constant(0, tf.int64)))
    return tf.where(finite, norm, 0.0)

  def checkpoint_objects(self) -> dict:
    return {"loss_scale": self.scale, "good_steps": self.good_steps}
