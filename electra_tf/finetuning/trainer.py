"""The fine-tuning loop: a ``tf.function`` step under a ``tf.distribute`` strategy, and batched prediction.

Training follows the reference: loss summed over the (global) batch, gradients clipped to global norm
1.0, AdamW without bias correction, multiplicative warmup over the first 10% of steps then linear decay,
layer-wise LR ``lr * d^(L + 2 - depth)``. Dropout masks come from ``seed``, the step and the replica, so
a trial is reproducible. With several replicas the gradients are summed across replicas before the
clip (the clip sees the global gradient, as on the reference's TPU).
"""

import math
import os
import time
import typing

import keras
import numpy as np
import tensorflow as tf

from electra_tf.finetuning.base import log
from electra_tf.finetuning.model import FinetuningModel, finetuning_variables
from electra_tf.optimization import clip_by_global_norm, create_optimizer


def num_train_steps(n_padded: int, batch_size: int, epochs: float) -> int:
  """The reference's step count: int(n_padded // batch * epochs)."""
  return int(n_padded // batch_size * epochs)


def make_dataset(arrays: dict, batch_size: int, training: bool, seed: int = 0) -> tf.data.Dataset:
  """Arrays -> batches. Training repeats and shuffles with a 100-example buffer after the examples
  were shuffled once in Python, as the reference (shuffled TFRecords + shuffle(100))."""
  ds = tf.data.Dataset.from_tensor_slices(arrays)
  if training:
    ds = ds.repeat().shuffle(100, seed=seed)
  return ds.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


class Trainer:
  """Owns the model, its optimizer and compiled steps for one trial."""

  def __init__(self, config, tasks, strategy: tf.distribute.Strategy, seed: int):
    self.config, self.tasks, self.strategy, self.seed = config, tasks, strategy, seed
    if config.mixed_precision == "float16":
      from electra_tf.hparams import HParamError  # pylint: disable=g-import-not-at-top
      raise HParamError("mixed_precision float16 needs loss scaling, which fine-tuning does not implement; "
                        "use bfloat16 (same speed on recent GPUs/TPUs) or float32")
    keras.mixed_precision.set_global_policy(
        "mixed_bfloat16" if config.mixed_precision == "bfloat16" else "float32")
    keras.utils.set_random_seed(seed)  # weight initialisation of the heads (and of a fresh encoder)
    self.model_config = config.model_config()
    with strategy.scope():
      self.model = FinetuningModel(self.model_config, tasks)
      self.model.build()
    self.optimizer = None
    self._train_step = self._predict_step = None

  def reference_variables(self) -> dict:
    return finetuning_variables(self.model)

  # ---- training -----------------------------------------------------------------------------------------

  def make_optimizer(self, total_steps: int):
    cfg = self.config
    names = {id(v): n for n, v in self.reference_variables().items()}
    with self.strategy.scope():
      self.optimizer = create_optimizer(
          cfg.learning_rate, total_steps, cfg.weight_decay_rate, warmup_proportion=cfg.warmup_proportion,
          layerwise_lr_decay_power=cfg.layerwise_lr_decay,
          n_transformer_layers=self.model_config.num_hidden_layers, variable_names=names)
      self.optimizer.build(self.model.trainable_variables)
    return self.optimizer

  def _build_train_step(self):
    model, optimizer, strategy = self.model, self.optimizer, self.strategy
    base_seed = tf.constant([self.seed, 0x5EED], tf.int32)
    n_replicas = strategy.num_replicas_in_sync

    def step_fn(batch):
      ctx = tf.distribute.get_replica_context()
      seed = tf.random.experimental.stateless_fold_in(base_seed, tf.cast(optimizer.iterations, tf.int32))
      seed = tf.random.experimental.stateless_fold_in(seed, ctx.replica_id_in_sync_group)
      variables = model.trainable_variables
      with tf.GradientTape() as tape:
        loss, _ = model(batch, training=True, dropout_seed=seed)
      grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
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
    def train_step(iterator):
      per_replica = strategy.run(step_fn, args=(next(iterator),))
      return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    return train_step

  def train(self, arrays: dict, total_steps: int, steps_per_epoch: int,
            on_epoch_end: typing.Optional[typing.Callable[[int], dict]] = None,
            log_dir: typing.Optional[str] = None, progress: bool = True) -> dict:
    """Runs ``total_steps`` steps; calls ``on_epoch_end(epoch)`` after each epoch (and at the end).
    Returns {"global_step", "loss" (mean of the last epoch), "examples_per_second"}."""
    cfg = self.config
    if self.optimizer is None:
      self.make_optimizer(total_steps)
    ds = make_dataset(arrays, cfg.train_batch_size, True, self.seed)
    iterator = iter(self.strategy.experimental_distribute_dataset(ds))
    self._train_step = self._train_step or self._build_train_step()
    writer = tf.summary.create_file_writer(log_dir) if log_dir else None
    bar = None
    if progress:
      from tqdm.auto import tqdm  # pylint: disable=g-import-not-at-top
      bar = tqdm(total=total_steps, desc="fine-tuning", unit="step", dynamic_ncols=True, leave=False)
    log_every = max(1, min(25, steps_per_epoch))  # several points per epoch for the curves
    losses, start, epoch = [], time.time(), 0
    step = int(self.optimizer.iterations.numpy())
    while step < total_steps:
      loss = float(self._train_step(iterator))
      step += 1
      if not math.isfinite(loss):
        raise FloatingPointError(f"loss became {loss} at step {step}; lower the learning rate")
      losses.append(loss)
      if bar is not None:
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.4f}")
      if writer is not None and (step % log_every == 0 or step == total_steps):
        with writer.as_default(step=step):
          scalar_summary("train/loss", np.mean(losses[-log_every:]))
          scalar_summary("train/learning_rate", float(self.optimizer.learning_rate))
      if on_epoch_end is not None and steps_per_epoch and step % steps_per_epoch == 0 and step < total_steps:
        epoch += 1
        metrics = on_epoch_end(epoch)
        _write_metrics(writer, step, metrics)
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
    ds = self.strategy.experimental_distribute_dataset(make_dataset(arrays, batch_size, False))
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


def scalar_summary(name: str, value: float):
  """A TensorBoard scalar without needing the tensorboard package (``tf.summary.scalar`` does): the same
  event the scalars plugin reads, written with the plugin's metadata."""
  from tensorflow.core.framework import summary_pb2  # pylint: disable=g-import-not-at-top
  metadata = summary_pb2.SummaryMetadata(
      plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
      data_class=summary_pb2.DATA_CLASS_SCALAR)
  tf.summary.write(name, tf.constant(float(value), tf.float32), metadata=metadata.SerializeToString())


def _write_metrics(writer, step, metrics):
  if writer is None or not metrics:
    return
  with writer.as_default(step=step):
    for task, values in metrics.items():
      for k, v in values.items():
        if isinstance(v, (int, float)):
          scalar_summary(f"dev/{task}/{k}", v)
