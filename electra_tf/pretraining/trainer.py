"""The pre-training job: the ELECTRA objective on the shared training runtime (``electra_tf.training``).

One ``Trainer`` owns the strategy, the networks, the optimizer, the input iterator and their checkpoints
(weights, Adam slots, step and the input position: ``training.checkpointing``). Randomness is keyed by
(seed, step, global example row) (``random_ops``), so there is no generator state to save and a resumed run
replays exactly what an uninterrupted one would do.

What is pre-training's own: the objective (masking and sampling keyed by global rows, loss normalisers from
*global* counts: one all-reduce of three scalars per step), the logged metrics, the collapse guard and the
evaluation. The step itself (accumulation, all-reduce, clip, loss scaling, apply, XLA), the compiled loop,
NaN detection, checkpoints and the host loop with its signals are ``electra_tf.training``'s, shared with
fine-tuning.
"""

import dataclasses
import os
import typing

import keras
import numpy as np
import tensorflow as tf

from electra_tf import runtime
from electra_tf.configs import PretrainingConfig, pretraining_summary, uses_per_example_dropout
from electra_tf.errors import PretrainingError
from electra_tf.modeling import derive_seed
from electra_tf.optimization import create_optimizer
from electra_tf.pretrain_data import inputs
from electra_tf.pretraining import evaluation, init_checkpoint, masking, objective, random_ops
from electra_tf.pretraining.collapse import CollapseGuard
from electra_tf.training import checkpointing, controller, loop, step as train_step
from electra_tf.training.loss_scale import DynamicLossScale

# Masking/sampling stream offset for evaluation, so eval batches never reuse training draws.
EVAL_SEED_OFFSET = 1_000_003


@dataclasses.dataclass
class LoopResult:
  """What ``train`` returns: the final step, why it stopped, and the last loop's logged values."""
  step: int
  status: str  # "finished", "interrupted"
  last_log: dict


class _Objective:
  """The ELECTRA objective as ``training.step.ReplicaStep`` runs it (``model.forward`` is looked up at trace
  time, so tests can wrap it)."""

  def __init__(self, model: objective.PretrainingModel, seed: int):
    self.model, self.seed = model, seed
    self.loss_names = objective.loss_names(model)
    self.sum_keys = [k for k in objective.train_log_keys(model) if k not in self.loss_names and k != "grad_norm"]

  def prepare(self, features, ctx):
    dens = self.model.local_denominators(features)
    if ctx.num_replicas_in_sync > 1:
      dens = ctx.all_reduce(tf.distribute.ReduceOp.SUM, dens)
    return dens

  def replica_seed(self, step, replica_id):
    base = tf.stack([tf.constant(self.seed, tf.int32), tf.cast(step, tf.int32)])
    return derive_seed(derive_seed(base, 7), replica_id)

  def example_key(self, step):
    return random_ops.step_key(self.seed, step, random_ops.DROPOUT)

  def forward(self, features, step, row_offset, dens, dropout_seed):
    out = self.model.forward(features, self.seed, step, training=True, row_offset=row_offset, denominators=dens,
                             dropout_seed=dropout_seed)
    return out["total_loss"], {**{k: out[k] for k in self.loss_names}, **objective.train_metric_sums(out)}

  def zeros(self) -> dict:
    return {k: tf.zeros(_value_shape(k)) for k in self.loss_names + self.sum_keys}


class Trainer:
  """Builds everything for ``cfg`` under a strategy; ``train()`` runs or resumes, ``evaluate()`` evaluates.

  ``log_fn``: where the per-loop log lines go (default ``print``). ``progress``: show a tqdm bar.
  ``check_inputs`` / ``special``: benchmarks feed synthetic batches with BERT's ids and no vocab file.
  """

  def __init__(self, cfg: PretrainingConfig, strategy: tf.distribute.Strategy = None, log_fn=print,
               progress: bool = True, check_inputs: bool = True, special: masking.SpecialIds = None):
    self.cfg, self.log_fn, self.progress = cfg, log_fn, progress
    self.strategy = strategy or runtime.select_strategy(cfg)  # first: multi-worker precedes TF runtime start
    if check_inputs:
      inputs.check_data(cfg)
    if cfg.init_checkpoint and cfg.do_train and tf.train.latest_checkpoint(cfg.model_dir) is None:
      init_checkpoint.check_exists(cfg.init_checkpoint)  # before the networks are built (train() loads it)
    runtime.check_writable(cfg.model_dir, "model directory", directory=True)  # before hours of training, not after
    special = special or masking.SpecialIds.from_vocab_file(cfg.vocab_file, cfg.vocab_size)
    runtime.set_precision_policy(cfg.mixed_precision)
    self.num_replicas = self.strategy.num_replicas_in_sync
    self.accumulation = cfg.gradient_accumulation_steps
    self.per_example_dropout = uses_per_example_dropout(cfg)
    train_step.check_batch_split(PretrainingError, "train_batch_size", cfg.train_batch_size, self.num_replicas,
                                 self.accumulation)
    train_step.check_batch_split(PretrainingError, "eval_batch_size", cfg.eval_batch_size, self.num_replicas)
    self.chief = runtime.is_chief(self.strategy)
    keras.utils.set_random_seed(cfg.seed)  # same initial weights for the same seed, in any topology
    with self.strategy.scope():
      self.model = objective.PretrainingModel(cfg, special)
      self.variables = self.model.trainable_variables
      self.optimizer = create_optimizer(cfg.learning_rate, cfg.num_train_steps, cfg.weight_decay_rate,
                                        num_warmup_steps=cfg.num_warmup_steps, lr_decay_power=cfg.lr_decay_power,
                                        variable_names=self.model.variable_names(),
                                        bias_correction=cfg.adam_bias_correction)
      self.optimizer.build(self.variables)  # slots exist before the first compiled step and restore
      self.loss_scale = DynamicLossScale() if cfg.mixed_precision == "float16" else None
    self.step_var = self.optimizer.iterations
    self.schedule = getattr(self.optimizer, "_learning_rate", None)
    self._train_loop_fn = self._eval_fn = None
    self._config_saved = False

  # -- checkpoints ------------------------------------------------------------------------------------------

  def _checkpoint_objects(self) -> dict:
    nets = self.model.networks
    objs = {"optimizer": self.optimizer}
    objs.update(nets.checkpoint_objects())
    if self.loss_scale is not None:
      objs.update(self.loss_scale.checkpoint_objects())
    return objs

  def _checkpointer(self, iterator=None) -> checkpointing.Checkpointer:
    return checkpointing.Checkpointer(
        self.cfg.model_dir, self._checkpoint_objects(), self.step_var, max_to_keep=self.cfg.keep_checkpoint_max,
        write_dir=checkpointing.worker_dir(self.cfg.model_dir, self.strategy, self.chief), iterator=iterator)

  def init_from_checkpoint(self, path: str):
    """Weights only (fresh optimizer, step 0) from any format ``convert.load_pretrained_weights`` reads: a
    reference TF1 checkpoint (Google's released files), a model directory or pre-training run, a
    transformers directory or a keras-hub preset. Logs what was loaded and what keeps its fresh
    initialisation; returns the loader's report (``init_checkpoint.load``)."""
    report = init_checkpoint.load(path, self.model.networks)
    if self.chief:
      self.log_fn(init_checkpoint.summary_line(path, report, self.model.networks))
    return report

  # -- training --------------------------------------------------------------------------------------------

  def compiled_train_loop(self):
    """``loop(iterator, num_steps) -> (summed values, steps done, first non-finite step or -1)``."""
    if self._train_loop_fn is None:
      self.replica_step = train_step.ReplicaStep(
          _Objective(self.model, self.cfg.seed), self.variables, self.optimizer, self.strategy,
          accumulation=self.accumulation, loss_scale=self.loss_scale, use_xla=self.cfg.use_xla,
          per_example_dropout=self.per_example_dropout)
      shapes = {k: _value_shape(k) for k in objective.train_log_keys(self.model)}
      self._train_loop_fn = loop.compile_loop(self.strategy, self.replica_step, shapes, "total_loss", self.accumulation)
    return self._train_loop_fn

  def _distributed_iterator(self, patterns, batch, seed):
    fn = inputs.make_dataset_fn(self.cfg, patterns, batch, seed)
    return iter(self.strategy.distribute_datasets_from_function(fn))

  def train(self, max_steps: typing.Optional[int] = None, after_loop=None) -> LoopResult:
    """Trains to ``num_train_steps`` (or to ``max_steps`` total steps), resuming if possible.

    ``after_loop(step)``: called after every compiled loop (tests use it to deliver a signal mid-run).
    """
    cfg = self.cfg
    target = min(cfg.num_train_steps, max_steps or cfg.num_train_steps)
    dataset = inputs.global_batches(cfg, inputs.train_files(cfg), cfg.train_batch_size, cfg.seed)
    iterator = iter(dataset)
    ckpt = self._checkpointer(iterator)
    path, skip = ckpt.restore()
    if path:
      unused = f" (init_checkpoint {cfg.init_checkpoint} is not used: the run resumes)" if cfg.init_checkpoint else ""
      self.log_fn(f"resuming from {path} at step {int(self.step_var.numpy())}{unused}")
    elif cfg.init_checkpoint:
      self.init_from_checkpoint(cfg.init_checkpoint)
    if skip:  # a checkpoint without the input position: replay the stream to it (one global batch a step)
      dataset = inputs.global_batches(cfg, inputs.train_files(cfg), cfg.train_batch_size, cfg.seed, skip)
      iterator = iter(dataset)
      ckpt = self._checkpointer(iterator)
    step = int(self.step_var.numpy())
    if self.chief:
      self.log_fn(pretraining_summary(cfg))
    writer = (runtime.LazySummaryWriter(os.path.join(cfg.model_dir, "train")) if self.chief
              else tf.summary.create_noop_writer())
    bar = runtime.progress_bar(self.progress and self.chief, target, step, desc="pre-training")
    guard = CollapseGuard.for_run(cfg.num_train_steps, cfg.num_warmup_steps)
    guard.resume_at(step)
    last_log = {}

    def log(report):
      last_log.clear()
      last_log.update(self._log_loop(writer, report.totals, report.done, report.step, report.elapsed, bar))

    def save(step):
      self._save(ckpt, step)

    def check_collapse(report):
      collapse = guard.update(report.step, last_log)
      if collapse and cfg.stop_on_collapse:
        raise PretrainingError(f"stopped at step {report.step} (stop_on_collapse): {collapse}; the last checkpoint "
                               f"is {ckpt.latest or 'none'}")
      if collapse and self.chief:
        self.log_fn(f"warning: {collapse}")

    hooks = [controller.Hook(log),
             controller.Hook(lambda r: save(r.step), every=cfg.save_checkpoints_steps),
             controller.Hook(check_collapse),
             controller.Hook(lambda r: self.evaluate(step=r.step, writer=writer), every=cfg.eval_every_steps,
                             final=False) if cfg.eval_every_steps else None,
             controller.Hook(lambda r: after_loop(r.step)) if after_loop is not None else None]
    runner = controller.Controller(
        self.compiled_train_loop(), self.step_var, cfg.iterations_per_loop, [h for h in hooks if h is not None],
        save=save, saved_at=ckpt.saved_at, latest=lambda: ckpt.latest, error_type=PretrainingError,
        nan_advice="lower learning_rate, or use bfloat16 instead of float16", intervals=[cfg.log_every_steps])
    try:
      status = runner.run(iterator, target, log_fn=self.log_fn)
    except tf.errors.DataLossError as e:
      raise inputs.data_loss_error(cfg, e, ckpt.latest) from None
    finally:
      if bar is not None:
        bar.close()
      writer.flush()
      if not self.chief:
        ckpt.remove_worker_copies()
    return LoopResult(int(self.step_var.numpy()), status, dict(last_log))

  def _save(self, ckpt: checkpointing.Checkpointer, step: int):
    """A checkpoint, with the run's hparams beside it (convert, fine-tuning and init_checkpoint rebuild the
    networks from them); a run that fails before its first checkpoint leaves neither."""
    if self.chief and not self._config_saved:  # the hparams do not change within a run: once is enough
      runtime.atomic_write(os.path.join(self.cfg.model_dir, self.cfg.SAVED_CONFIG_FILE), self.cfg.to_json())
      self._config_saved = True
    ckpt.save(step)

  def _log_loop(self, writer, totals, done, step, elapsed, bar) -> dict:
    if done == 0:
      return {}
    values = objective.train_log_values({k: v.astype(np.float64) for k, v in totals.items()}, done, self.model)
    values["learning_rate"] = float(self.schedule(step - 1)) if callable(self.schedule) else float("nan")
    seqs = done * self.cfg.train_batch_size / elapsed
    values["sequences_per_sec"] = seqs
    values["tokens_per_sec"] = seqs * self.cfg.max_seq_length
    runtime.write_scalars(writer, step, values)
    if self.loss_scale is not None:
      values["loss_scale"] = float(self.loss_scale.scale.numpy())
    if self.chief:
      eta = (self.cfg.num_train_steps - step) * elapsed / done
      line = runtime.log_line(step, self.cfg.num_train_steps, values, eta)
      if bar is not None:
        bar.update(done)
        bar.set_postfix(loss=f"{values['total_loss']:.3f}", seq_s=f"{seqs:.1f}")
        bar.write(line)
      else:
        self.log_fn(line)
    return values

  # -- evaluation ------------------------------------------------------------------------------------------

  def evaluate(self, step: typing.Optional[int] = None, writer=None, num_steps: typing.Optional[int] = None,
               restore: bool = False) -> dict:
    """The reference's metrics over ``num_eval_steps`` held-out batches; written under results/.

    ``restore``: load the latest checkpoint of ``model_dir`` first (``do_eval`` runs).
    """
    cfg = self.cfg
    if restore:  # the run's own restore: a damaged newest checkpoint falls back to an earlier one
      path, _ = self._checkpointer().restore()
      if path is None:
        raise PretrainingError(f"no checkpoint in {cfg.model_dir} to evaluate; train first (do_train) or "
                               "pass the model name of a trained model")
    if self._eval_fn is None:
      self._eval_fn = evaluation.build_eval_step(self.strategy, self.model, cfg.seed + EVAL_SEED_OFFSET)
    step = int(self.step_var.numpy()) if step is None else step
    iterator = self._distributed_iterator(inputs.heldout_patterns(cfg), cfg.eval_batch_size, cfg.seed + 1)
    sums = None
    for i in range(num_steps or cfg.num_eval_steps):
      batch = {k: v.numpy() for k, v in self._eval_fn(iterator, tf.constant(i, tf.int32)).items()}
      sums = batch if sums is None else {k: sums[k] + batch[k] for k in sums}
    metrics = evaluation.finalize(sums)
    if self.chief:
      path = evaluation.write_results(cfg.results_txt, metrics, step, results_pkl=cfg.results_pkl)
      self.log_fn(f"eval at step {step}: " + "  ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items()))
                  + f"  (written to {path})")
      runtime.write_scalars(writer, step, metrics, prefix="eval/")
    return metrics


def _value_shape(key: str) -> list:
  """Shape of a per-step logged value: the AUC histograms are vectors, the rest scalars."""
  return [evaluation.NUM_THRESHOLDS + 1] if key.startswith("auc_") else []


def run(cfg: PretrainingConfig, log_fn=print, progress: bool = True, max_steps=None):
  """What ``run_pretraining.py`` does: train (resuming) or evaluate, per the reference's do_train/do_eval."""
  if cfg.do_train == cfg.do_eval:
    raise PretrainingError("exactly one of do_train and do_eval must be true (as the reference); to evaluate "
                           "while training set eval_every_steps")
  trainer = Trainer(cfg, log_fn=log_fn, progress=progress)
  if cfg.do_train:
    return trainer.train(max_steps=max_steps)
  return trainer.evaluate(restore=True)
