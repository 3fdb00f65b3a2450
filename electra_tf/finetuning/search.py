"""``--search``: the fine-tuning setting chosen on a validation split carved from training, then the reported
trials trained with it.

Every grid point (peak LR x epochs) is one fine-tuning trial per search seed that trains on the training data
less the validation split (``validation_size``, carved once with ``validation_seed``) and scores that split,
never dev. ``selection.select`` picks the best median (ties: the lower LR, then fewer epochs) and, while the
best is the grid's longest run at its LR, doubles its epochs up to ``search_max_epochs``. The choice, every grid
point's scores and the chosen LR's curve over epochs are printed and written to
``results/<task>_search.json``; then the run's ``num_trials`` trials train on the whole training data with the
chosen setting and are scored on dev, as a run without ``--search`` would be.

Grid points already scored (their results files under ``results/search/``) are read back, not rerun: a
search stopped by a signal resumes where it was.
"""

import dataclasses
import json
import os
import typing

from electra_tf import fileio
from electra_tf.errors import FinetuningError, HParamError
from electra_tf.finetuning import result_files, selection
from electra_tf.finetuning.base import log
from electra_tf.finetuning.best_epoch import primary_metric, score_of
from electra_tf.finetuning.run import FinetuningRun
from electra_tf.finetuning.trainer_cache import TrainerCache


@dataclasses.dataclass
class SearchSpace:
  """The grid: peak learning rates x epochs, scored with ``seeds`` seeds; epochs doubled up to ``max_epochs``
  while the longest run wins."""
  learning_rates: typing.Sequence[float] = (1e-4, 3e-4, 1e-3)
  epochs: typing.Sequence[float] = (2.0, 3.0, 5.0)
  seeds: int = 1
  max_epochs: float = 20.0

  def settings(self) -> typing.List[selection.Setting]:
    if not self.learning_rates or not self.epochs or self.seeds < 1:
      raise HParamError("the search grid needs at least one learning rate, one epoch count and one seed")
    return selection.grid(self.learning_rates, self.epochs)


def parse_numbers(text: str, what: str) -> typing.List[float]:
  """``"1e-4,3e-4"`` -> [0.0001, 0.0003]; one HParamError line for anything else."""
  try:
    values = [float(v) for v in str(text).split(",") if v.strip()]
  except ValueError:
    raise HParamError(f"{what} must be comma-separated numbers, got {text!r}") from None
  if not values or any(v <= 0 for v in values):
    raise HParamError(f"{what} must be positive numbers, got {text!r}")
  return values


class Search:
  """The grid search of one fine-tuning config (its single task)."""

  def __init__(self, config, space: SearchSpace, progress: bool = False):
    if len(config.task_names) != 1:
      raise HParamError("--search chooses the setting of one task; give one task")
    self.config, self.space, self.progress = config, space, progress
    self.task = config.task_names[0]
    self.trainers = TrainerCache(size=1)
    self.search_dir = os.path.join(config.results_dir, "search")

  def grid_config(self, setting: selection.Setting, seed: int):
    return dataclasses.replace(self.config, **setting.hparams(), seed=seed, num_trials=1, evaluate_on="validation",
                               keep_best_model=False, early_stopping_patience=0, keep_all_models=False,
                               write_test_outputs=False, eval_every_epoch=False, baselines=False, do_eval=True)

  def score(self, setting: selection.Setting, seed: int) -> float:
    key = f"{self.task}_{setting.key()}_seed{seed}"
    done = os.path.join(self.search_dir, f"{key}_results.json")
    if fileio.isfile(done):
      with fileio.open_file(done) as f:
        trials = json.load(f)["trials"]
    else:
      job = FinetuningRun(self.grid_config(setting, seed), progress=self.progress, trainers=self.trainers,
                          run_key=key, results_dir=self.search_dir)
      trials = job.run()
      if job.stopped:
        raise FinetuningError(f"the search stopped by a signal at {setting.describe()}, seed {seed}; rerun the "
                              "same command to resume it")
    results = {k: v for k, v in trials[-1].items() if isinstance(v, dict) and k != "best"}
    value = score_of(results)
    log.info("search: %s, seed %d: validation %s %.2f", setting.describe(), seed,
             primary_metric(results[self.task]), value)
    return value

  def run(self) -> dict:
    """Scores the grid and returns ``selection.select``'s record (the chosen ``Setting`` under ``chosen``)."""
    seeds = [self.config.seed + i for i in range(self.space.seeds)]
    record = selection.select(self.score, self.space.settings(), seeds, self.space.max_epochs)
    chosen = record["chosen"]
    summary = {"task": self.task, "chosen": chosen.hparams(), "chosen_key": chosen.key(),
               "validation": record["scores"], "curve": record["curve"], "converged": record["converged"],
               "seeds": record["seeds"], "validation_size": self.config.validation_size,
               "validation_seed": self.config.validation_seed}
    result_files.write_json(os.path.join(self.config.results_dir, f"{self.task}_search.json"), summary)
    print(format_search(summary), flush=True)
    return record


def format_search(summary: dict) -> str:
  curve = ", ".join(f"{e:g}: {s:.1f}" for e, s in summary["curve"])
  converged = {True: "converged", False: "a longer run scored higher", None: "longest run tried"}[summary["converged"]]
  chosen = summary["chosen"]
  return (f"search chose peak LR {chosen['learning_rate']:g} x {chosen['num_train_epochs']:g} epochs on the "
          f"validation split ({len(summary['validation'])} settings x {len(summary['seeds'])} seed(s)); validation "
          f"by epochs at that LR: {curve} ({converged})")


def search_and_finetune(config, space: SearchSpace, progress: bool = True) -> typing.List[dict]:
  """Chooses the setting (``Search``), then runs the config's trials with it (``FinetuningRun``)."""
  record = Search(config, space, progress=False).run()
  final = dataclasses.replace(config, **record["chosen"].hparams())
  job = FinetuningRun(final, progress=progress)
  trials = job.run()
  if job.stopped:
    raise FinetuningError("fine-tuning with the chosen setting stopped by a signal; rerun the same command to "
                          "resume it (the search's scores are kept)")
  return trials
