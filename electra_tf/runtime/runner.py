"""One runner for both jobs: a job is a ``Task``, and ``Runner`` owns the lifecycle around it.

A task supplies what is its own: the model (built through ``Runner.build``), the trainable variables and the
model's checkpoint objects, the objective ``step.ReplicaStep`` differentiates (``prepare``, ``forward``,
``zeros``) and the values the compiled loop sums (``value_shapes``); and, as functions it hands to ``fit``,
its input stream, its evaluation (a replica function the shared evaluator runs, and the aggregation of the
batches' outputs), its metrics from the summed values (``training_log.Logging``) and its own hooks.

The runner owns the rest, one policy for both jobs:

- **Strategy and precision.** The job hands in the strategy ``runtime.select_strategy`` chose (first, before
  anything touches TensorFlow: multi-worker collectives are set up when the runtime starts) and whether this
  process is the chief; the global batch must split into replicas x ``gradient_accumulation_steps``
  (``step.check_batch_split``); the Keras precision policy; dynamic loss scaling for float16.
- **Seeds.** ``build`` initialises a model's weights from a seed (the same weights in any topology); dropout
  is keyed by the run's seed variable, the step and the replica or each example's global row (``step``:
  ``replica_dropout_seed``, ``example_dropout_key``, ``DROPOUT_STREAM``).
- **The optimizer** (``build_optimizer``: built for the task's variables under the strategy's scope), the
  replica step and the compiled loop, rebuilt only with a new optimizer.
- **Checkpoints** (``checkpointer``, ``resume``): the task's objects, the optimizer, the loss scale and the
  input position; the chief writes the job's directory, every other worker a throw-away directory of its own
  (``checkpointing.worker_dir``); one restore path, which passes over an unreadable newest checkpoint for an
  earlier one and says in one line why a checkpoint does not fit.
- **The host loop** (``fit``): the training log (the task's metrics with the learning rate, throughput and
  ETA in TensorBoard, the chief's only, and log lines: ``training_log``), the progress bar, the checkpoint and
  evaluation schedules, early stopping, SIGTERM / SIGINT and the NaN line (``controller.Controller``), and the
  ``profile_steps`` trace (``profiling.StepProfiler``).
- **Evaluation** (``evaluate``, ``predict``): a local iterator of global batches, each replica its rows,
  outputs summed or gathered so that every worker computes what one device would (``loop.compile_eval``).
- **Lines** (``say``): the chief's only, above the progress bar when there is one, else through the job's
  ``log_fn``.
"""

import dataclasses
import time
import typing

import keras
import numpy as np
import tensorflow as tf

from electra_tf import runtime
from electra_tf.configs import uses_per_example_dropout
from electra_tf.errors import ElectraError, HParamError
from electra_tf.optimization import create_optimizer
from electra_tf.runtime import checkpointing, controller, loop, profiling, step as train_step
from electra_tf.runtime.loss_scale import DynamicLossScale
from electra_tf.runtime.training_log import Logging, TrainingLog

NAN_ADVICE = "lower learning_rate, or use bfloat16 instead of float16"
Hook = controller.Hook


@dataclasses.dataclass
class FitResult:
  """What ``Runner.fit`` returns: the step reached, ``"finished"`` or ``"interrupted"``, the last logged values,
  and the steps run and seconds spent in this call."""
  step: int
  status: str
  last_log: dict
  steps: int = 0
  seconds: float = 0.0


class Task:
  """What a job supplies to ``Runner`` (see the module docstring). ``Runner(cfg, task, ...)`` sets
  ``task.runner``; the runner's state reads through the task (``task.optimizer`` ...)."""
  error_type = ElectraError  # what the NaN line and the job's own errors raise
  loss_key = "loss"  # the summed value whose non-finite value stops the run

  def trainable_variables(self) -> list:
    raise NotImplementedError

  def checkpoint_objects(self) -> dict:
    """The model's ``tf.train.Checkpoint`` children (the runner adds the optimizer and the loss scale)."""
    raise NotImplementedError

  def value_shapes(self) -> dict:
    """{name: shape} of the values one step logs, ``grad_norm`` included; the compiled loop sums them."""
    raise NotImplementedError

  def prepare(self, features, ctx):
    """Once per step and replica, before the micro-batches (``step.Objective``)."""
    return ()

  def forward(self, features, step, row_offset, prepared, dropout_seed):
    """One micro-batch -> (loss to differentiate, values summed over micro-batches and replicas)."""
    raise NotImplementedError

  def zeros(self) -> dict:
    """Zeros shaped like ``forward``'s values."""
    raise NotImplementedError

  def saving(self, step: int):
    """Called before each checkpoint of the run is written."""

  optimizer = property(lambda self: self.runner.optimizer)
  schedule = property(lambda self: self.runner.schedule)
  loss_scale = property(lambda self: self.runner.loss_scale)
  step_var = property(lambda self: self.runner.step_var)
  seed_var = property(lambda self: self.runner.seed_var)
  replica_step = property(lambda self: self.runner.replica_step)
  stop_signal = property(lambda self: self.runner.stop_signal)
  chief = property(lambda self: self.runner.chief)


class Runner:
  """Runs ``task`` under ``strategy`` as ``cfg`` (a ``RuntimeConfig`` with the training fields both jobs
  share) says; ``seed`` keys the dropout masks (``reset`` sets the next trial's)."""

  def __init__(self, cfg, task: Task, strategy: tf.distribute.Strategy, seed: int, log_fn=print,
               progress: bool = True):
    self.cfg, self.task, self.strategy, self.log_fn, self.progress = cfg, task, strategy, log_fn, progress
    task.runner = self
    self.replicas = strategy.num_replicas_in_sync
    self.accumulation = cfg.gradient_accumulation_steps
    self.per_example_dropout = uses_per_example_dropout(cfg)
    train_step.check_batch_split(HParamError, "train_batch_size", cfg.train_batch_size, self.replicas,
                                 self.accumulation)
    runtime.set_precision_policy(cfg.mixed_precision)
    self.chief = runtime.is_chief(strategy)
    self.use_xla, self.xla_reason = runtime.xla_choice(cfg, strategy)
    self._compiled_once = self._profiled = False
    self._profile_note = None
    with strategy.scope():
      self.loss_scale = DynamicLossScale() if cfg.mixed_precision == "float16" else None
      # int64: TensorFlow keeps int32 variables in host memory, which an XLA cluster on a GPU cannot read
      self.seed_var = tf.Variable(seed, dtype=tf.int64, trainable=False, name="dropout_seed")
    self.optimizer = self.schedule = self.replica_step = self._loop = None
    self._eval_steps = {}
    self.writer = self.bar = self.stop_signal = self.training_log = None

  # -- building ----------------------------------------------------------------------------------------------

  def build(self, make: typing.Callable[[], typing.Any], seed: int):
    """``make()`` under the strategy's scope, with the weights it initialises drawn from ``seed``."""
    keras.utils.set_random_seed(seed)
    with self.strategy.scope():
      return make()

  def build_optimizer(self, *args, **kwargs):
    """``optimization.create_optimizer(*args, **kwargs)``, its slots built for the task's variables (they exist
    before the first compiled step and a restore); the next ``fit`` compiles its loop for it."""
    with self.strategy.scope():
      self.optimizer = create_optimizer(*args, **kwargs)
      self.optimizer.build(self.task.trainable_variables())
    self.schedule = getattr(self.optimizer, "_learning_rate", None)
    self._loop = None  # a compiled loop captures the optimizer it was built with
    return self.optimizer

  @property
  def step_var(self):
    return self.optimizer.iterations

  def reset(self, seed: int):
    """A next trial on the same objects: the optimizer's slots and step at zero, the loss scale at its start,
    ``seed`` for the dropout masks (the compiled loop is kept)."""
    if self.optimizer is not None:
      for variable in self.optimizer.variables:
        variable.assign(tf.zeros_like(variable))
    if self.loss_scale is not None:
      self.loss_scale.reset()
    self.seed_var.assign(seed)
    self.stop_signal = None

  def train_loop(self):
    """``loop(iterator, num_steps) -> (summed values, steps done, first non-finite step or -1)``."""
    if self._loop is None:
      self.replica_step = train_step.ReplicaStep(
          self.task, self.task.trainable_variables(), self.optimizer, self.strategy, accumulation=self.accumulation,
          loss_scale=self.loss_scale, use_xla=self.use_xla, per_example_dropout=self.per_example_dropout,
          seed=self.seed_var)
      self._loop = loop.compile_loop(self.strategy, self.replica_step, self.task.value_shapes(), self.task.loss_key,
                                     self.accumulation)
    return self._loop

  # -- checkpoints -------------------------------------------------------------------------------------------

  def checkpoint_objects(self) -> dict:
    objects = {**self.task.checkpoint_objects(), "optimizer": self.optimizer}
    if self.loss_scale is not None:
      objects.update(self.loss_scale.checkpoint_objects())
    return objects

  def checkpointer(self, directory: str, iterator=None, max_to_keep: int = 5) -> checkpointing.Checkpointer:
    """The run's checkpoints in ``directory`` (a non-chief worker writes its throw-away copies elsewhere)."""
    return checkpointing.Checkpointer(directory, self.checkpoint_objects(), self.step_var, max_to_keep=max_to_keep,
                                      write_dir=checkpointing.worker_dir(directory, self.strategy, self.chief),
                                      iterator=iterator)

  def resume(self, directory: str, batches: typing.Callable[[int], tf.data.Dataset], max_to_keep: int = 5,
             replay: bool = True):
    """(input iterator, checkpointer, restored checkpoint or None) of a run that checkpoints in ``directory``,
    restored from its latest readable checkpoint. ``batches(skip)``: the stream of global batches from batch
    ``skip``; a checkpoint without the input position replays the stream to it, or with ``replay`` false is
    refused in one line."""
    iterator = iter(batches(0))
    ckpt = self.checkpointer(directory, iterator, max_to_keep)
    path, skip = ckpt.restore()
    if skip and not replay:
      raise self.task.error_type(f"{path} has no input position; delete {directory} to start it again")
    if skip:
      iterator = iter(batches(skip))
      ckpt = self.checkpointer(directory, iterator, max_to_keep)
    return iterator, ckpt, path

  # -- the host loop -----------------------------------------------------------------------------------------

  def say(self, line: str):
    """One line of the job's, on the chief only."""
    if not self.chief:
      return
    if self.bar is not None:
      self.bar.write(line)
    else:
      self.log_fn(line)

  def postfix(self, **values):
    """Values shown beside the progress bar."""
    if self.bar is not None:
      self.bar.set_postfix(**values)

  def fit(self, iterator, target: int, logging: Logging, ckpt: typing.Optional[checkpointing.Checkpointer] = None,
          hooks: typing.Sequence[Hook] = (), *, save_every: int = 0, save_final: bool = True,
          on_save: typing.Optional[typing.Callable[[int], typing.Any]] = None,
          evaluate: typing.Optional[typing.Callable[[int], dict]] = None, eval_every: int = 0,
          should_stop: typing.Optional[typing.Callable[[], bool]] = None, intervals: typing.Sequence[int] = (),
          logdir: typing.Optional[str] = None, progress: typing.Optional[bool] = None, desc: str = "training",
          leave: bool = True, where: str = "") -> FitResult:
    """Trains from the optimizer's step to ``target`` on ``iterator`` (global batches); the result's status
    is "finished" or "interrupted" (a stop signal: the checkpoint is saved and a line says so, naming
    ``where``).

    After each compiled loop, in order: the progress bar; the training log's point when one is due
    (``logging``, ``training_log``); every ``save_every`` steps (and at the end, with ``save_final``) a
    checkpoint in ``ckpt`` and ``on_save(step)``; ``hooks``; every ``eval_every`` steps before the end
    ``evaluate(step)`` -> {TensorBoard prefix: scalars}, then ``should_stop()``, true ending training there.
    ``intervals``: further steps at which loops end.
    """
    self.writer = runtime.LazySummaryWriter(logdir) if logdir and self.chief else None
    show = self.progress if progress is None else progress
    self.bar = runtime.progress_bar(show and self.chief, target, int(self.step_var.numpy()), desc=desc, leave=leave)

    def save(step):
      if self.writer is not None:
        self.writer.flush()
      if ckpt is not None:
        self.task.saving(step)
        ckpt.save(step)

    def checkpoint(report):
      save(report.step)
      if on_save is not None:
        on_save(report.step)

    def evaluation(report):
      for prefix, values in (evaluate(report.step) or {}).items():
        runtime.write_scalars(self.writer, report.step, values, prefix)
      if should_stop is not None and should_stop():
        host.request_finish()

    def advance(report):
      if self.bar is not None:
        self.bar.update(report.done)
      if not self._compiled_once:  # the first call traces the step (and compiles it with XLA)
        self._compiled_once = True
        self.say(f"first compiled call: {report.elapsed:.1f} s for {report.done} step(s), tracing"
                 f"{' and XLA compilation' if self.use_xla else ''} included")

    if not self._compiled_once:
      self.say(f"XLA {'on' if self.use_xla else 'off'} ({self.xla_reason})")
    log = self.training_log = TrainingLog(logging, self)
    every = [Hook(advance), Hook(log.add), Hook(log.point, every=logging.every)]
    if save_every and (ckpt is not None or on_save is not None):
      every.append(Hook(checkpoint, every=save_every, final=save_final))
    every.extend(hooks)
    if evaluate is not None and eval_every:
      every.append(Hook(evaluation, every=eval_every, final=False))
    first = int(self.step_var.numpy())
    profiler = self._profiler(logdir, target)
    if profiler is not None:  # stops before the other hooks (checkpoints), starts after them
      every = [Hook(profiler.after_loop)] + every + [Hook(lambda report: profiler.start_if_due(report.step))]
    host = controller.Controller(
        self.train_loop(), self.step_var, self.cfg.iterations_per_loop, every, save=save,
        saved_at=ckpt.saved_at if ckpt is not None else (lambda step: False),
        latest=lambda: ckpt.latest if ckpt is not None else None, error_type=self.task.error_type,
        nan_advice=NAN_ADVICE, intervals=intervals, stops=profiler.stops if profiler is not None else ())
    start = time.perf_counter()
    try:
      if profiler is not None:
        profiler.start_if_due(first)  # a window from the run's first step
      status = host.run(iterator, target, log_fn=self.say, where=where)
      step = int(self.step_var.numpy())
      return FitResult(step, status, log.last, step - first, time.perf_counter() - start)
    finally:
      if profiler is not None:
        profiler.finish()
        self._profiled = profiler.done
      self.stop_signal = host.stop_signal
      if self.bar is not None:
        self.bar.close()
      self.bar = None
      if self.writer is not None:
        self.writer.flush()
      if ckpt is not None and not self.chief:
        ckpt.remove_worker_copies()

  def _profiler(self, logdir: typing.Optional[str], target: int) -> typing.Optional[profiling.StepProfiler]:
    """The ``profile_steps`` trace for a ``fit`` (into ``logdir``, by the chief; the other workers keep its loop
    edges) until one has traced its steps (a later trial of a search, whose steps count from 1 again, is not
    traced), else None."""
    window = self.cfg.profile_window()
    if window is None or self._profiled:
      return None
    why = ("this run has no TensorBoard directory to write the trace to" if logdir is None and self.chief else
           f"training ends at step {target}, before step {window[0]}" if target < window[0] else None)
    if why:
      if why != self._profile_note:  # once, not again for every trial of a search
        self.say(f"profile_steps {self.cfg.profile_steps}: {why}; nothing traced")
      self._profile_note = why
      return None
    return profiling.StepProfiler(*window, logdir, self.say, trace=self.chief)

  # -- evaluation --------------------------------------------------------------------------------------------

  def evaluate(self, name: str, replica_fn, iterator, num_batches: int, combine: str = "sum"):
    """The outputs of ``num_batches`` global batches of ``iterator`` (numpy): replica r runs ``replica_fn(its
    rows, batch index)``; each output is summed over replicas and batches (``combine`` "sum") or gathered in
    row order and concatenated over batches ("gather"), the same on every worker (``loop.compile_eval``).
    Compiled once per ``name``."""
    if name not in self._eval_steps:
      self._eval_steps[name] = loop.compile_eval(self.strategy, replica_fn, combine)
    eval_step, total = self._eval_steps[name], None
    for i in range(num_batches):
      out = tf.nest.map_structure(lambda t: t.numpy(), eval_step(iterator, tf.constant(i, tf.int32)))
      if combine == "sum":
        total = out if total is None else tf.nest.map_structure(lambda a, b: a + b, total, out)
      else:
        total = [out] if total is None else total + [out]
    if combine == "sum" or total is None:
      return total
    return tf.nest.map_structure(lambda *parts: np.concatenate(parts), *total)

  def predict(self, replica_fn, arrays: dict, batch_size: int, batches: typing.Callable[[dict, int], tf.data.Dataset]):
    """``replica_fn``'s outputs for every row of ``arrays`` (numpy, equal lengths), in row order, on every
    worker: batches of ``batch_size`` rounded up to a multiple of the replica count (``batches(arrays, batch)``
    makes them), the last padded by repeating its last row, whose outputs are dropped."""
    n = len(next(iter(arrays.values())))
    batch = -(-batch_size // self.replicas) * self.replicas
    padded = -(-n // batch) * batch
    if padded != n:
      arrays = {k: np.concatenate([v, np.repeat(np.asarray(v)[-1:], padded - n, axis=0)]) for k, v in arrays.items()}
    outs = self.evaluate("predict", replica_fn, iter(batches(arrays, batch)), padded // batch, combine="gather")
    return tf.nest.map_structure(lambda v: v[:n], outs)
