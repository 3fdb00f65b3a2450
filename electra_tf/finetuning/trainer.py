"""The fine-tuning loop: a ``tf.function`` step under a ``tf.distribute`` strategy, and batched prediction.

Training follows the reference: loss summed over the (global) batch, gradients clipped to global norm
1.0, AdamW without bias correction, multiplicative warmup over the first 10% of steps then linear decay,
layer-wise LR ``lr * d^(L + 2 - depth)``. Dropout masks come from ``seed``, the step and the replica, so
a trial is reproducible. With several replicas the gradients are summed across replicas before the
clip (the clip sees the global gradient, as on the reference's TPU). One compiled call runs up to
``iterations_per_loop`` steps (the reference's TPU loop), stopping early at epoch and checkpoint boundaries.

``gradient_accumulation_steps`` k: the step's batch is cut into k micro-batches run one after the other
inside the compiled step, their gradients summed (the loss is a sum over examples, so this is exact), then
clipped and applied once; steps, the schedule and epochs count global batches. Dropout is then keyed per
example (``per_example_dropout``), so the k micro-batches equal the one batch.
"""

import math
import time
import typing

import keras
import numpy as np
import tensorflow as tf

from electra_tf import runtime
from electra_tf.configs import uses_per_example_dropout
from electra_tf.errors import HParamError
from electra_tf.finetuning.model import FinetuningModel
from electra_tf.modeling import RowKeyedSeed
from electra_tf.modeling.keyed_random import step_key
from electra_tf.optimization import accumulate, accumulation_graph_options, clip_by_global_norm, create_optimizer

# Stream of ``keyed_random.step_key`` for per-example dropout.
DROPOUT_STREAM = 1


def num_train_steps(n_padded: int, batch_size: int, epochs: float) -> int:
  """The reference's step count: int(n_padded // batch * epochs)."""
  return int(n_padded // batch_size * epochs)


def loop_length(step: int, total_steps: int, iterations_per_loop: int, *intervals: int) -> int:
  """Steps in the next compiled call: up to ``iterations_per_loop``, ending at the next multiple of each
  non-zero interval (the host acts there) and at ``total_steps``."""
  n = min(iterations_per_loop, total_steps - step)
  for every in intervals:
    if every:
      n = min(n, every - step % every)
  return max(1, n)


def make_dataset(arrays: dict, batch_size: int, training: bool, seed: int = 0) -> tf.data.Dataset:
  """Arrays -> batches. Training repeats and shuffles with a 100-example buffer after the examples
  were shuffled once in Python, as the reference (shuffled TFRecords + shuffle(100))."""
  ds = tf.data.Dataset.from_tensor_slices(arrays)
  if training:
    ds = ds.repeat().shuffle(100, seed=seed)
  # In-memory arrays leave tf.data's autotuner nothing to tune, and its thread made the end of a trial wait:
  # deleting the training iterator waited for the thread's next wake-up (see Trainer.distribute).
  options = tf.data.Options()
  options.autotune.enabled = False
  return ds.batch(batch_size, drop_remainder=True).prefetch(2).with_options(options)


class Trainer:
  """Owns the model, its optimizer and compiled steps for one trial."""

  def __init__(self, config, tasks, strategy: tf.distribute.Strategy, seed: int):
    self.config, self.tasks, self.strategy, self.seed = config, tasks, strategy, seed
    if config.mixed_precision == "float16":
      raise HParamError("mixed_precision float16 needs loss scaling, which fine-tuning does not implement; "
                        "use bfloat16 (same speed on recent GPUs/TPUs) or float32")
    replicas_x_micro = strategy.num_replicas_in_sync * config.gradient_accumulation_steps
    if config.train_batch_size % replicas_x_micro:
      raise HParamError(f"train_batch_size {config.train_batch_size} does not split into "
                        f"{strategy.num_replicas_in_sync} replicas x gradient_accumulation_steps "
                        f"{config.gradient_accumulation_steps}; use a multiple of {replicas_x_micro}")
    runtime.set_precision_policy(config.mixed_precision)
    keras.utils.set_random_seed(seed)  # weight initialisation of the heads (and of a fresh encoder)
    self.model_config = config.model_config()
    with strategy.scope():
      self.model = FinetuningModel(self.model_config, tasks)
      self.model.build()
    self.optimizer = None
    self._train_loop = self._predict_step = None

  def distribute(self, ds: tf.data.Dataset):
    """The dataset as the strategy's replicas read it. One device reads it directly: the distributed
    wrapper's background thread (and tf.data's autotuner, off in ``make_dataset``) made deleting a training
    iterator wait for their next wake-up: about 20 s at the end of every sample fine-tuning trial on 2 CPU
    cores, half the trial (benchmarks/README.md)."""
    if isinstance(self.strategy, tf.distribute.OneDeviceStrategy):
      return ds
    return self.strategy.experimental_distribute_dataset(ds)

  # ---- training -----------------------------------------------------------------------------------------

  def make_optimizer(self, total_steps: int):
    cfg = self.config
    names = {id(v): n for n, v in self.model.reference_variables().items()}
    with self.strategy.scope():
      self.optimizer = create_optimizer(
          cfg.learning_rate, total_steps, cfg.weight_decay_rate, warmup_proportion=cfg.warmup_proportion,
          layerwise_lr_decay_power=cfg.layerwise_lr_decay,
          n_transformer_layers=self.model_config.num_hidden_layers, variable_names=names)
      self.optimizer.build(self.model.trainable_variables)
    return self.optimizer

  def _build_train_loop(self):
    model, optimizer, strategy = self.model, self.optimizer, self.strategy
    base_seed = tf.constant([self.seed, 0x5EED], tf.int32)
    n_replicas = strategy.num_replicas_in_sync
    k, per_example = self.config.gradient_accumulation_steps, uses_per_example_dropout(self.config)

    def step_fn(batch):
      ctx = tf.distribute.get_replica_context()
      seed = tf.random.experimental.stateless_fold_in(base_seed, tf.cast(optimizer.iterations, tf.int32))
      seed = tf.random.experimental.stateless_fold_in(seed, ctx.replica_id_in_sync_group)
      variables = model.trainable_variables
      if per_example:  # masks keyed by each row's index in the global batch, however the batch is cut
        rows = tf.shape(batch["input_ids"])[0]  # this replica's share of the global batch
        first_row = tf.cast(ctx.replica_id_in_sync_group, tf.int32) * rows
        key = step_key(self.seed, optimizer.iterations, DROPOUT_STREAM)

      def micro_grads(part, i):
        dropout_seed = RowKeyedSeed(key, first_row + i * (rows // k)) if per_example else seed
        with tf.GradientTape() as tape:
          loss, _ = model(part, training=True, dropout_seed=dropout_seed)
        return [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)], loss

      if k == 1:
        grads, loss = micro_grads(batch, 0)
      else:
        grads, loss = accumulate(micro_grads, batch, k, ([tf.zeros_like(v) for v in variables], tf.zeros([])))
      if n_replicas > 1:
        grads = ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)
      grads, _ = clip_by_global_norm(grads, 1.0)
      if n_replicas > 1:  # the optimizer sums across replicas again
        grads = [g / n_replicas for g in grads]
      optimizer.apply_gradients(zip(grads, variables))
      return loss

    if self.config.use_xla:
      step_fn = tf.function(step_fn, jit_compile=True)

    @tf.function
    def train_loop(iterator, num_steps):
      """``num_steps`` steps -> (loss, learning rate after the step) per step done; stops after a
      non-finite loss."""
      losses = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
      rates = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
      for i in tf.range(num_steps):
        per_replica = strategy.run(step_fn, args=(next(iterator),))
        loss = tf.cast(strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None), tf.float32)
        losses = losses.write(i, loss)
        rates = rates.write(i, tf.cast(optimizer.learning_rate, tf.float32))
        if not tf.math.is_finite(loss):
          break
      return losses.stack(), rates.stack()

    def run_loop(iterator, num_steps):
      with accumulation_graph_options(k > 1):
        return train_loop(iterator, num_steps)

    return run_loop

  def train(self, arrays: dict, total_steps: int, steps_per_epoch: int,
            on_epoch_end: typing.Optional[typing.Callable[[int], dict]] = None,
            log_dir: typing.Optional[str] = None, progress: bool = True,
            on_checkpoint: typing.Optional[typing.Callable[[int], None]] = None) -> dict:
    """Runs ``total_steps`` steps; calls ``on_epoch_end(epoch)`` after each epoch but the last, and
    ``on_checkpoint(step)`` every ``save_checkpoints_steps`` steps before the last.
    Returns {"global_step", "loss" (mean of the last epoch), "examples_per_second"}."""
    cfg = self.config
    if self.optimizer is None:
      self.make_optimizer(total_steps)
    ds = make_dataset(arrays, cfg.train_batch_size, True, self.seed)
    iterator = iter(self.distribute(ds))
    self._train_loop = self._train_loop or self._build_train_loop()
    writer = tf.summary.create_file_writer(log_dir) if log_dir else None
    bar = runtime.progress_bar(progress, total_steps, desc="fine-tuning", leave=False)
    log_every = max(1, min(25, steps_per_epoch))  # several points per epoch for the curves
    losses, start, epoch = [], time.time(), 0
    step = int(self.optimizer.iterations.numpy())
    checkpoint_every = cfg.save_checkpoints_steps if on_checkpoint is not None else 0
    epoch_every = steps_per_epoch if on_epoch_end is not None else 0
    while step < total_steps:
      n = loop_length(step, total_steps, cfg.iterations_per_loop, epoch_every, checkpoint_every)
      loop_losses, loop_rates = self._train_loop(iterator, tf.constant(n, tf.int32))
      for loss, rate in zip(loop_losses.numpy().tolist(), loop_rates.numpy().tolist()):
        step += 1
        if not math.isfinite(loss):
          raise FloatingPointError(f"loss became {loss} at step {step}; lower the learning rate")
        losses.append(loss)
        if step % log_every == 0 or step == total_steps:
          runtime.write_scalars(writer, step, {"loss": float(np.mean(losses[-log_every:])), "learning_rate": rate},
                                "train/")
      if bar is not None:
        bar.update(n)
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
      if epoch_every and step % epoch_every == 0 and step < total_steps:
        epoch += 1
        for task, values in (on_epoch_end(epoch) or {}).items():
          runtime.write_scalars(writer, step, values, f"dev/{task}/")
      if checkpoint_every and step % checkpoint_every == 0 and step < total_steps:
        if writer is not None:
          writer.flush()
        on_checkpoint(step)
    if bar is not None:
      bar.close()
    elapsed = time.time() - start
    if writer is not None:
      writer.flush()
    return {"global_step": step, "loss": float(np.mean(losses[-max(1, steps_per_epoch):])) if losses else 0.0,
            "examples_per_second": len(losses) * cfg.train_batch_size / max(elapsed, 1e-9)}

  # ---- prediction ---------------------------------------------------------------------------------------

  def _build_predict_step(self):
    model, strategy = self.model, self.strategy

    @tf.function
    def predict_step(batch):
      return strategy.run(lambda b: model(b, training=False)[1], args=(batch,))
    return predict_step

  def predict(self, arrays: dict, batch_size: int) -> typing.Dict[str, dict]:
    """Runs the model on ``arrays`` (first axis a multiple of ``batch_size``) and returns, per task,
    its head's outputs for the rows of that task (dummy padding rows dropped), in input order."""
    self._predict_step = self._predict_step or self._build_predict_step()
    ds = self.distribute(make_dataset(arrays, batch_size, False))
    chunks = {t.name: [] for t in self.tasks}
    for batch in ds:
      out = self._predict_step(batch)
      for name in chunks:
        chunks[name].append({k: _local_concat(self.strategy, v) for k, v in out[name].items()})
    task_id = np.asarray(arrays["task_id"])
    results = {}
    for i, task in enumerate(self.tasks):
      rows = task_id == i
      merged = {k: np.concatenate([c[k] for c in chunks[task.name]])[:len(task_id)] for k in chunks[task.name][0]}
      results[task.name] = {k: v[rows[:len(v)]] for k, v in merged.items()}
    return results


def _local_concat(strategy, value) -> np.ndarray:
  parts = strategy.experimental_local_results(value)
  return np.concatenate([np.asarray(p) for p in parts]) if len(parts) > 1 else np.asarray(parts[0])
