"""The compiled loops both jobs run: training, up to ``iterations_per_loop`` steps per call (the reference's
TPU loop), summing what each step logs and stopping at the first non-finite loss; and evaluation, one global
batch per call, its outputs summed or gathered the same way on every worker.

The input is a *local* iterator of global batches (a plain ``tf.data`` iterator, so its position can be
checkpointed: ``checkpointing.Checkpointer``). Inside the loop each replica takes its consecutive rows
``[r * b, (r + 1) * b)`` of the global batch, so every topology sees the examples one device would; in a
multi-worker job every worker reads the same batches and keeps its replicas' rows.

AutoGraph converts the loops' own Python control flow only: the step and the models are traced as written
(``do_not_convert``): their control flow is TensorFlow's already (``tf.cond``, ``tf.while_loop``), and
converting every function they call is most of a small model's tracing time.
"""

import typing

import tensorflow as tf

from electra_tf.optimization import accumulation_graph_options


def loop_length(step: int, total_steps: int, iterations_per_loop: int, *intervals: int,
                stops: typing.Sequence[int] = ()) -> int:
  """Steps in the next compiled call: up to ``iterations_per_loop``, ending at the next multiple of each
  non-zero interval (the host acts there), at the next of ``stops`` (single steps) and at ``total_steps``."""
  n = min(iterations_per_loop, total_steps - step)
  for every in intervals:
    if every:
      n = min(n, every - step % every)
  for stop in stops:
    if stop > step:
      n = min(n, stop - step)
  return max(1, n)


def replica_rows(strategy: tf.distribute.Strategy, batch: dict):
  """A global batch -> the per-replica values of ``strategy`` (replica r: rows [r * b, (r + 1) * b))."""
  n = strategy.num_replicas_in_sync
  if n == 1:
    return batch

  def rows(ctx):
    replica = ctx.replica_id_in_sync_group
    return {k: tf.split(v, n, axis=0)[replica] for k, v in batch.items()}

  return strategy.experimental_distribute_values_from_function(rows)


def compile_loop(strategy: tf.distribute.Strategy, replica_step, value_shapes: typing.Mapping[str, list],
                 loss_key: str, accumulation: int = 1):
  """``loop(iterator, num_steps) -> (summed values, steps done, first non-finite step or -1)``.

  ``replica_step(features) -> (values, gradient norm)`` (a ``step.ReplicaStep``); every value of
  ``value_shapes`` is summed over replicas and steps, and ``grad_norm`` (the replicas' mean) is added.
  The loop breaks before adding a step whose ``loss_key`` is NaN or infinite, and reports that step.
  """
  keys = list(value_shapes)
  step_var = replica_step.step_var

  @tf.autograph.experimental.do_not_convert
  def one_step(features):
    values, norm = replica_step(features)
    return {**values, "grad_norm": norm}

  @tf.function
  def train_loop(iterator, num_steps):
    totals = {k: tf.zeros(value_shapes[k]) for k in keys}
    done, bad_step = tf.constant(0), tf.constant(-1, tf.int64)
    for _ in tf.range(num_steps):
      step_before = tf.identity(step_var)
      per_replica = strategy.run(one_step, (replica_rows(strategy, next(iterator)),))
      values = {k: strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica[k], axis=None) for k in keys}
      if not tf.math.is_finite(values[loss_key]):
        bad_step = step_before
        break
      totals = {k: totals[k] + values[k] for k in keys}
      done += 1
    return totals, done, bad_step

  def run_loop(iterator, num_steps):
    with accumulation_graph_options(accumulation > 1):
      return train_loop(iterator, tf.constant(num_steps))

  return run_loop


def compile_eval(strategy: tf.distribute.Strategy, replica_fn, combine: str = "sum"):
  """``eval_step(iterator, batch_index) -> outputs`` of the next global batch of ``iterator``.

  Replica r runs ``replica_fn(rows, batch_index)`` on rows ``[r * b, (r + 1) * b)`` of the batch; each output
  (a nested structure of tensors) is summed over the replicas (``combine`` "sum": metric sums) or gathered in
  row order (``combine`` "gather": one output row per example), so every worker of the job gets the whole
  batch's result and evaluates exactly what one device would.
  """
  if combine not in ("sum", "gather"):
    raise ValueError(f"combine is {combine!r}; use 'sum' or 'gather'")

  def combined(value):
    if combine == "sum":
      return strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)
    return strategy.gather(value, axis=0)

  plain_fn = tf.autograph.experimental.do_not_convert(replica_fn)

  @tf.function
  def eval_step(iterator, batch_index):
    per_replica = strategy.run(plain_fn, (replica_rows(strategy, next(iterator)), batch_index))
    return tf.nest.map_structure(combined, per_replica)

  return eval_step
