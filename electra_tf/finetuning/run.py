"""``run_finetuning(config)``: trials of train -> evaluate -> write, as the reference's ``run_finetuning``.

Per trial t (1-based; seed = ``config.seed + t - 1``): initialise the model from the seed (the first trial
builds it and its compiled steps, the next ones reset the same objects: ``Trainer.reset``), load
``init_checkpoint`` by reference names, train, save to ``finetuning_models/<tasks>_model_<t>``, score dev,
optionally write test predictions and GLUE submission files, and rewrite
``results/<tasks>_results.{txt,pkl,json}`` with every trial so far plus the median / mean / std summary.

SIGTERM / SIGINT stop the running trial with a checkpoint; rerunning the same command keeps the finished
trials and resumes that one exactly (``interrupted``).

Under ``MultiWorkerMirroredStrategy`` (``strategy: auto`` picks it from ``TF_CONFIG``) every worker trains,
evaluates and predicts every row alike (the runner's evaluator gathers the replicas' rows), and only the chief
writes: results, models, TensorBoard, test outputs and the resume state.
"""

import functools
import itertools
import os
import random
import re
import time
import typing

from electra_tf import fileio, runtime
from electra_tf.convert import infer_architecture, load_pretrained_weights, write_tf1
from electra_tf.errors import FinetuningError
from electra_tf.finetuning import baselines, interrupted, result_files, user_task
from electra_tf.finetuning.best_epoch import BestEpoch
from electra_tf.finetuning.base import DataError, format_feature, log, stack_features
from electra_tf.finetuning.tasks import get_tasks
from electra_tf.finetuning.inputs import num_train_steps
from electra_tf.finetuning.trainer import Trainer
from electra_tf.finetuning.trainer_cache import TrainerCache
from electra_tf.hparams import HParamError
from electra_tf.tokenization import load_tokenizer

NO_CHECKPOINT = ("", "none", "None", "random")
_print = functools.partial(print, flush=True)


class FinetuningData:
  """Featurizes each split once and keeps the stacked arrays for every trial."""

  def __init__(self, config, tasks):
    self.config, self.tasks = config, tasks
    specs = {}
    for task in tasks:
      for spec in task.feature_specs():
        specs.setdefault(spec.name, spec)
    self.specs = list(specs.values())
    self._cache = {}

  def train_arrays(self) -> dict:
    if "train" not in self._cache:
      features = []
      for task in self.tasks:
        task_features = task.featurize(task.training_examples(), True)
        log.info("%s: %d training features", task.name, len(task_features))
        self._log_example(task, "train", task_features)
        features.extend(task_features)
      random.Random(self.config.seed).shuffle(features)  # the reference shuffles before writing
      self._cache["train"] = stack_features(features, self.specs, len(self.tasks),
                                            self.config.train_batch_size)
    return self._cache["train"]

  def eval_arrays(self, task, split: str, batch_size: int) -> dict:
    key = (task.name, split)
    if key not in self._cache:
      features = task.eval_features(split)
      self._log_example(task, split, features)
      self._cache[key] = stack_features(features, self.specs, len(self.tasks), batch_size)
    return self._cache[key]

  def _log_example(self, task, split: str, features: list):
    """``log_examples``: the first featurized example of a split, as the reference logs it."""
    if self.config.log_examples and features:
      log.info("%s %s, first of %d features:\n%s", task.name, split, len(features),
               format_feature(features[0], task.tokenizer))


def resolve_init_checkpoint(config) -> typing.Optional[str]:
  path = config.init_checkpoint
  if path in NO_CHECKPOINT or path is None:
    return None
  if not fileio.exists(path) and not fileio.exists(path + ".index"):
    raise DataError(path, None, "init checkpoint not found (pass --init-checkpoint PATH to a pre-trained "
                    "model, or --init-checkpoint none to fine-tune from random weights)")
  return path


EMBEDDING_LAYER_PREFIX = "electra/embeddings/"


def load_encoder(model, init_checkpoint: str, reinit_embeddings: bool = False):
  """Loads ``init_checkpoint`` into ``model`` (weights it lacks, such as new heads, keep their initialisation;
  a missing encoder weight is an error). With ``reinit_embeddings`` the
  embedding layer keeps the values it was initialised with: after a very short pre-training run the learned
  embedding layer can cost fine-tuning accuracy (docs/short_runs.md#the-short-run-recipe)."""
  fresh = {}
  if reinit_embeddings:
    fresh = {n: (v, v.numpy()) for n, v in model.reference_variables().items()
             if n.startswith(EMBEDDING_LAYER_PREFIX)}
  report = load_pretrained_weights(init_checkpoint, model)
  log.info(report.summary())
  encoder_missing = [n for n in report.missing if n.startswith("electra/")]
  if encoder_missing:
    raise DataError(init_checkpoint, None, f"checkpoint lacks {len(encoder_missing)} encoder weights "
                    f"(e.g. {encoder_missing[0]}); is it the right model size?")
  for variable, value in fresh.values():
    variable.assign(value)
  if fresh:
    log.info("reinit_embeddings: %d embedding-layer weights kept at their initialisation", len(fresh))


class FinetuningRun:
  """One invocation: tasks, data, strategy and the trial loop."""

  def __init__(self, config, tokenizer=None, progress: bool = True, trainers: typing.Optional[TrainerCache] = None,
               run_key: typing.Optional[str] = None, results_dir: typing.Optional[str] = None):
    self.config, self.trainers = config, trainers
    if config.num_trials == 0:
      raise HParamError("num_trials is 0: nothing to run")
    self.strategy = runtime.select_strategy(config)  # first: multi-worker precedes the TF runtime's start
    self.chief = runtime.is_chief(self.strategy)  # the one process that writes
    if self.chief:  # the one writer (before training, not after)
      runtime.check_writable(config.model_dir, "model directory", directory=True)
    self.tokenizer = tokenizer or load_tokenizer(config.vocab_file, config.do_lower_case)
    self.tasks = get_tasks(config, self.tokenizer)
    self.data = FinetuningData(config, self.tasks)
    self.tasks_key = run_key or "_".join(config.task_names)
    self.eval_split = self._eval_split()
    self.results_dir = results_dir or config.results_dir
    self.progress = progress
    self.trial_results = []
    self.init_checkpoint = resolve_init_checkpoint(config)
    self.interrupted = interrupted.InterruptedRun(config, self.tasks_key, writes=self.chief)
    self._trainer = None

  def _eval_split(self) -> str:
    """What the run scores: dev, or the validation split carved from training (``evaluate_on``, or a task from
    the user's files without a dev file)."""
    cfg = self.config
    qa = [t.name for t in self.tasks if t.head_type == "qa"]
    if qa and any(t.carves_validation for t in self.tasks):
      raise FinetuningError(f"{qa[0]} is a QA task: keep_best_model and evaluate_on validation carve a validation "
                            "split from the training file, which QA does not support; give a --dev-file instead")
    if cfg.evaluate_on == "validation":
      return "validation"
    if cfg.train_file and not cfg.dev_file and cfg.do_eval:
      log.warning("no dev file: scoring the validation split carved from the training file instead "
                  "(validation_size %g)", cfg.validation_size)
      cfg.evaluate_on = "validation"
      return "validation"
    return "dev"

  def trainer_for(self, seed: int) -> Trainer:
    """The trial's trainer: built for the first trial (or taken from ``trainers``, the cache of earlier runs),
    ``reset`` to ``seed`` for the next ones, so the run traces and compiles its steps once (a trial starts as a
    new ``Trainer`` would)."""
    if self._trainer is None and self.trainers is not None:
      self._trainer = self.trainers.get(self.config, self.tasks, self.strategy, seed)
    elif self._trainer is None:
      self._trainer = Trainer(self.config, self.tasks, self.strategy, seed)
    else:
      self._trainer.reset(seed)
    return self._trainer

  def say(self, text: str):
    """Output for the user, from the chief only."""
    if self.chief:
      _print(text, end="" if not text or text.endswith("\n") else "\n")

  def model_dir(self, trial: int) -> str:
    return os.path.join(self.config.model_dir, "finetuning_models", f"{self.tasks_key}_model_{trial}")

  def qa_dir(self) -> str:
    return os.path.join(self.results_dir, f"{self.tasks_key}_qa")

  # ---- evaluation ---------------------------------------------------------------------------------------

  def evaluate(self, trainer: Trainer, split: typing.Optional[str] = None) -> dict:
    split = split or self.eval_split
    results = {}
    bs = self.config.eval_batch_size
    for task in self.tasks:
      outs = trainer.predict(self.data.eval_arrays(task, split, bs), bs)[task.name]
      scorer = task.get_scorer(split, output_dir=self.qa_dir() if self.chief else None)  # only QA scorers write
      scorer.update(outs)
      results[task.name] = scorer.get_results()
      log.info("%s %s: %s", task.name, split, " - ".join(f"{k}: {v:.2f}" for k, v in results[task.name].items()))
    return results

  def write_test_outputs(self, trainer: Trainer, trial: int):
    """Test predictions (``test_predictions/<task>_<split>_<trial>_predictions.pkl``: eid -> logits, or the
    prediction for STS; SQuAD/MRQA: ``.json`` id -> text) and GLUE-server files
    (``glue_submission/<tasks>_<trial>/<SST-2|MNLI-m|...>.tsv``)."""
    bs = self.config.predict_batch_size
    pred_dir = os.path.join(self.config.model_dir, "test_predictions")
    glue_dir = os.path.join(self.config.model_dir, "glue_submission", f"{self.tasks_key}_{trial}")
    for task in self.tasks:
      for split in task.test_output_splits():
        outs = trainer.predict(self.data.eval_arrays(task, split, bs), bs)[task.name]
        if not self.chief:  # every worker predicts (the evaluator's collectives), the chief writes
          continue
        files = task.test_outputs(split, outs)
        stem = os.path.join(pred_dir, f"{task.name}_{split}_{trial}_predictions")
        write = result_files.write_json if files.predictions_format == "json" else result_files.write_pickle
        write(f"{stem}.{files.predictions_format}", files.predictions)
        if files.submission is not None:
          name, eids, labels = files.submission
          result_files.write_glue_submission(os.path.join(glue_dir, f"{name}.tsv"), eids, labels)

  # ---- trials -------------------------------------------------------------------------------------------

  def run_trial(self, trial: int, resume: bool = False) -> typing.Optional[dict]:
    """Trains (resuming the interrupted trial's checkpoint with ``resume``), saves, evaluates and writes
    one trial; None when a stop signal interrupted it (its checkpoint is saved)."""
    cfg = self.config
    seed = cfg.seed + trial - 1
    trainer = self.trainer_for(seed)
    if self.init_checkpoint:
      load_encoder(trainer.model, self.init_checkpoint, cfg.reinit_embeddings)
    results = {"trial": trial, "seed": seed}
    model_dir = self.model_dir(trial)
    if cfg.do_train:
      arrays = self.data.train_arrays()
      n_padded = len(arrays["task_id"])
      steps = num_train_steps(n_padded, cfg.train_batch_size, cfg.num_train_epochs)
      if steps < 1:
        raise HParamError(f"{n_padded} training examples give 0 steps at batch size {cfg.train_batch_size}")
      per_epoch = max(1, n_padded // cfg.train_batch_size)
      best = None
      if cfg.keep_best_model:
        best = BestEpoch(trainer.model, cfg.early_stopping_patience, self.interrupted.trial_dir(trial), self.chief)
        if resume:
          best.load()
      on_epoch = self._epoch_callback(trainer, best)
      if self.chief and fileio.isdir(model_dir) and not resume:
        fileio.rmtree(model_dir)  # the reference wipes the trial's model directory
      on_checkpoint = lambda step: self.save(trainer, model_dir, step, final=False)
      stats = trainer.train(arrays, steps, per_epoch, on_epoch, os.path.join(model_dir, "tensorboard"),
                            self.progress, on_checkpoint, resume_dir=self.interrupted.trial_dir(trial),
                            should_stop=best.should_stop if best is not None else None, where=f" in trial {trial}")
      if stats["status"] == "interrupted":  # the runner has said so
        self.interrupted.record(trial, self.trial_results)
        return None
      log.info("trained %d steps, %.1f examples/s", stats["global_step"], stats["examples_per_second"])
      if best is not None:
        if not best.should_stop():  # the last epoch, unless early stopping ended training at an evaluated one
          best.consider(stats["global_step"] / per_epoch, self.evaluate(trainer, "validation"))
        best.restore()
        results["best"] = best.summary()
        log.info("kept the weights of epoch %g (validation %.2f)", best.epoch, best.score)
      if self.chief:
        fileio.rmtree(self.interrupted.trial_dir(trial), ignore_errors=True)
      self.save(trainer, model_dir, stats["global_step"])
    if cfg.do_eval:
      results.update(self.evaluate(trainer))
    if cfg.write_test_outputs and trial <= cfg.n_writes_test:
      self.write_test_outputs(trainer, trial)
    if self.chief and not cfg.keep_all_models and fileio.isdir(model_dir):
      fileio.rmtree(model_dir)
    return results

  def _epoch_callback(self, trainer: Trainer, best: typing.Optional[BestEpoch]):
    """What runs after each epoch but the last: the validation score for ``keep_best_model``, dev for
    ``eval_every_epoch``; None when neither."""
    cfg = self.config
    if best is None and not (cfg.do_eval and cfg.eval_every_epoch):
      return None

    def on_epoch(epoch):
      results = {}
      if best is not None:
        validation = self.evaluate(trainer, "validation")
        best.consider(epoch, validation)
        results.update({f"{task}_validation": values for task, values in validation.items()})
      if cfg.do_eval and cfg.eval_every_epoch:
        results.update(self.evaluate(trainer))
      return results
    return on_epoch

  def save(self, trainer: Trainer, model_dir: str, step: int, final: bool = True):
    """A reference-layout TF1 checkpoint (encoder + ``task_specific`` heads, no optimizer slots), written by the
    chief. Each save replaces the previous one (resuming uses the trial's own checkpoint under
    ``finetuning_resume``)."""
    if not self.chief:
      return
    arrays = {n: v.numpy() for n, v in trainer.model.reference_variables().items()}
    vocab = self.config.vocab_file if fileio.isfile(self.config.vocab_file) else None
    tb = os.path.join(model_dir, "tensorboard")
    keep = os.path.join(os.path.dirname(model_dir), f".tb_{os.path.basename(model_dir)}")
    if fileio.isdir(tb):  # write_tf1 replaces the directory; keep the event files
      fileio.move(tb, keep)
    # The layout holds no head count or activation: the encoder's config goes beside it.
    architecture = infer_architecture({n: a.shape for n, a in arrays.items()}).with_stated(
        trainer.model.encoder.config)
    write_tf1(model_dir, arrays, step, vocab, overwrite=True, architecture=architecture)
    for task in self.tasks:
      if hasattr(task, "spec"):  # a task from the user's files: how to read new files, its labels
        user_task.write_spec(model_dir, task.spec, self.config.to_dict())
    if fileio.isdir(keep):
      fileio.move(keep, tb)
    if not final:
      log.info("saved %s at step %d (save_checkpoints_steps)", model_dir, step)

  def run(self) -> typing.List[dict]:
    cfg = self.config
    state = self.interrupted.load()
    first = 1
    if state is not None:
      self.trial_results, first = state["results"], state["trial"]
      self.say(f"resuming trial {first} ({len(self.trial_results)} finished trial(s) kept)")
    trials = itertools.count(first) if cfg.num_trials < 0 else range(first, cfg.num_trials + 1)
    summary = {}
    if cfg.do_eval:  # a bad row of the scored split stops the run before training, not after it
      for task in self.tasks:
        if hasattr(task, "spec"):
          task.split_examples(self.eval_split)
    self.baselines = self.fit_baselines() if cfg.do_eval else {}
    self.stopped = False
    for trial in trials:
      start = time.time()
      results = self.run_trial(trial, resume=state is not None and trial == first)
      if results is None:
        self.stopped = True
        break
      results["time"] = time.time() - start
      self.trial_results.append(results)
      if cfg.do_eval:
        summary = result_files.summarize(self.trial_results)
        if self.chief:
          result_files.write_results(self.results_dir, self.tasks_key, self.trial_results, self.baselines)
        self.say(result_files.format_results([results]))
        if len(self.trial_results) > 1:
          self.say(result_files.format_summary(summary))
    for name, found in self.baselines.items():
      metric = summary.get(name, {}).get(found["metric"])
      self.say(baselines.format_baselines(name, found, metric["median"] if metric else None,
                                          metric["n"] if metric else 0))
    if not self.stopped:
      self.interrupted.clear()
      if cfg.do_train:
        self.remove_earlier_models()
    self.summary = summary
    return self.trial_results

  def remove_earlier_models(self):
    """Once a run of a task from the user's files has finished its trials, the models an earlier run of it left
    beyond them go (the reference's tasks keep them, as the reference does): no trial directory that
    ``electra-predict --trial`` reads outlives the results that describe it."""
    parent = os.path.join(self.config.model_dir, "finetuning_models")
    if (not self.chief or self.config.num_trials < 0 or not fileio.isdir(parent)
        or not any(hasattr(task, "spec") for task in self.tasks)):
      return
    pattern = re.compile(re.escape(self.tasks_key) + r"_model_(\d+)")
    stale = sorted(name for name in fileio.listdir(parent)
                   if (m := pattern.fullmatch(name)) and int(m.group(1)) > self.config.num_trials)
    for name in stale:
      fileio.rmtree(os.path.join(parent, name))
    if stale:
      log.info("removed %d model(s) of an earlier run of %s beyond trial %d: %s", len(stale), self.tasks_key,
               self.config.num_trials, ", ".join(stale))

  def fit_baselines(self) -> dict:
    """{task: baselines} for the tasks from the user's files that have them (``baselines.task_baselines``)."""
    if not self.config.baselines:
      return {}
    found = {}
    for task in self.tasks:
      if hasattr(task, "spec"):
        result = baselines.task_baselines(task, self.eval_split)
        if result is not None:
          found[task.name] = result
    return found


def run_finetuning(config, tokenizer=None, progress: bool = True,
                   trainers: typing.Optional[TrainerCache] = None) -> typing.List[dict]:
  """Runs every trial of ``config`` and returns the per-trial results (see module docstring). ``trainers``: a
  ``TrainerCache`` to take the trainer from and leave it in, for a process that runs many fine-tunings."""
  return FinetuningRun(config, tokenizer, progress, trainers).run()


def run_every_trial(config, what: str, progress: bool = False,
                    trainers: typing.Optional[TrainerCache] = None) -> typing.List[dict]:
  """``run_finetuning`` for a caller that needs every trial's result: a stop signal (the running trial's
  checkpoint is saved) ends the process with one line naming ``what`` stopped and saying to rerun."""
  job = FinetuningRun(config, progress=progress, trainers=trainers)
  results = job.run()
  if job.stopped:
    raise FinetuningError(f"fine-tuning {what} stopped by a signal; rerun the same command to resume it")
  return results
