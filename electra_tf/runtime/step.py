"""One optimizer step on every replica, for both jobs: the part of a training step that is not the model.

A job describes its model as an ``Objective`` (how one micro-batch's loss is computed); ``ReplicaStep`` does
the rest, the same way for pre-training and fine-tuning:

- **Batch split.** Batch sizes are global (as in the reference): the global batch must split into
  ``replicas x gradient_accumulation_steps`` equal parts (``check_batch_split``).
- **Dropout keys**, one policy for both jobs: per replica, the stateless seed of (seed, step) folded with the
  replica (``replica_dropout_seed``); or, with per-example dropout, a ``RowKeyedSeed`` keyed by (seed, step,
  ``DROPOUT_STREAM``) and each example's *global* row (``example_dropout_key``), so that any split of the
  global batch (replicas, micro-batches) draws the same masks.
- **Accumulation.** ``gradient_accumulation_steps`` k: the replica's rows are cut into k micro-batches run
  one after the other (``optimization.accumulate``), their gradients and logged sums added.
- **Loss scaling** (float16): the loss is scaled before the gradient and the gradients unscaled after; a
  step whose gradient overflows is skipped (``loss_scale.DynamicLossScale``).
- **All-reduce, clip, apply.** Gradients are summed across replicas (the step's one all-reduce), clipped to
  global norm 1.0 (the clip sees the global gradient, as on the reference's TPU) and applied as they are.
- **One XLA policy** (``use_xla``): on one device the whole step (gradients and update) is one compiled
  function; on several replicas the gradient computation is one and each device's update another
  (``AdamWeightDecay.compile_per_device``), so that the cross-replica all-reduce stays outside them; on TPU
  nothing is marked (the TPU compiles everything itself).
"""

import typing

import tensorflow as tf

from electra_tf.errors import HParamError
from electra_tf.modeling import RowKeyedSeed, derive_seed
from electra_tf.modeling.keyed_random import step_key
from electra_tf.optimization import accumulate, clip_by_global_norm

CLIP_NORM = 1.0
# The ``keyed_random.step_key`` stream of per-example dropout (pre-training's masking and sampling draw
# streams 1 to 3 of the same step).
DROPOUT_STREAM = 4


class Objective(typing.Protocol):
  """What a job supplies to ``ReplicaStep``."""

  def prepare(self, features, ctx):
    """Once per step and replica, before the micro-batches (e.g. global loss denominators, all-reduced)."""

  def forward(self, features, step, row_offset, prepared, dropout_seed):
    """One micro-batch -> (loss to differentiate, dict of values summed over micro-batches and replicas)."""

  def zeros(self) -> dict:
    """Zeros shaped like ``forward``'s dict (the start of the micro-batch sums)."""


def check_batch_split(error_type, name: str, batch_size: int, replicas: int, accumulation: int = 1):
  """The global ``batch_size`` must split into ``replicas x accumulation`` equal parts."""
  if batch_size % replicas:
    raise error_type(f"{name} {batch_size} is not a multiple of the {replicas} replicas; batch sizes are global: "
                     "use a multiple")
  if batch_size % (replicas * accumulation):
    raise error_type(f"{name} {batch_size} does not split into {replicas} replicas x gradient_accumulation_steps "
                     f"{accumulation}; use a multiple of {replicas * accumulation}")


def replica_dropout_seed(seed, step, replica_id):
  """The stateless dropout seed of a replica's step, when dropout is not keyed per example."""
  base = tf.stack([tf.cast(seed, tf.int32), tf.cast(step, tf.int32)])
  return derive_seed(derive_seed(base, 7), replica_id)


def example_dropout_key(seed, step):
  """The uint32 key of per-example dropout at ``step``."""
  return step_key(tf.cast(seed, tf.int32), step, DROPOUT_STREAM)


def xla_policy(strategy: tf.distribute.Strategy, use_xla: bool) -> bool:
  """Whether the step marks code for XLA (never on TPU, which compiles the whole step itself)."""
  return bool(use_xla) and not isinstance(strategy, tf.distribute.TPUStrategy)


class ReplicaStep:
  """``replica_step(features) -> (summed values, gradient norm)``, run by ``strategy.run`` in the loop.

  ``optimizer`` is a built ``optimization.AdamWeightDecay`` whose ``iterations`` is the step counter;
  ``loss_scale`` a ``DynamicLossScale`` (float16) or None; ``per_example_dropout`` keys dropout by global
  row (needed for exact accumulation, see ``configs.uses_per_example_dropout``); ``seed`` (an int or an integer
  variable) keys the dropout masks.
  """

  def __init__(self, objective: Objective, variables, optimizer, strategy: tf.distribute.Strategy,
               accumulation: int = 1, loss_scale=None, use_xla: bool = False, per_example_dropout: bool = False,
               seed=0):
    if accumulation < 1:
      raise HParamError(f"gradient_accumulation_steps is {accumulation}; use 1 or more")
    self.objective, self.variables, self.optimizer, self.seed = objective, list(variables), optimizer, seed
    self.accumulation, self.loss_scale, self.per_example_dropout = accumulation, loss_scale, per_example_dropout
    self.step_var = optimizer.iterations
    jit = xla_policy(strategy, use_xla)
    xla = lambda fn: tf.function(fn, jit_compile=True, autograph=False)
    self._grads_fn = xla(self._grads) if jit else self._grads
    self._single_fn = xla(self._single_device_step) if jit else self._single_device_step
    optimizer.compile_per_device = jit and strategy.num_replicas_in_sync > 1
    optimizer.gradients_summed = True  # by __call__'s all-reduce

  def __call__(self, features):
    ctx = tf.distribute.get_replica_context()
    replica_id = tf.cast(ctx.replica_id_in_sync_group, tf.int32)
    n = ctx.num_replicas_in_sync
    step = tf.identity(self.step_var)
    row_offset = replica_id * tf.shape(features["input_ids"])[0]
    prepared = self.objective.prepare(features, ctx)
    dropout_seed = replica_dropout_seed(self.seed, step, replica_id)
    if n > 1:  # XLA around the gradients, and each device's update: the all-reduce stays outside both
      grads, values = self._grads_fn(features, step, row_offset, prepared, dropout_seed)
      grads = ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)  # the step's one all-reduce
      norm = self._apply(grads)
    else:
      grads, values, norm = self._single_fn(features, step, row_offset, prepared, dropout_seed)
    return values, norm / n

  def _single_device_step(self, features, step, row_offset, prepared, dropout_seed):
    grads, values = self._grads(features, step, row_offset, prepared, dropout_seed)
    return grads, values, self._apply(grads)

  def _grads(self, features, step, row_offset, prepared, dropout_seed):
    """Gradients and summed values of this replica's rows: at once, or over ``accumulation`` micro-batches
    (rows ``row_offset + i * micro`` of the global batch)."""
    k = self.accumulation
    if k == 1:
      return self._micro_grads(features, step, row_offset, prepared, dropout_seed)
    micro = tf.shape(features["input_ids"])[0] // k

    def micro_step(part, i):
      return self._micro_grads(part, step, row_offset + i * micro, prepared, dropout_seed)

    zeros = ([tf.zeros_like(v) for v in self.variables], self.objective.zeros())
    return accumulate(micro_step, features, k, zeros)

  def _micro_grads(self, features, step, row_offset, prepared, dropout_seed):
    if self.per_example_dropout:  # masks keyed by each row's global index, however the batch is cut
      dropout_seed = RowKeyedSeed(example_dropout_key(self.seed, step), row_offset)
    with tf.GradientTape() as tape:
      loss, values = self.objective.forward(features, step, row_offset, prepared, dropout_seed)
      if self.loss_scale is not None:
        loss = self.loss_scale.scale_loss(loss)
    grads = tape.gradient(loss, self.variables)
    grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g) for g, v in zip(grads, self.variables)]
    if self.loss_scale is not None:
      grads = self.loss_scale.unscale(grads)
    return grads, values

  def _apply(self, grads):
    """Clip the global gradient (summed over the replicas already) and apply it; the optimizer applies it as it
    is, without summing it over the replicas again (``AdamWeightDecay.gradients_summed``)."""
    grads, norm = clip_by_global_norm(grads, CLIP_NORM)
    if self.loss_scale is None:
      self.optimizer.apply(grads, self.variables)
      return norm
    return self.loss_scale.apply(norm, lambda finite: self.optimizer.apply_if(finite, grads, self.variables))
