"""The fine-tuning job's trainer: tasks' heads on the encoder, run by the shared training runtime.

Training follows the reference: loss summed over the (global) batch, gradients clipped to global norm
1.0, AdamW without bias correction, multiplicative warmup over the first 10% of steps then linear decay,
layer-wise LR ``lr * d^(L + 2 - depth)``. Dropout masks come from ``seed``, the step and the replica, so
a trial is reproducible. The step (accumulation, all-reduce, clip, float16 loss scaling, apply, XLA), the
compiled loop of up to ``iterations_per_loop`` steps, NaN detection, the resumable checkpoint and the host
loop with its signals are ``electra_tf.training``'s, shared with pre-training; what is fine-tuning's own is
the model, the in-memory input, epochs and prediction.

``gradient_accumulation_steps`` k: the step's batch is cut into k micro-batches run one after the other
inside the compiled step, their gradients summed (the loss is a sum over examples, so this is exact), then
clipped and applied once; steps, the schedule and epochs count global batches. Dropout is then keyed per
example (``per_example_dropout``), so the k micro-batches equal the one batch.
"""

import collections
import json
import time
import typing

import keras
import numpy as np
import tensorflow as tf

from electra_tf import runtime
from electra_tf.configs import uses_per_example_dropout
from electra_tf.errors import FinetuningError, HParamError
from electra_tf.finetuning.model import FinetuningModel
from electra_tf.modeling.keyed_random import step_key
from electra_tf.optimization import create_optimizer
from electra_tf.training import checkpointing, controller, loop, step as train_step
from electra_tf.training.loss_scale import DynamicLossScale

# Stream of ``keyed_random.step_key`` for per-example dropout.
DROPOUT_STREAM = 1


def num_train_steps(n_padded: int, batch_size: int, epochs: float) -> int:
  """The reference's step count: int(n_padded // batch * epochs)."""
  return int(n_padded // batch_size * epochs)


def bucket_lengths(width: int, max_seq_length: int) -> typing.List[int]:
  """The padded lengths of ``length_bucket_width`` batches: multiples of ``width``, the last ``max_seq_length``."""
  return sorted({min(n, max_seq_length) for n in range(width, max_seq_length + width, width)})


def make_dataset(arrays: dict, batch_size: int, training: bool, seed: int = 0,
                 bucket_width: int = 0) -> tf.data.Dataset:
  """Arrays -> batches. Training repeats and shuffles with a 100-example buffer after the examples
  were shuffled once in Python, as the reference (shuffled TFRecords + shuffle(100)).

  ``bucket_width`` > 0 (training only; ``length_bucket_width``): each shuffled example is cut to its
  ``input_mask`` length and goes to the bucket of the next length in ``bucket_lengths``; a bucket that holds
  ``batch_size`` examples leaves as one batch padded to that length. Every per-token feature (the arrays
  whose second axis is the padded length) is cut with it; padding is zeros, as the featurizers pad. Batches
  then hold examples of similar length in place of the stream's order, and short ones cost their own
  length: what a batch of tagging or short sentences computes drops by the padding it no longer carries."""
  ds = tf.data.Dataset.from_tensor_slices(arrays)
  if training:
    ds = ds.repeat().shuffle(100, seed=seed)
  # In-memory arrays leave tf.data's autotuner nothing to tune, and its thread made the end of a trial wait:
  # deleting the training iterator waited for the thread's next wake-up (see Trainer.distribute).
  options = tf.data.Options()
  options.autotune.enabled = False
  if training and bucket_width:
    padded = int(np.shape(arrays["input_ids"])[1])
    per_token = {k for k, v in arrays.items() if np.ndim(v) == 2 and np.shape(v)[1] == padded}

    def cut(example):
      n = tf.reduce_sum(tf.cast(example["input_mask"], tf.int32))
      return {k: v[:n] if k in per_token else v for k, v in example.items()}

    lengths = bucket_lengths(bucket_width, padded)
    ds = ds.map(cut).bucket_by_sequence_length(
        lambda example: tf.shape(example["input_ids"])[0], [n + 1 for n in lengths],
        [batch_size] * (len(lengths) + 1), pad_to_bucket_boundary=True, drop_remainder=True)
    return ds.prefetch(2).with_options(options)
  return ds.batch(batch_size, drop_remainder=True).prefetch(2).with_options(options)


class _Objective:
  """The summed task losses of one micro-batch, as ``training.step.ReplicaStep`` runs it. The trial's seed is
  a variable, so the compiled step serves every trial of a run (``Trainer.reset``)."""

  def __init__(self, model, seed_var: tf.Variable):
    self.model, self.seed_var = model, seed_var

  @property
  def seed(self):
    return tf.cast(self.seed_var, tf.int32)

  def prepare(self, features, ctx):
    return ()

  def replica_seed(self, step, replica_id):
    base = tf.stack([self.seed, tf.constant(0x5EED, tf.int32)])
    seed = tf.random.experimental.stateless_fold_in(base, tf.cast(step, tf.int32))
    return tf.random.experimental.stateless_fold_in(seed, replica_id)

  def example_key(self, step):
    return step_key(self.seed, step, DROPOUT_STREAM)

  def forward(self, features, step, row_offset, prepared, dropout_seed):
    loss, _ = self.model(features, training=True, dropout_seed=dropout_seed)
    return loss, {"loss": loss}

  def zeros(self) -> dict:
    return {"loss": tf.zeros([])}


class _LossLog:
  """A trial's loss after each compiled call: TensorBoard points (the mean since the last point, and the
  learning rate of the last step), the progress bar, and the mean loss of the last epoch."""

  def __init__(self, writer, bar, schedule):
    self.writer, self.bar, self.schedule = writer, bar, schedule
    self.window, self.epoch = [0.0, 0], [0.0, 0]  # (summed loss, steps)
    self.last_epoch_loss, self.steps = 0.0, 0

  def add(self, report):
    loss = float(report.totals["loss"])
    for sums in (self.window, self.epoch):
      sums[0] += loss
      sums[1] += report.done
    self.steps += report.done
    if self.bar is not None:
      self.bar.update(report.done)
      self.bar.set_postfix(loss=f"{loss / max(report.done, 1):.4f}")

  def write(self, report):
    values = {"loss": self.window[0] / max(self.window[1], 1), "learning_rate": float(self.schedule(report.step - 1))}
    runtime.write_scalars(self.writer, report.step, values, "train/")
    self.window = [0.0, 0]

  def end_epoch(self, report):
    self.last_epoch_loss = self.epoch[0] / max(self.epoch[1], 1)
    self.epoch = [0.0, 0]


class Trainer:
  """Owns the model, its optimizer and compiled steps. ``reset(seed)`` starts the next trial of a run on the
  same objects: the weights a new trainer with that seed would build, a fresh optimizer state, and the
  compiled training and prediction steps kept (their tracing and XLA compilation are paid once per run)."""

  def __init__(self, config, tasks, strategy: tf.distribute.Strategy, seed: int):
    self.config, self.tasks, self.strategy, self.seed = config, tasks, strategy, seed
    train_step.check_batch_split(HParamError, "train_batch_size", config.train_batch_size,
                                 strategy.num_replicas_in_sync, config.gradient_accumulation_steps)
    qa = [t.name for t in tasks if t.head_type == "qa"]
    if qa and 0 < config.length_bucket_width < config.beam_size:
      raise HParamError(f"length_bucket_width {config.length_bucket_width} is below beam_size {config.beam_size}: "
                        f"the {qa[0]} head takes the top beam_size positions of each example; set "
                        f"length_bucket_width to at least {config.beam_size}, or 0")
    runtime.set_precision_policy(config.mixed_precision)
    self.model_config = config.model_config()
    self.model = self._new_model(seed)
    with strategy.scope():
      self.loss_scale = DynamicLossScale() if config.mixed_precision == "float16" else None
      # int64: TensorFlow keeps int32 variables in host memory, which an XLA cluster on a GPU cannot read
      self.seed_var = tf.Variable(seed, dtype=tf.int64, trainable=False, name="trial_seed")
    self.optimizer = self.schedule = None
    self.stop_signal = None
    self._train_loop = self._predict_step = None

  def _new_model(self, seed: int) -> FinetuningModel:
    keras.utils.set_random_seed(seed)  # weight initialisation of the heads (and of a fresh encoder)
    with self.strategy.scope():
      model = FinetuningModel(self.model_config, self.tasks)
      model.build()
    return model

  def reset(self, seed: int, config=None, tasks=None):
    """The state a new ``Trainer(config, tasks, strategy, seed)`` would start from, on these objects: the
    weights initialised from ``seed`` (copied from a model built as ``__init__`` builds it), the optimizer's
    slots and step at zero, the loss scale at its start and ``seed`` for the dropout masks and data order.
    ``config`` / ``tasks``: a next run's, which must build this trainer (``TrainerCache`` checks that); the
    schedule then follows its peak LR when it trains."""
    if config is not None:
      self.config = config
    if tasks is not None:
      self.tasks = tasks
    fresh = self._new_model(seed)
    mine, theirs = self.model.weights, fresh.weights
    if [tuple(v.shape) for v in mine] != [tuple(v.shape) for v in theirs]:
      raise RuntimeError("Trainer.reset: a model built from the same config has other weights")
    for variable, value in zip(mine, theirs):
      variable.assign(value)
    if self.optimizer is not None:
      for variable in self.optimizer.variables:  # Adam's moments and the step counter start at zero
        variable.assign(tf.zeros_like(variable))
    if self.loss_scale is not None:
      self.loss_scale.reset()
    self.seed = seed
    self.seed_var.assign(seed)
    self.stop_signal = None

  def distribute(self, ds: tf.data.Dataset):
    """The dataset as the strategy's replicas read it (prediction). One device reads it directly: the
    distributed wrapper's background thread (and tf.data's autotuner, off in ``make_dataset``) made deleting
    an iterator wait for their next wake-up: about 20 s at the end of every sample fine-tuning trial on 2 CPU
    cores, half the trial (benchmarks/README.md)."""
    if isinstance(self.strategy, tf.distribute.OneDeviceStrategy):
      return ds
    return self.strategy.experimental_distribute_dataset(ds)

  # ---- training -----------------------------------------------------------------------------------------

  def make_optimizer(self, total_steps: int):
    """The optimizer and its schedule (``self.schedule``: peak LR and length are variables, so the compiled
    step serves the next run of another peak LR or length: ``set_schedule``)."""
    cfg = self.config
    self._train_loop = None  # a compiled loop captures the optimizer it was built with
    names = {id(v): n for n, v in self.model.reference_variables().items()}
    with self.strategy.scope():
      self.optimizer = create_optimizer(
          cfg.learning_rate, total_steps, cfg.weight_decay_rate, warmup_proportion=cfg.warmup_proportion,
          layerwise_lr_decay_power=cfg.layerwise_lr_decay,
          n_transformer_layers=self.model_config.num_hidden_layers, variable_names=names,
          settable_schedule=True)
      self.optimizer.build(self.model.trainable_variables)
    self.schedule = self.optimizer._learning_rate  # pylint: disable=protected-access
    return self.optimizer

  def set_schedule(self, total_steps: int):
    """The schedule of ``config``'s peak LR and warmup over ``total_steps`` (building the optimizer if none)."""
    if self.optimizer is None:
      self.make_optimizer(total_steps)
    else:
      self.schedule.set(self.config.learning_rate, total_steps, warmup_proportion=self.config.warmup_proportion)

  def _build_train_loop(self):
    k = self.config.gradient_accumulation_steps
    self.replica_step = train_step.ReplicaStep(
        _Objective(self.model, self.seed_var), self.model.trainable_variables, self.optimizer, self.strategy,
        accumulation=k, loss_scale=self.loss_scale, use_xla=self.config.use_xla,
        per_example_dropout=uses_per_example_dropout(self.config))
    return loop.compile_loop(self.strategy, self.replica_step, {"loss": [], "grad_norm": []}, "loss", k)

  def checkpoint_objects(self) -> dict:
    """What a resumable trial checkpoint holds besides the input position."""
    objects = {"model": self.model, "optimizer": self.optimizer}
    if self.loss_scale is not None:
      objects.update(self.loss_scale.checkpoint_objects())
    return objects

  def train(self, arrays: dict, total_steps: int, steps_per_epoch: int,
            on_epoch_end: typing.Optional[typing.Callable[[int], dict]] = None,
            log_dir: typing.Optional[str] = None, progress: bool = True,
            on_checkpoint: typing.Optional[typing.Callable[[int], None]] = None,
            resume_dir: typing.Optional[str] = None,
            should_stop: typing.Optional[typing.Callable[[], bool]] = None) -> dict:
    """Runs ``total_steps`` steps; calls ``on_epoch_end(epoch)`` after each epoch but the last, and
    ``on_checkpoint(step)`` every ``save_checkpoints_steps`` steps before the last.

    ``resume_dir``: where the trial's resumable checkpoint (weights, optimizer, step, input position) is
    written every ``save_checkpoints_steps`` steps and on SIGTERM / SIGINT, and restored from if present.
    ``should_stop()``: asked after each ``on_epoch_end``; true ends training there (early stopping).
    Returns {"global_step", "loss" (mean of the last epoch), "examples_per_second", "status"} with status
    "finished", or "interrupted" (a stop signal: the checkpoint is saved, ``self.stop_signal`` names it).
    """
    cfg = self.config
    self.set_schedule(total_steps)
    iterator = iter(make_dataset(arrays, cfg.train_batch_size, True, self.seed, cfg.length_bucket_width))
    ckpt = None
    if resume_dir:
      ckpt = checkpointing.Checkpointer(resume_dir, self.checkpoint_objects(), self.optimizer.iterations,
                                        max_to_keep=1, iterator=iterator)
      path, skip = ckpt.restore()
      if skip:  # a trial checkpoint is always written with its input position
        raise FinetuningError(f"{path} has no input position; delete {resume_dir} to restart the trial")
    self._train_loop = self._train_loop or self._build_train_loop()
    writer = runtime.LazySummaryWriter(log_dir) if log_dir else None
    bar = runtime.progress_bar(progress, total_steps, int(self.optimizer.iterations.numpy()), desc="fine-tuning",
                               leave=False)
    losses = _LossLog(writer, bar, self.schedule)

    def save(step):
      if writer is not None:
        writer.flush()
      if ckpt is not None:
        ckpt.save(step)

    def epoch_end(report):
      for task, values in (on_epoch_end(report.step // steps_per_epoch) or {}).items():
        runtime.write_scalars(writer, report.step, values, f"dev/{task}/")
      if should_stop is not None and should_stop():
        runner.request_finish()

    def checkpoint(report):
      save(report.step)
      if on_checkpoint is not None:
        on_checkpoint(report.step)

    hooks = [controller.Hook(losses.add), controller.Hook(losses.write, every=max(1, min(25, steps_per_epoch))),
             controller.Hook(losses.end_epoch, every=steps_per_epoch)]
    if on_epoch_end is not None:
      hooks.append(controller.Hook(epoch_end, every=steps_per_epoch, final=False))
    if on_checkpoint is not None or ckpt is not None:
      hooks.append(controller.Hook(checkpoint, every=cfg.save_checkpoints_steps, final=False))
    runner = controller.Controller(
        self._train_loop, self.optimizer.iterations, cfg.iterations_per_loop, hooks, save=save,
        saved_at=ckpt.saved_at if ckpt is not None else (lambda step: False),
        latest=lambda: ckpt.latest if ckpt is not None else None, error_type=FinetuningError,
        nan_advice="lower learning_rate, or use bfloat16 instead of float16")
    start = time.time()
    try:
      status = runner.run(iterator, total_steps, log_fn=lambda line: None)  # run.py says which trial stopped
    finally:
      if bar is not None:
        bar.close()
      if writer is not None:
        writer.flush()
    self.stop_signal = runner.stop_signal
    elapsed = max(time.time() - start, 1e-9)
    return {"global_step": int(self.optimizer.iterations.numpy()), "loss": losses.last_epoch_loss,
            "status": status, "examples_per_second": losses.steps * cfg.train_batch_size / elapsed}

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


class TrainerCache:
  """Trainers kept for the next fine-tuning runs of one process (``FinetuningRun(..., trainers=cache)``).

  A run's trials share one trainer. An experiment that makes every grid point and seed a run of its own would
  otherwise trace and compile the same steps for each. With a cache, a run whose trainer would be built like a
  kept one (the same config but for ``PER_RUN_FIELDS``, heads of the same tasks and sizes) takes that one, with
  its config, ``reset`` to its seed: the weights, optimizer state, dropout masks and data order of a new trainer,
  its own peak LR and length (``Trainer.set_schedule``), the same results bit for bit. Keeps the ``size`` most
  recently used.
  """
  # What a reused trainer takes from the new run (its seed, init weights, peak LR and length) or only says where
  # data and outputs are; every other field (sizes, batch, dropout, layer-wise decay, warmup, XLA ...) must equal.
  PER_RUN_FIELDS = frozenset({
      "model_name", "data_dir", "raw_data_dir", "vocab_file", "tfds_data_dir", "init_checkpoint",
      "reinit_embeddings", "seed", "num_trials", "keep_all_models", "do_eval", "eval_every_epoch", "log_examples",
      "write_test_outputs", "n_writes_test", "skip_bad_rows", "learning_rate", "num_train_epochs"})

  def __init__(self, size: int = 4):
    self.size = size
    self._kept = collections.OrderedDict()
    self.built = self.reused = 0

  def key(self, config, tasks) -> str:
    fields = {k: v for k, v in config.to_dict().items() if k not in self.PER_RUN_FIELDS}
    heads = [(t.name, t.head_type, t.num_outputs) for t in tasks]
    return json.dumps([fields, heads], sort_keys=True, default=str)

  def get(self, config, tasks, strategy: tf.distribute.Strategy, seed: int) -> Trainer:
    """A kept trainer reset for this run, else a new one (then kept)."""
    key = self.key(config, tasks)
    trainer = self._kept.pop(key, None)
    if trainer is None:
      trainer = Trainer(config, tasks, strategy, seed)
      self.built += 1
    else:
      trainer.reset(seed, config, tasks)
      self.reused += 1
    self._kept[key] = trainer
    while len(self._kept) > self.size:
      self._kept.popitem(last=False)
    return trainer


def _local_concat(strategy, value) -> np.ndarray:
  parts = strategy.experimental_local_results(value)
  return np.concatenate([np.asarray(p) for p in parts]) if len(parts) > 1 else np.asarray(parts[0])
