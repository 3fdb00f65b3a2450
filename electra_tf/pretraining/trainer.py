"""The pre-training loop: tf.distribute, ``iterations_per_loop`` steps per compiled call, resumable.

One ``Trainer`` owns the strategy, the networks, the optimizer, the input iterator and a
``tf.train.Checkpoint`` of all of them (weights, Adam slots, step, input position). Randomness is keyed by
(seed, step, global example row) (``random_ops``), so there is no generator state to save and a resumed run
replays exactly what an uninterrupted one would do.

Per step and replica: masking and loss normalisers use *global* counts (one all-reduce of three scalars),
gradients are all-reduced, clipped to global norm 1.0 and applied; so N replicas with a global batch B give
the one-device update of the same B (batch sizes are global, as in the reference).
"""

import dataclasses
import json
import logging
import math
import os
import shutil
import signal
import time
import typing

import keras
import numpy as np
import tensorflow as tf

from electra_tf import tokenization
from electra_tf.configs import PretrainingConfig, pretraining_summary
from electra_tf.modeling import derive_seed
from electra_tf.optimization import clip_by_global_norm, create_optimizer
from electra_tf.pretraining import evaluation, masking, objective

log = logging.getLogger("electra_tf.pretraining")

CLIP_NORM = 1.0
# Masking/sampling stream offset for evaluation, so eval batches never reuse training draws.
EVAL_SEED_OFFSET = 1_000_003


class PretrainingError(RuntimeError):
  """A run cannot start or continue (bad data, vocab mismatch, NaN loss); the message says what to do."""


@dataclasses.dataclass
class LoopResult:
  """What ``train`` returns: the final step, why it stopped, and the last loop's logged values."""
  step: int
  status: str  # "finished", "interrupted"
  last_log: dict


# --- strategy -----------------------------------------------------------------------------------------------

def _tf_config_workers() -> int:
  try:
    cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
  except ValueError:
    raise PretrainingError("TF_CONFIG is not valid JSON; see docs/pretraining.md for an example") from None
  return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def select_strategy(cfg: PretrainingConfig) -> tf.distribute.Strategy:
  """``strategy``: auto (TPU if use_tpu/tpu_name, multi-worker if TF_CONFIG names several workers,
  Mirrored over several GPUs, else one device), one_device, mirrored, multi_worker or tpu."""
  name = cfg.strategy
  if name == "auto" and (cfg.use_tpu or cfg.tpu_name):
    name = "tpu"
  elif name == "auto" and _tf_config_workers() > 1:
    name = "multi_worker"
  if name == "multi_worker":  # before anything initialises the TF runtime (collectives are set up at start)
    return tf.distribute.MultiWorkerMirroredStrategy()
  gpus = tf.config.list_logical_devices("GPU")
  if name == "auto":
    name = "mirrored" if len(gpus) > 1 else "one_device"
  if name == "one_device":
    return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
  if name == "mirrored":
    return tf.distribute.MirroredStrategy()
  resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
      tpu=cfg.tpu_name or "", zone=cfg.tpu_zone, project=cfg.gcp_project,
      job_name=cfg.tpu_job_name or "worker")
  tf.config.experimental_connect_to_cluster(resolver)
  tf.tpu.experimental.initialize_tpu_system(resolver)
  return tf.distribute.TPUStrategy(resolver)


def set_precision_policy(mixed_precision: str):
  """float32 / bfloat16 / float16 -> the Keras global dtype policy (variables stay float32)."""
  keras.mixed_precision.set_global_policy(
      {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}[mixed_precision])


def is_chief(strategy) -> bool:
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or isinstance(strategy, tf.distribute.TPUStrategy):
    return True
  task_type, task_id = resolver.task_type, resolver.task_id
  return task_type in (None, "chief") or (task_type == "worker" and task_id == 0 and
                                          "chief" not in resolver.cluster_spec().as_dict())


# --- data ---------------------------------------------------------------------------------------------------

def special_ids_from_vocab(cfg: PretrainingConfig) -> masking.SpecialIds:
  """Reads ``vocab_file`` and checks it fits the model; one-line PretrainingError otherwise."""
  if not os.path.isfile(cfg.vocab_file):
    raise PretrainingError(f"vocab file {cfg.vocab_file} not found; put the vocab the data was built with "
                           "there or pass {\"vocab_file\": ...} in --hparams")
  vocab = tokenization.load_vocab(cfg.vocab_file)
  if len(vocab) > cfg.vocab_size:
    raise PretrainingError(f"vocab {cfg.vocab_file} has {len(vocab)} tokens but vocab_size is "
                           f"{cfg.vocab_size}; set {{\"vocab_size\": {len(vocab)}}} in --hparams")
  try:
    return masking.SpecialIds.from_vocab(vocab)
  except ValueError as e:
    raise PretrainingError(f"{cfg.vocab_file}: {e}") from None


def check_data(cfg: PretrainingConfig):
  """The TFRecords exist and were built with this vocab, casing and max_seq_length."""
  from electra_tf.pretrain_data import dataset, metadata
  try:
    files = dataset.list_files(cfg.pretrain_tfrecords)
  except ValueError:
    raise PretrainingError(f"no pre-training data matches {cfg.pretrain_tfrecords}; build it with "
                           "data_prep/build_pretraining_dataset.py --output-dir <data-dir>/pretrain_tfrecords "
                           "or pass --data-dir") from None
  try:
    metadata.check_metadata(cfg.pretrain_tfrecords, cfg.vocab_file, cfg.do_lower_case, cfg.max_seq_length)
  except ValueError as e:
    raise PretrainingError(str(e)) from None
  return files


def heldout_patterns(cfg: PretrainingConfig) -> str:
  """Evaluation files: the held-out ``pretrain_eval.tfrecord*`` that build_pretraining_dataset.py writes
  with ``--eval-fraction`` beside the training files, else the training files themselves (what the
  reference does; it has no held-out set)."""
  first = cfg.pretrain_tfrecords.split(",")[0]
  pattern = os.path.join(os.path.dirname(first), "pretrain_eval.tfrecord*")
  if tf.io.gfile.glob(pattern):
    return pattern
  log.warning("no held-out split next to %s: evaluating on the training files, as the reference does", first)
  return cfg.pretrain_tfrecords


def _train_patterns(cfg: PretrainingConfig) -> str:
  """Training globs minus any held-out files they happen to match."""
  return cfg.pretrain_tfrecords


def make_dataset_fn(cfg: PretrainingConfig, patterns, global_batch: int, seed: int, start_batch: int = 0):
  """``dataset_fn(input_context)`` for ``distribute_datasets_from_function``.

  Every input pipeline reads the same deterministic stream of *global* batches and keeps its rows, then
  splits them into consecutive per-replica batches, so replica r of the whole job gets rows
  [r * b, (r + 1) * b) of each global batch: the same examples as one device, in any topology.
  ``start_batch``: global batches to skip (the input position of a resumed run: one batch per step;
  tf.data distributed iterators cannot be checkpointed, so the stream is replayed and skipped).
  """
  from electra_tf.pretrain_data import dataset

  def dataset_fn(ctx: tf.distribute.InputContext):
    per_replica = ctx.get_per_replica_batch_size(global_batch)
    per_pipeline = global_batch // ctx.num_input_pipelines
    ds = dataset.pretraining_dataset(patterns, cfg.max_seq_length, global_batch,
                                     is_training=False,  # deterministic order: exact resume and replays
                                     seed=seed, check_files=False)
    if start_batch:
      ds = ds.skip(start_batch)
    if ctx.num_input_pipelines > 1:
      lo = ctx.input_pipeline_id * per_pipeline
      ds = ds.map(lambda f: {k: v[lo:lo + per_pipeline] for k, v in f.items()})
    if per_replica != per_pipeline:
      ds = ds.rebatch(per_replica)
    return ds.prefetch(tf.data.AUTOTUNE)

  return dataset_fn


# --- the trainer --------------------------------------------------------------------------------------------

class Trainer:
  """Builds everything for ``cfg`` under a strategy; ``train()`` runs or resumes, ``evaluate()`` evaluates.

  ``log_fn``: where the per-loop log lines go (default ``print``). ``progress``: show a tqdm bar.
  """

  def __init__(self, cfg: PretrainingConfig, strategy: tf.distribute.Strategy = None, log_fn=print,
               progress: bool = True, check_inputs: bool = True, special: masking.SpecialIds = None):
    self.cfg = cfg
    self.log_fn = log_fn
    self.progress = progress
    self.strategy = strategy or select_strategy(cfg)  # first: multi-worker must precede TF runtime start
    if check_inputs:
      check_data(cfg)
    special = special or special_ids_from_vocab(cfg)  # benchmarks pass BERT's ids and no vocab file
    set_precision_policy(cfg.mixed_precision)
    self.num_replicas = self.strategy.num_replicas_in_sync
    for name, batch in (("train_batch_size", cfg.train_batch_size), ("eval_batch_size", cfg.eval_batch_size)):
      if batch % self.num_replicas:
        raise PretrainingError(f"{name} {batch} is not a multiple of the {self.num_replicas} replicas; "
                               "batch sizes are global: use a multiple")
    self.chief = is_chief(self.strategy)
    keras.utils.set_random_seed(cfg.seed)  # same initial weights for the same seed, in any topology
    with self.strategy.scope():
      self.model = objective.PretrainingModel(cfg, special)
      self.variables = self.model.trainable_variables
      self.optimizer = create_optimizer(cfg.learning_rate, cfg.num_train_steps, cfg.weight_decay_rate,
                                        num_warmup_steps=cfg.num_warmup_steps, lr_decay_power=cfg.lr_decay_power,
                                        variable_names=self.model.variable_names())
      self.optimizer.build(self.variables)  # slots exist before the first compiled step and restore
      self.fp16 = cfg.mixed_precision == "float16"
      if self.fp16:  # dynamic loss scaling: start at 2^15, halve on overflow, double after 2000 good steps
        self.loss_scale = tf.Variable(2.0 ** 15, trainable=False, dtype=tf.float32, name="loss_scale",
                                      aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
        self.good_steps = tf.Variable(0, trainable=False, dtype=tf.int64, name="good_steps",
                                      aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    self.step_var = self.optimizer.iterations
    self.schedule = self.optimizer._learning_rate if hasattr(self.optimizer, "_learning_rate") else None
    self._train_iterator = None
    self._train_loop_fn = None
    self._eval_fn = None

  # -- checkpoints ------------------------------------------------------------------------------------------

  def _checkpoint_objects(self) -> dict:
    nets = self.model.networks
    objs = {"optimizer": self.optimizer}
    if nets.discriminator is not None:
      objs["discriminator"] = nets.discriminator
    if nets.generator is not None:
      objs["generator"] = nets.generator
    if self.fp16:
      objs.update(loss_scale=self.loss_scale, good_steps=self.good_steps)
    return objs

  def _make_checkpoint(self):
    objs = self._checkpoint_objects()
    ckpt = tf.train.Checkpoint(**objs)
    directory = self.cfg.model_dir
    if not self.chief:  # non-chief workers write a throw-away copy (every worker must take part)
      directory = os.path.join(self.cfg.model_dir, ".worker_tmp", str(self.strategy.cluster_resolver.task_id))
    manager = tf.train.CheckpointManager(ckpt, directory, max_to_keep=self.cfg.keep_checkpoint_max,
                                         step_counter=self.step_var, checkpoint_name="ckpt")
    return ckpt, manager

  def init_from_checkpoint(self, path: str):
    """Weights only (fresh optimizer, step 0): our checkpoints, or reference TF1 ones by name."""
    if tf.io.gfile.isdir(path):
      latest = tf.train.latest_checkpoint(path)
      if latest is None:
        raise PretrainingError(f"init_checkpoint {path} holds no checkpoint")
      path = latest
    try:
      reader = tf.train.load_checkpoint(path)
    except (tf.errors.NotFoundError, ValueError) as e:
      raise PretrainingError(f"init_checkpoint {path} cannot be read ({str(e).splitlines()[0]})") from None
    names = reader.get_variable_to_shape_map()
    from electra_tf.checkpoint_names import reference_variables
    ref = reference_variables(self.model.networks)
    if any(n in names for n in ref):  # a reference-layout (TF1 / exported) checkpoint
      loaded = 0
      for name, var in ref.items():
        if name in names:
          value = reader.get_tensor(name)
          if tuple(value.shape) != tuple(var.shape):
            raise PretrainingError(f"init_checkpoint {name} has shape {value.shape}, the model {var.shape}; "
                                   "check model_size / generator_hidden_size (1.0 for the released Small)")
          var.assign(value)
          loaded += 1
      missing = [n for n in ref if n not in names]
      self.log_fn(f"initialised {loaded} weights from {path} (reference names)"
                  + (f"; {len(missing)} not in the checkpoint, left at their initial values, e.g. {missing[0]}"
                     if missing else ""))
      return
    objs = {k: v for k, v in self._checkpoint_objects().items() if k in ("discriminator", "generator")}
    tf.train.Checkpoint(**objs).read(path).expect_partial()
    self.log_fn(f"initialised weights from {path} (optimizer and step start fresh)")

  # -- steps -----------------------------------------------------------------------------------------------

  def _replica_context(self):
    ctx = tf.distribute.get_replica_context()
    return ctx, tf.cast(ctx.replica_id_in_sync_group, tf.int32)

  def _seeds(self, step, replica_id):
    step = tf.cast(step, tf.int32)
    base = tf.stack([tf.constant(self.cfg.seed, tf.int32), step])
    return derive_seed(derive_seed(base, 7), replica_id)

  def _grads(self, features, step, row_offset, dens, dropout_seed):
    with tf.GradientTape() as tape:
      out = self.model.forward(features, self.cfg.seed, step, training=True, row_offset=row_offset,
                               denominators=dens, dropout_seed=dropout_seed)
      loss = out["total_loss"]
      if self.fp16:
        loss = loss * self.loss_scale
    grads = tape.gradient(loss, self.variables)
    grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g) for g, v in zip(grads, self.variables)]
    if self.fp16:
      grads = [g / self.loss_scale for g in grads]
    losses = {k: out[k] for k in objective.loss_names(self.model)}
    return grads, losses, objective.train_metric_sums(out)

  def _apply(self, grads, n):
    """Clip the global gradient, apply (Keras all-reduce-sums, hence the 1/n), and keep fp16 scaling."""
    grads, norm = clip_by_global_norm(grads, CLIP_NORM)
    if n > 1:
      grads = [g / n for g in grads]
    if not self.fp16:
      self.optimizer.apply(grads, self.variables)
      return norm
    finite = tf.math.is_finite(norm)

    def good():
      self.optimizer.apply(grads, self.variables)
      grow = self.good_steps + 1 >= 2000
      self.loss_scale.assign(tf.where(grow, self.loss_scale * 2.0, self.loss_scale))
      self.good_steps.assign(tf.where(grow, tf.constant(0, tf.int64), self.good_steps + 1))
      return tf.constant(0)

    def bad():  # skip the update (the step still counts), halve the scale
      self.loss_scale.assign(tf.maximum(self.loss_scale / 2.0, 1.0))
      self.good_steps.assign(tf.constant(0, tf.int64))
      self.step_var.assign_add(1)
      return tf.constant(0)

    tf.cond(finite, good, bad)
    return tf.where(finite, norm, 0.0)

  def _replica_train_step(self, features):
    ctx, replica_id = self._replica_context()
    n = ctx.num_replicas_in_sync
    step = tf.identity(self.step_var)
    row_offset = replica_id * tf.shape(features["input_ids"])[0]
    dens = self.model.local_denominators(features)
    if n > 1:
      dens = ctx.all_reduce(tf.distribute.ReduceOp.SUM, dens)
    dropout_seed = self._seeds(step, replica_id)
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

  def _build_train_fns(self):
    jit = self.cfg.use_xla and not isinstance(self.strategy, tf.distribute.TPUStrategy)
    self._grads_fn = tf.function(self._grads, jit_compile=jit) if jit else self._grads
    self._single_fn = tf.function(self._single_device_step, jit_compile=jit) if jit else self._single_device_step

    strategy = self.strategy

    keys = objective.loss_names(self.model) + ["mlm_correct", "mlm_count", "grad_norm"]
    if self.model.has_discriminator:
      keys += ["disc_correct", "disc_count"]

    @tf.function
    def train_loop(iterator, num_steps):
      totals = {k: tf.constant(0.0) for k in keys}
      done = tf.constant(0)
      bad_step = tf.constant(-1, tf.int64)
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

    self._train_loop_fn = train_loop

  # -- training --------------------------------------------------------------------------------------------

  def _distributed_iterator(self, patterns, batch, seed, start_batch=0):
    fn = make_dataset_fn(self.cfg, patterns, batch, seed, start_batch)
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
    # the input position: one global batch per step since step 0
    iterator = self._distributed_iterator(_train_patterns(cfg), cfg.train_batch_size, cfg.seed,
                                          start_batch=int(self.step_var.numpy()))
    if self._train_loop_fn is None:
      self._build_train_fns()
    if self.chief:
      self.log_fn(pretraining_summary(cfg))
    writer = (tf.summary.create_file_writer(os.path.join(cfg.model_dir, "train")) if self.chief
              else tf.summary.create_noop_writer())
    step = int(self.step_var.numpy())
    bar = self._progress_bar(step, target)
    stop = {"signal": None}
    previous = {sig: signal.signal(sig, lambda s, f: stop.__setitem__("signal", s))
                for sig in (signal.SIGTERM, signal.SIGINT)} if _main_thread() else {}
    last_log, status = {}, "finished"
    try:
      while step < target:
        n = self._loop_length(step, target)
        start = time.perf_counter()
        totals, done, bad = self._train_loop_fn(iterator, tf.constant(n))
        done, bad = int(done.numpy()), int(bad.numpy())
        elapsed = time.perf_counter() - start
        if bad >= 0:
          raise PretrainingError(
              f"loss became NaN or infinite at step {bad}; stopped without saving, the last good checkpoint is "
              f"{manager.latest_checkpoint or 'none'}; lower learning_rate, or use bfloat16 instead of float16")
        step = int(self.step_var.numpy())
        last_log = self._log_loop(writer, totals, done, step, elapsed, bar)
        if step % cfg.save_checkpoints_steps == 0 or step >= target:
          manager.save(checkpoint_number=step)
        if cfg.eval_every_steps and step % cfg.eval_every_steps == 0 and step < target:
          self.evaluate(step=step, writer=writer)
        if after_loop is not None:
          after_loop(step)
        if stop["signal"] is not None:
          if manager.latest_checkpoint is None or not manager.latest_checkpoint.endswith(f"-{step}"):
            manager.save(checkpoint_number=step)
          self.log_fn(f"stopped by signal {stop['signal']} at step {step}; checkpoint saved, rerun the same "
                      "command to resume")
          status = "interrupted"
          break
    finally:
      for sig, handler in previous.items():
        signal.signal(sig, handler)
      if bar is not None:
        bar.close()
      writer.flush()
      if not self.chief:
        shutil.rmtree(os.path.join(cfg.model_dir, ".worker_tmp"), ignore_errors=True)
    return LoopResult(step, status, last_log)

  def _loop_length(self, step: int, target: int) -> int:
    cfg = self.cfg
    n = min(cfg.iterations_per_loop, target - step)
    boundaries = [cfg.save_checkpoints_steps, cfg.eval_every_steps, cfg.log_every_steps]
    for every in boundaries:
      if every:
        n = min(n, every - step % every)
    return max(1, n)

  def _progress_bar(self, step, target):
    if not (self.progress and self.chief):
      return None
    try:
      from tqdm import tqdm
    except ImportError:
      return None
    return tqdm(total=target, initial=step, unit="step", dynamic_ncols=True, desc="pre-training")

  def _log_loop(self, writer, totals, done, step, elapsed, bar) -> dict:
    if done == 0:
      return {}
    t = {k: float(v.numpy()) for k, v in totals.items()}
    values = {k: t[k] / done for k in objective.loss_names(self.model)}
    values["grad_norm"] = t["grad_norm"] / done
    values["mlm_accuracy"] = t["mlm_correct"] / max(t["mlm_count"], 1.0)
    if "disc_count" in t:
      values["disc_accuracy"] = t["disc_correct"] / max(t["disc_count"], 1.0)
    values["learning_rate"] = float(self.schedule(step - 1)) if callable(self.schedule) else float("nan")
    seqs = done * self.cfg.train_batch_size / elapsed
    values["sequences_per_sec"] = seqs
    values["tokens_per_sec"] = seqs * self.cfg.max_seq_length
    write_scalars(writer, step, values)
    if self.fp16:
      values["loss_scale"] = float(self.loss_scale.numpy())
    if self.chief:
      eta = (self.cfg.num_train_steps - step) * elapsed / done
      line = (f"step {step}/{self.cfg.num_train_steps}  " +
              "  ".join(f"{k} {v:.4g}" for k, v in values.items() if k not in ("tokens_per_sec",)) +
              f"  eta {_fmt_time(eta)}")
      if bar is not None:
        bar.update(done)
        bar.set_postfix(loss=f"{values['total_loss']:.3f}", seq_s=f"{seqs:.1f}")
        bar.write(line)
      else:
        self.log_fn(line)
    return values

  # -- evaluation ------------------------------------------------------------------------------------------

  def _build_eval_fn(self):
    strategy = self.strategy
    seed = self.cfg.seed + EVAL_SEED_OFFSET

    def replica_eval(features, batch_index):
      ctx, replica_id = self._replica_context()
      n = ctx.num_replicas_in_sync
      dens = self.model.local_denominators(features)
      if n > 1:
        dens = ctx.all_reduce(tf.distribute.ReduceOp.SUM, dens)
      row_offset = replica_id * tf.shape(features["input_ids"])[0]
      out = self.model.forward(features, seed, batch_index, training=False, row_offset=row_offset,
                               denominators=dens)
      return evaluation.eval_sums(out)

    @tf.function
    def eval_step(iterator, batch_index):
      per_replica = strategy.run(replica_eval, (next(iterator), batch_index))
      return {k: strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None) for k, v in per_replica.items()}

    self._eval_fn = eval_step

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
      self._build_eval_fn()
    step = int(self.step_var.numpy()) if step is None else step
    iterator = self._distributed_iterator(heldout_patterns(cfg), cfg.eval_batch_size, cfg.seed + 1)
    sums = None
    for i in range(num_steps or cfg.num_eval_steps):
      batch = {k: v.numpy() for k, v in self._eval_fn(iterator, tf.constant(i, tf.int32)).items()}
      sums = batch if sums is None else {k: sums[k] + batch[k] for k in sums}
    metrics = evaluation.finalize(sums)
    if self.chief:
      path = evaluation.write_results(cfg.results_txt, metrics, step)
      self.log_fn(f"eval at step {step}: " + "  ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items()))
                  + f"  (written to {path})")
      if writer is not None:
        write_scalars(writer, step, metrics, prefix="eval/")
    return metrics


def _scalar_metadata() -> bytes:
  from tensorflow.core.framework import summary_pb2
  md = summary_pb2.SummaryMetadata()
  md.plugin_data.plugin_name = "scalars"  # what tensorboard's scalar dashboard reads
  return md.SerializeToString()


def write_scalars(writer, step: int, values: dict, prefix: str = ""):
  """TensorBoard scalars without importing tensorboard (``tf.summary.scalar`` needs the package)."""
  metadata = _scalar_metadata()
  with writer.as_default(step=step):
    for k, v in values.items():
      tf.summary.write(prefix + k, tf.constant(float(v), tf.float32), metadata=metadata)


def _main_thread() -> bool:
  import threading
  return threading.current_thread() is threading.main_thread()


def _fmt_time(seconds: float) -> str:
  if not math.isfinite(seconds):
    return "?"
  seconds = int(seconds)
  h, rem = divmod(seconds, 3600)
  return f"{h}h{rem // 60:02d}m" if h else f"{rem // 60}m{rem % 60:02d}s"


def run(cfg: PretrainingConfig, log_fn=print, progress: bool = True, max_steps=None):
  """What ``run_pretraining.py`` does: train (resuming) or evaluate, per the reference's do_train/do_eval."""
  if cfg.do_train == cfg.do_eval:
    raise PretrainingError("exactly one of do_train and do_eval must be true (as the reference); to evaluate "
                           "while training set eval_every_steps")
  trainer = Trainer(cfg, log_fn=log_fn, progress=progress)
  if cfg.do_train:
    return trainer.train(max_steps=max_steps)
  return trainer.evaluate(restore=True)
