"""The fine-tuning job as a task of the shared runner (``runtime.runner``): the tasks' heads on the encoder.

Training follows the reference: loss summed over the (global) batch, gradients clipped to global norm 1.0,
AdamW without bias correction, multiplicative warmup over the first 10% of steps then linear decay, layer-wise
LR ``lr * d^(L + 2 - depth)``. What is fine-tuning's own is the model, its loss, epochs and their evaluation,
the trial checkpoint's place and prediction; strategy, precision, loss scaling, the optimizer, dropout seeds,
accumulation, checkpoints, summaries, progress, signals and the NaN stop are the runner's, shared with
pre-training.
"""

import functools
import typing

import numpy as np
import tensorflow as tf

from electra_tf.errors import FinetuningError, HParamError
from electra_tf.finetuning.inputs import make_dataset
from electra_tf.finetuning.model import FinetuningModel
from electra_tf.runtime import runner as runner_lib

_say = functools.partial(print, flush=True)


class Trainer(runner_lib.Task):
  """The fine-tuning task on the shared runner: the model, its summed task losses, the in-memory input,
  epochs and prediction. ``reset(seed)`` starts the next trial of a run on the same objects: the weights a new
  trainer with that seed would build, a fresh optimizer state, and the compiled training and prediction steps
  kept (their tracing and XLA compilation are paid once per run). ``log_fn``: where the runner's lines go."""
  error_type = FinetuningError

  def __init__(self, config, tasks, strategy: tf.distribute.Strategy, seed: int, log_fn=_say):
    self.config, self.tasks, self.strategy, self.seed = config, tasks, strategy, seed
    qa = [t.name for t in tasks if t.head_type == "qa"]
    if qa and 0 < config.length_bucket_width < config.beam_size:
      raise HParamError(f"length_bucket_width {config.length_bucket_width} is below beam_size {config.beam_size}: "
                        f"the {qa[0]} head takes the top beam_size positions of each example; set "
                        f"length_bucket_width to at least {config.beam_size}, or 0")
    runner_lib.Runner(config, self, strategy, seed, log_fn=log_fn)
    self.model_config = config.model_config()
    self.model = self._new_model(seed)

  def _new_model(self, seed: int) -> FinetuningModel:
    def build():  # the heads' weights (and a fresh encoder's) drawn from ``seed``
      model = FinetuningModel(self.model_config, self.tasks)
      model.build()
      return model
    return self.runner.build(build, seed)

  def reset(self, seed: int, config=None, tasks=None):
    """The state a new ``Trainer(config, tasks, strategy, seed)`` would start from, on these objects: the
    weights initialised from ``seed`` (copied from a model built as ``__init__`` builds it), the optimizer's
    slots and step at zero, the loss scale at its start and ``seed`` for the dropout masks and data order.
    ``config`` / ``tasks``: a next run's, which must build this trainer (``TrainerCache`` checks that); the
    schedule then follows its peak LR when it trains."""
    self.config, self.tasks = config or self.config, tasks or self.tasks
    self.runner.cfg = self.config
    fresh = self._new_model(seed)
    mine, theirs = self.model.weights, fresh.weights
    if [tuple(v.shape) for v in mine] != [tuple(v.shape) for v in theirs]:
      raise RuntimeError("Trainer.reset: a model built from the same config has other weights")
    for variable, value in zip(mine, theirs):
      variable.assign(value)
    self.runner.reset(seed)
    self.seed = seed

  # ---- the task -----------------------------------------------------------------------------------------

  def trainable_variables(self):
    return self.model.trainable_variables

  def checkpoint_objects(self) -> dict:
    """What a resumable trial checkpoint holds of the model (the runner adds the optimizer, loss scale and
    input position)."""
    return {"model": self.model}

  def value_shapes(self) -> dict:
    return {"loss": [], "grad_norm": []}

  def forward(self, features, step, row_offset, prepared, dropout_seed):
    loss, _ = self.model(features, training=True, dropout_seed=dropout_seed)
    return loss, {"loss": loss}

  def zeros(self) -> dict:
    return {"loss": tf.zeros([])}

  # ---- training -----------------------------------------------------------------------------------------

  def make_optimizer(self, total_steps: int):
    """The optimizer and its schedule (``self.schedule``: peak LR and length are variables, so the compiled
    step serves the next run of another peak LR or length: ``set_schedule``)."""
    cfg = self.config
    names = {id(v): n for n, v in self.model.reference_variables().items()}
    return self.runner.build_optimizer(
        cfg.learning_rate, total_steps, cfg.weight_decay_rate, warmup_proportion=cfg.warmup_proportion,
        layerwise_lr_decay_power=cfg.layerwise_lr_decay, n_transformer_layers=self.model_config.num_hidden_layers,
        variable_names=names, settable_schedule=True)

  def set_schedule(self, total_steps: int):
    """The schedule of ``config``'s peak LR and warmup over ``total_steps`` (building the optimizer if none)."""
    if self.optimizer is None:
      self.make_optimizer(total_steps)
    else:
      self.schedule.set(self.config.learning_rate, total_steps, warmup_proportion=self.config.warmup_proportion)

  def train(self, arrays: dict, total_steps: int, steps_per_epoch: int,
            on_epoch_end: typing.Optional[typing.Callable[[int], dict]] = None,
            log_dir: typing.Optional[str] = None, progress: bool = True,
            on_checkpoint: typing.Optional[typing.Callable[[int], None]] = None,
            resume_dir: typing.Optional[str] = None,
            should_stop: typing.Optional[typing.Callable[[], bool]] = None, where: str = "") -> dict:
    """Runs ``total_steps`` steps; calls ``on_epoch_end(epoch)`` after each epoch but the last (its {task:
    scalars} go to TensorBoard under ``dev/<task>/``), and ``on_checkpoint(step)`` every
    ``save_checkpoints_steps`` steps before the last.

    ``resume_dir``: where the trial's resumable checkpoint (weights, optimizer, step, input position) is
    written every ``save_checkpoints_steps`` steps and on SIGTERM / SIGINT, and restored from if present.
    ``should_stop()``: asked after each ``on_epoch_end``; true ends training there (early stopping).
    Returns {"global_step", "loss" (mean of the last logged steps: at most 25, within the last epoch),
    "examples_per_second", "status"} with status
    "finished", or "interrupted" (a stop signal: the checkpoint is saved, a line naming ``where`` says so).
    """
    cfg, runner = self.config, self.runner
    self.set_schedule(total_steps)
    batches = lambda skip: make_dataset(arrays, cfg.train_batch_size, True, self.seed, cfg.length_bucket_width)
    iterator, ckpt = iter(batches(0)), None
    if resume_dir:  # a trial checkpoint is always written with its input position
      iterator, ckpt, _ = runner.resume(resume_dir, batches, max_to_keep=1, replay=False)
    evaluate = None
    if on_epoch_end is not None:
      evaluate = lambda step: {f"dev/{task}/": v for task, v in (on_epoch_end(step // steps_per_epoch) or {}).items()}
    values = lambda totals, steps: {k: float(totals[k]) / steps for k in ("loss", "grad_norm")}
    logging = runner_lib.Logging(values, cfg.train_batch_size, cfg.max_seq_length, total_steps,
                                 every=max(1, min(25, steps_per_epoch)), prefix="train/")
    result = runner.fit(iterator, total_steps, logging, ckpt, save_every=cfg.save_checkpoints_steps, save_final=False,
                        on_save=on_checkpoint, evaluate=evaluate, eval_every=steps_per_epoch, should_stop=should_stop,
                        logdir=log_dir, progress=progress, desc="fine-tuning", leave=False, where=where)
    return {"global_step": result.step, "loss": result.last_log.get("loss", float("nan")), "status": result.status,
            "examples_per_second": result.steps * cfg.train_batch_size / max(result.seconds, 1e-9)}

  # ---- prediction ---------------------------------------------------------------------------------------

  def predict(self, arrays: dict, batch_size: int) -> typing.Dict[str, dict]:
    """Runs the model on ``arrays`` and returns, per task, its head's outputs for the rows of that task, in
    input order (every worker computes every row: ``Runner.predict``)."""
    model = self.model
    outs = self.runner.predict(lambda rows, _: model(rows, training=False)[1], arrays, batch_size,
                               lambda padded, batch: make_dataset(padded, batch, False))
    task_id = np.asarray(arrays["task_id"])
    return {task.name: {k: v[task_id == i] for k, v in outs[task.name].items()} for i, task in enumerate(self.tasks)}
