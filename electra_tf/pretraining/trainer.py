"""The pre-training loop: tf.distribute, ``iterations_per_loop`` steps per compiled call, resumable.

One ``Trainer`` owns the strategy, the networks, the optimizer, the input iterator and a
``tf.train.Checkpoint`` of all of them (weights, Adam slots, step; the input position is the step).
Randomness is keyed by (seed, step, global example row) (``random_ops``), so there is no generator state
to save and a resumed run replays exactly what an uninterrupted one would do.

Per step and replica: masking and loss normalisers use *global* counts (one all-reduce of three scalars),
gradients are all-reduced, clipped to global norm 1.0 and applied; so N replicas with a global batch B give
the one-device update of the same B (batch sizes are global, as in the reference).

Gradient accumulation (``gradient_accumulation_steps`` k): each replica's batch is cut into k micro-batches
run one after the other inside the compiled step; their gradients (computed with the global denominators
and their rows' global offsets) are summed, then all-reduced, clipped and applied once. The optimizer, the
schedule, checkpoints and ``iterations_per_loop`` count global steps; a step is never checkpointed half-done.
Dropout is then keyed per example (``per_example_dropout``), so k micro-batches equal one batch.
"""

import dataclasses
import os
import time
import typing

import keras
import numpy as np
import tensorflow as tf

from electra_tf import fileio, runtime
from electra_tf.configs import PretrainingConfig, pretraining_summary, uses_per_example_dropout
from electra_tf.convert import load_pretrained_weights
from electra_tf.errors import PretrainingError
from electra_tf.modeling import RowKeyedSeed, derive_seed
from electra_tf.optimization import accumulate, accumulation_graph_options, clip_by_global_norm, create_optimizer
from electra_tf.pretrain_data import inputs
from electra_tf.pretraining import evaluation, masking, objective, random_ops
from electra_tf.pretraining.collapse import CollapseGuard
from electra_tf.pretraining.loss_scale import DynamicLossScale

CLIP_NORM = 1.0
# Masking/sampling stream offset for evaluation, so eval batches never reuse training draws.
EVAL_SEED_OFFSET = 1_000_003


@dataclasses.dataclass
class LoopResult:
  """What ``train`` returns: the final step, why it stopped, and the last loop's logged values."""
  step: int
  status: str  # "finished", "interrupted"
  last_log: dict


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
    runtime.check_writable(cfg.model_dir, "model directory", directory=True)  # before hours of training, not after
    special = special or masking.SpecialIds.from_vocab_file(cfg.vocab_file, cfg.vocab_size)
    runtime.set_precision_policy(cfg.mixed_precision)
    self.num_replicas = self.strategy.num_replicas_in_sync
    self.accumulation = cfg.gradient_accumulation_steps
    self.per_example_dropout = uses_per_example_dropout(cfg)
    for name, batch in (("train_batch_size", cfg.train_batch_size), ("eval_batch_size", cfg.eval_batch_size)):
      if batch % self.num_replicas:
        raise PretrainingError(f"{name} {batch} is not a multiple of the {self.num_replicas} replicas; "
                               "batch sizes are global: use a multiple")
    replicas_x_micro = self.num_replicas * self.accumulation
    if cfg.train_batch_size % replicas_x_micro:
      raise PretrainingError(f"train_batch_size {cfg.train_batch_size} does not split into {self.num_replicas} "
                             f"replicas x gradient_accumulation_steps {self.accumulation}; use a multiple of "
                             f"{replicas_x_micro}")
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

  def _make_checkpoint(self):
    ckpt = tf.train.Checkpoint(**self._checkpoint_objects())
    directory = self.cfg.model_dir
    if not self.chief:  # non-chief workers write a throw-away copy (every worker must take part)
      directory = os.path.join(self.cfg.model_dir, ".worker_tmp", str(self.strategy.cluster_resolver.task_id))
    manager = tf.train.CheckpointManager(ckpt, directory, max_to_keep=self.cfg.keep_checkpoint_max,
                                         step_counter=self.step_var, checkpoint_name="ckpt")
    return ckpt, manager

  def init_from_checkpoint(self, path: str):
    """Weights only (fresh optimizer, step 0), from any format ``convert.load_pretrained_weights`` reads."""
    report = load_pretrained_weights(path, self.model.networks)
    self.log_fn(f"initialised from {path}: {report.summary()}")

  # -- steps -----------------------------------------------------------------------------------------------

  def _grads(self, features, step, row_offset, dens, dropout_seed):
    """Gradients, losses and metric sums of this replica's batch: at once, or summed over
    ``gradient_accumulation_steps`` micro-batches (rows ``row_offset + i * micro`` of the global batch)."""
    k = self.accumulation
    if k == 1:
      return self._micro_grads(features, step, row_offset, dens, dropout_seed)
    micro = tf.shape(features["input_ids"])[0] // k

    def micro_step(part, i):
      return self._micro_grads(part, step, row_offset + i * micro, dens, dropout_seed)

    losses = objective.loss_names(self.model)
    sums = [key for key in objective.train_log_keys(self.model) if key not in losses and key != "grad_norm"]
    zeros = ([tf.zeros_like(v) for v in self.variables], {key: tf.zeros([]) for key in losses},
             {key: tf.zeros(_value_shape(key)) for key in sums})
    return accumulate(micro_step, features, k, zeros)

  def _micro_grads(self, features, step, row_offset, dens, dropout_seed):
    if self.per_example_dropout:  # masks keyed by each row's global index, as masking and sampling
      dropout_seed = RowKeyedSeed(random_ops.step_key(self.cfg.seed, step, random_ops.DROPOUT), row_offset)
    with tf.GradientTape() as tape:
      out = self.model.forward(features, self.cfg.seed, step, training=True, row_offset=row_offset,
                               denominators=dens, dropout_seed=dropout_seed)
      loss = out["total_loss"]
      if self.loss_scale is not None:
        loss = self.loss_scale.scale_loss(loss)
    grads = tape.gradient(loss, self.variables)
    grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g) for g, v in zip(grads, self.variables)]
    if self.loss_scale is not None:
      grads = self.loss_scale.unscale(grads)
    losses = {k: out[k] for k in objective.loss_names(self.model)}
    return grads, losses, objective.train_metric_sums(out)

  def _apply(self, grads, n):
    """Clip the global gradient and apply it (Keras all-reduce-sums across replicas, hence the 1/n)."""
    grads, norm = clip_by_global_norm(grads, CLIP_NORM)
    if n > 1:
      grads = [g / n for g in grads]
    apply = lambda: self.optimizer.apply(grads, self.variables)
    if self.loss_scale is None:
      apply()
      return norm
    return self.loss_scale.apply(norm, apply, self.step_var)

  def _replica_train_step(self, features):
    ctx = tf.distribute.get_replica_context()
    replica_id = tf.cast(ctx.replica_id_in_sync_group, tf.int32)
    n = ctx.num_replicas_in_sync
    step = tf.identity(self.step_var)
    row_offset = replica_id * tf.shape(features["input_ids"])[0]
    dens = self.model.local_denominators(features)
    if n > 1:
      dens = ctx.all_reduce(tf.distribute.ReduceOp.SUM, dens)
    base = tf.stack([tf.constant(self.cfg.seed, tf.int32), tf.cast(step, tf.int32)])
    dropout_seed = derive_seed(derive_seed(base, 7), replica_id)
    if n > 1:  # XLA around the model only: cross-replica collectives stay outside the compiled cluster
      grads, losses, sums = self._grads_fn(features, step, row_offset, dens, dropout_seed)
      grads = ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)
      norm = self._apply(grads, n)
    else:
      grads, losses, sums, norm = self._single_fn(features, step, row_offset, dens, dropout_seed)
    return {**losses, **sums, "grad_norm": norm / n}

  def _single_device_step(self, features, step, row_offset, dens, dropout_seed):
    grads, losses, sums = self._grads(features, step, row_offset, dens, dropout_seed)
    return grads, losses, sums, self._apply(grads, 1)

  def compiled_train_loop(self):
    """``loop(iterator, num_steps) -> (summed values, steps done, first non-finite step or -1)``."""
    if self._train_loop_fn is not None:
      return self._train_loop_fn
    jit = self.cfg.use_xla and not isinstance(self.strategy, tf.distribute.TPUStrategy)
    self._grads_fn = tf.function(self._grads, jit_compile=True) if jit else self._grads
    self._single_fn = tf.function(self._single_device_step, jit_compile=True) if jit else self._single_device_step
    strategy, keys = self.strategy, objective.train_log_keys(self.model)
    shapes = {k: _value_shape(k) for k in keys}

    @tf.function
    def train_loop(iterator, num_steps):
      totals = {k: tf.zeros(shapes[k]) for k in keys}
      done, bad_step = tf.constant(0), tf.constant(-1, tf.int64)
      for _ in tf.range(num_steps):
        step_before = tf.identity(self.step_var)
        per_replica = strategy.run(self._replica_train_step, (next(iterator),))
        values = {k: strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica[k], axis=None) for k in keys}
        if not tf.math.is_finite(values["total_loss"]):
          bad_step = step_before
          break
        totals = {k: totals[k] + values[k] for k in keys}
        done += 1
      return totals, done, bad_step

    def run_loop(iterator, num_steps):
      with accumulation_graph_options(self.accumulation > 1):
        return train_loop(iterator, num_steps)

    self._train_loop_fn = run_loop
    return run_loop

  # -- training --------------------------------------------------------------------------------------------

  def _distributed_iterator(self, patterns, batch, seed, start_batch=0):
    fn = inputs.make_dataset_fn(self.cfg, patterns, batch, seed, start_batch)
    return iter(self.strategy.distribute_datasets_from_function(fn))

  def train(self, max_steps: typing.Optional[int] = None, after_loop=None) -> LoopResult:
    """Trains to ``num_train_steps`` (or to ``max_steps`` total steps), resuming if possible.

    ``after_loop(step)``: called after every compiled loop (tests use it to deliver a signal mid-run).
    """
    cfg = self.cfg
    target = min(cfg.num_train_steps, max_steps or cfg.num_train_steps)
    ckpt, manager = self._make_checkpoint()
    if manager.latest_checkpoint:
      ckpt.restore(manager.latest_checkpoint).assert_existing_objects_matched()
      self.log_fn(f"resuming from {manager.latest_checkpoint} at step {int(self.step_var.numpy())}")
    elif cfg.init_checkpoint:
      self.init_from_checkpoint(cfg.init_checkpoint)
    step = int(self.step_var.numpy())
    iterator = self._distributed_iterator(inputs.train_files(cfg), cfg.train_batch_size, cfg.seed,
                                          start_batch=step)  # one global batch per step since step 0
    train_loop = self.compiled_train_loop()
    if self.chief:
      self.log_fn(pretraining_summary(cfg))
    writer = (runtime.LazySummaryWriter(os.path.join(cfg.model_dir, "train")) if self.chief
              else tf.summary.create_noop_writer())
    bar = runtime.progress_bar(self.progress and self.chief, target, step, desc="pre-training")
    guard = CollapseGuard.for_run(cfg.num_train_steps, cfg.num_warmup_steps)
    guard.resume_at(step)
    last_log, status = {}, "finished"
    with runtime.stop_requests() as stop:
      try:
        while step < target:
          start = time.perf_counter()
          totals, done, bad = train_loop(iterator, tf.constant(self._loop_length(step, target)))
          done, bad = int(done.numpy()), int(bad.numpy())
          if bad >= 0:
            raise PretrainingError(
                f"loss became NaN or infinite at step {bad}; stopped without saving, the last good checkpoint is "
                f"{manager.latest_checkpoint or 'none'}; lower learning_rate, or use bfloat16 instead of float16")
          step = int(self.step_var.numpy())
          last_log = self._log_loop(writer, totals, done, step, time.perf_counter() - start, bar)
          if step % cfg.save_checkpoints_steps == 0 or step >= target:
            self._save(manager, step)
          collapse = guard.update(step, last_log)
          if collapse and cfg.stop_on_collapse:
            raise PretrainingError(f"stopped at step {step} (stop_on_collapse): {collapse}; the last checkpoint is "
                                   f"{manager.latest_checkpoint or 'none'}")
          if collapse and self.chief:
            self.log_fn(f"warning: {collapse}")
          if cfg.eval_every_steps and step % cfg.eval_every_steps == 0 and step < target:
            self.evaluate(step=step, writer=writer)
          if after_loop is not None:
            after_loop(step)
          if stop.signal is not None:
            if manager.latest_checkpoint is None or not manager.latest_checkpoint.endswith(f"-{step}"):
              self._save(manager, step)
            self.log_fn(f"stopped by signal {stop.signal} at step {step}; checkpoint saved, rerun the same "
                        "command to resume")
            status = "interrupted"
            break
      except tf.errors.DataLossError as e:
        raise inputs.data_loss_error(cfg, e, manager.latest_checkpoint) from None
      finally:
        if bar is not None:
          bar.close()
        writer.flush()
        if not self.chief:
          fileio.rmtree(os.path.join(cfg.model_dir, ".worker_tmp"), ignore_errors=True)
    return LoopResult(step, status, last_log)

  def _save(self, manager, step: int):
    """A checkpoint, with the run's hparams beside it (convert, fine-tuning and init_checkpoint rebuild the
    networks from them); a run that fails before its first checkpoint leaves neither."""
    if self.chief and not self._config_saved:  # the hparams do not change within a run: once is enough
      runtime.atomic_write(os.path.join(self.cfg.model_dir, self.cfg.SAVED_CONFIG_FILE), self.cfg.to_json())
      self._config_saved = True
    manager.save(checkpoint_number=step)

  def _loop_length(self, step: int, target: int) -> int:
    cfg = self.cfg
    n = min(cfg.iterations_per_loop, target - step)
    for every in (cfg.save_checkpoints_steps, cfg.eval_every_steps, cfg.log_every_steps):
      if every:
        n = min(n, every - step % every)
    return max(1, n)

  def _log_loop(self, writer, totals, done, step, elapsed, bar) -> dict:
    if done == 0:
      return {}
    values = objective.train_log_values({k: v.numpy().astype(np.float64) for k, v in totals.items()}, done,
                                        self.model)
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
    if restore:
      latest = tf.train.latest_checkpoint(cfg.model_dir)
      if latest is None:
        raise PretrainingError(f"no checkpoint in {cfg.model_dir} to evaluate; train first (do_train) or "
                               "pass the model name of a trained model")
      tf.train.Checkpoint(**self._checkpoint_objects()).read(latest).expect_partial()
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
