"""The pre-training job: the ELECTRA objective as a task of the shared runner (``runtime.runner``).

What is pre-training's own: the networks, the objective (masking and sampling keyed by (seed, step, global
row), so there is no generator state to save and a resumed run replays what an uninterrupted one does; loss
normalisers from *global* counts: one all-reduce of three scalars per step), the input stream, the logged
metrics, the collapse guard, the hparams beside the first checkpoint and the held-out evaluation. Strategy,
precision, loss scaling, the optimizer, dropout seeds, checkpoints, summaries, progress, signals and the NaN
stop are the runner's, shared with fine-tuning.
"""

import os
import typing

import tensorflow as tf

from electra_tf import fileio, runtime
from electra_tf.configs import PretrainingConfig, pretraining_summary
from electra_tf.convert.readers import read_pretraining_config
from electra_tf.errors import ConversionError, HParamError, PretrainingError
from electra_tf.pretraining import inputs
from electra_tf.pretraining import evaluation, init_checkpoint, masking, objective
from electra_tf.pretraining.collapse import CollapseGuard
from electra_tf.runtime import checkpointing, runner as runner_lib, step as train_step


# What a resumed run must share with the run it continues: the networks and the stream of global batches.
RESUME_FIELDS = ("train_batch_size", "max_seq_length")


def check_resumable(cfg: PretrainingConfig):
  """Refuses in one line to resume the run in ``cfg.model_dir`` with other networks (any model hparam: layers,
  widths, attention heads, activation, generator) or another input stream (batch size, sequence length) than
  its saved hparams (``pretraining_config.json``) give; a run without them is left to the checkpoint."""
  path = os.path.join(cfg.model_dir, cfg.SAVED_CONFIG_FILE)
  if not fileio.isfile(path):
    return
  try:
    started = read_pretraining_config(cfg.model_dir)
    towers = (("", started.discriminator_config(), cfg.discriminator_config()),
              ("generator ", started.generator_config(), cfg.generator_config()))
  except (ConversionError, HParamError):
    return  # unreadable: the checkpoint's own restore decides
  changed = [(k, getattr(started, k), getattr(cfg, k)) for k in RESUME_FIELDS if getattr(started, k) != getattr(cfg, k)]
  for which, before, now in towers:
    changed += [(which + k, v, now.to_dict()[k]) for k, v in before.to_dict().items() if now.to_dict()[k] != v]
  if changed:
    what = ", ".join(f"{k} {old} (now {new})" for k, old, new in changed[:4])
    raise PretrainingError(f"{cfg.model_dir} holds a run started with {what} ({path}); resume it with the hparams "
                           "it was started with, or start in another model directory")


class Trainer(runner_lib.Task):
  """Builds everything for ``cfg`` under a strategy; ``train()`` runs or resumes, ``evaluate()`` evaluates.

  ``log_fn``: where the job's lines go (default ``print``). ``progress``: show a tqdm bar.
  ``check_inputs`` / ``special``: benchmarks feed synthetic batches with BERT's ids and no vocab file.
  """
  error_type, loss_key = PretrainingError, "total_loss"

  def __init__(self, cfg: PretrainingConfig, strategy: tf.distribute.Strategy = None, log_fn=print,
               progress: bool = True, check_inputs: bool = True, special: masking.SpecialIds = None):
    self.cfg = cfg
    self.strategy = strategy or runtime.select_strategy(cfg)  # first: multi-worker precedes TF runtime start
    if check_inputs:
      inputs.check_data(cfg)
    if cfg.init_checkpoint and cfg.do_train and tf.train.latest_checkpoint(cfg.model_dir) is None:
      init_checkpoint.check_exists(cfg.init_checkpoint)  # before the networks are built (train() loads it)
    if runtime.is_chief(self.strategy):  # the one writer, before hours of training, not after
      runtime.check_writable(cfg.model_dir, "model directory", directory=True)
    special = special or masking.SpecialIds.from_vocab_file(cfg.vocab_file, cfg.vocab_size)
    runner = runner_lib.Runner(cfg, self, self.strategy, cfg.seed, log_fn=log_fn, progress=progress)
    self.num_replicas, self.accumulation = runner.replicas, runner.accumulation
    self.per_example_dropout = runner.per_example_dropout
    train_step.check_batch_split(HParamError, "eval_batch_size", cfg.eval_batch_size, self.num_replicas)
    self.model = runner.build(lambda: objective.PretrainingModel(cfg, special), cfg.seed)
    self.variables = self.model.trainable_variables
    runner.build_optimizer(cfg.learning_rate, cfg.num_train_steps, cfg.weight_decay_rate,
                           num_warmup_steps=cfg.num_warmup_steps, lr_decay_power=cfg.lr_decay_power,
                           variable_names=self.model.variable_names(), bias_correction=cfg.adam_bias_correction)
    self.loss_names = objective.loss_names(self.model)
    self.sum_keys = [k for k in objective.train_log_keys(self.model) if k not in self.loss_names and k != "grad_norm"]
    self._config_saved = False

  # -- the task: objective, logged values, checkpoint objects ----------------------------------------------

  def trainable_variables(self):
    return self.variables

  def checkpoint_objects(self) -> dict:
    return self.model.networks.checkpoint_objects()

  def value_shapes(self) -> dict:
    return {k: _value_shape(k) for k in objective.train_log_keys(self.model)}

  def prepare(self, features, ctx):
    dens = self.model.local_denominators(features)
    return ctx.all_reduce(tf.distribute.ReduceOp.SUM, dens) if ctx.num_replicas_in_sync > 1 else dens

  def forward(self, features, step, row_offset, dens, dropout_seed):
    out = self.model.forward(features, self.cfg.seed, step, training=True, row_offset=row_offset,
                             denominators=dens, dropout_seed=dropout_seed)
    return out["total_loss"], {**{k: out[k] for k in self.loss_names}, **objective.train_metric_sums(out)}

  def zeros(self) -> dict:
    return {k: tf.zeros(_value_shape(k)) for k in self.loss_names + self.sum_keys}

  def saving(self, step: int):
    """The run's hparams beside its first checkpoint (convert, fine-tuning and init_checkpoint rebuild the
    networks from them); a run that fails before its first checkpoint leaves neither."""
    if self.chief and not self._config_saved:
      runtime.atomic_write(os.path.join(self.cfg.model_dir, self.cfg.SAVED_CONFIG_FILE), self.cfg.to_json())
      self._config_saved = True

  def init_from_checkpoint(self, path: str):
    """Weights only (fresh optimizer, step 0) from any format ``convert.load_pretrained_weights`` reads; says
    what was loaded and what keeps its fresh initialisation; returns the loader's report."""
    report = init_checkpoint.load(path, self.model.networks)
    self.runner.say(init_checkpoint.summary_line(path, report, self.model.networks))
    return report

  # -- training --------------------------------------------------------------------------------------------

  def train(self, max_steps: typing.Optional[int] = None, after_loop=None) -> runner_lib.FitResult:
    """Trains to ``num_train_steps`` (or to ``max_steps`` total steps), resuming if possible.

    ``after_loop(step)``: called after every compiled loop (tests use it to deliver a signal mid-run)."""
    cfg, runner = self.cfg, self.runner
    target = min(cfg.num_train_steps, max_steps or cfg.num_train_steps)
    batches = lambda skip: inputs.global_batches(cfg, inputs.train_files(cfg), cfg.train_batch_size, cfg.seed, skip)
    latest = tf.train.latest_checkpoint(cfg.model_dir)
    if latest and checkpointing.holds_object_graph(latest):  # a run of this trainer (else restore says what it is)
      check_resumable(cfg)
    iterator, ckpt, path = runner.resume(cfg.model_dir, batches, cfg.keep_checkpoint_max)
    if path:
      unused = f" (init_checkpoint {cfg.init_checkpoint} is not used: the run resumes)" if cfg.init_checkpoint else ""
      runner.say(f"resuming from {path} at step {int(self.step_var.numpy())}{unused}")
    elif cfg.init_checkpoint:
      self.init_from_checkpoint(cfg.init_checkpoint)
    runner.say(pretraining_summary(cfg))
    guard = CollapseGuard.for_run(cfg.num_train_steps, cfg.num_warmup_steps, int(self.step_var.numpy()))

    def check_collapse(report):
      warning = guard.check(report.step, runner.training_log.last, cfg.stop_on_collapse, ckpt.latest)
      if warning:
        runner.say(warning)

    hooks = [runner_lib.Hook(check_collapse)] + ([runner_lib.Hook(lambda r: after_loop(r.step))] if after_loop else [])
    values = lambda totals, steps: objective.train_log_values(totals, steps, self.model)
    logging = runner_lib.Logging(values, cfg.train_batch_size, cfg.max_seq_length, cfg.num_train_steps,
                                 rate="sequences_per_sec", lines=True)
    try:
      return runner.fit(iterator, target, logging, ckpt, hooks, save_every=cfg.save_checkpoints_steps,
                        evaluate=lambda step: {"eval/": self.evaluate(step=step)}, eval_every=cfg.eval_every_steps,
                        intervals=[cfg.log_every_steps], logdir=os.path.join(cfg.model_dir, "train"),
                        desc="pre-training")
    except tf.errors.DataLossError as e:
      raise inputs.data_loss_error(cfg, e, ckpt.latest) from None

  # -- evaluation ------------------------------------------------------------------------------------------

  def evaluate(self, step: typing.Optional[int] = None, num_steps: typing.Optional[int] = None,
               restore: bool = False) -> dict:
    """The reference's metrics over ``num_eval_steps`` held-out batches; written under results/.

    ``restore``: load the latest checkpoint of ``model_dir`` first (``do_eval`` runs)."""
    cfg = self.cfg
    if restore and self.runner.checkpointer(cfg.model_dir).restore()[0] is None:  # the run's own restore path
      raise PretrainingError(f"no checkpoint in {cfg.model_dir} to evaluate; train first (do_train) or "
                             "pass the model name of a trained model")
    step = int(self.step_var.numpy()) if step is None else step
    return evaluation.evaluate_heldout(self.runner, self.model, cfg, step, num_steps)


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
