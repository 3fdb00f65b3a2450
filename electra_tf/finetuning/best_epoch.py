"""Keeping the best epoch's weights (``keep_best_model``): the validation score after each epoch, the weights
of the best one, and early stopping after ``early_stopping_patience`` evaluations without improvement.

The score is the task's main metric on the validation split carved from training (``primary_metric``), never
dev. The best weights are also written beside the trial's resumable checkpoint (by the chief of a multi-worker
job; every worker keeps them in memory and reads them back), so a trial stopped by a signal resumes with the
best epoch it had found.
"""

import json
import os
import typing

import numpy as np

from electra_tf import fileio
from electra_tf.runtime.atomic_files import atomic_write

# A task's metric that decides, where its scorer reports several: the first one it reports otherwise.
PREFERRED_METRICS = ("f1", "micro_f1", "accuracy", "mcc", "pearson")


def primary_metric(task_results: typing.Mapping[str, float]) -> str:
  for name in PREFERRED_METRICS:
    if name in task_results:
      return name
  return next(k for k in task_results if k != "loss")


def score_of(results: typing.Mapping[str, typing.Mapping[str, float]]) -> float:
  """The mean over tasks of each task's ``primary_metric`` (higher is better)."""
  values = [float(r[primary_metric(r)]) for r in results.values()]
  return sum(values) / len(values)


class BestEpoch:
  """The best validation score of a trial so far, its epoch and a copy of its weights."""

  def __init__(self, model, patience: int = 0, state_dir: typing.Optional[str] = None, writes: bool = True):
    self.model, self.patience, self.state_dir, self.writes = model, patience, state_dir, writes
    self.score = self.epoch = None
    self.weights = None
    self.since_best = 0
    self.history = []  # [(epoch, score)]

  def consider(self, epoch: float, results: dict) -> bool:
    """Records ``results`` after ``epoch``; True when it is the best so far (its weights are kept)."""
    score = score_of(results)
    self.history.append((float(epoch), score))
    if self.score is None or score > self.score:
      self.score, self.epoch, self.since_best = score, float(epoch), 0
      self.weights = [np.array(v.numpy()) for v in self.model.weights]
      self._save()
      return True
    self.since_best += 1
    self._save(weights=False)
    return False

  def should_stop(self) -> bool:
    return bool(self.patience) and self.since_best >= self.patience

  def restore(self):
    """Puts the best epoch's weights back into the model."""
    if self.weights is not None:
      for variable, value in zip(self.model.weights, self.weights):
        variable.assign(value)

  def summary(self) -> dict:
    return {"best_epoch": self.epoch, "best_validation": self.score,
            "validation_curve": [[e, s] for e, s in self.history]}

  # ---- resumable state ----------------------------------------------------------------------------------

  def _paths(self):
    return os.path.join(self.state_dir, "best_epoch.json"), os.path.join(self.state_dir, "best_epoch.npz")

  def _save(self, weights: bool = True):
    if not self.state_dir or not self.writes:
      return
    meta, arrays = self._paths()
    fileio.makedirs(self.state_dir)
    if weights:
      with fileio.open_file(arrays + ".tmp", "wb") as f:
        np.savez(f, *self.weights)
      fileio.rename(arrays + ".tmp", arrays)
    state = {"score": self.score, "epoch": self.epoch, "since_best": self.since_best, "history": self.history}
    atomic_write(meta, json.dumps(state).encode("utf-8"))

  def load(self):
    """The state a stopped trial saved, if any."""
    if not self.state_dir:
      return
    meta, arrays = self._paths()
    if not (fileio.isfile(meta) and fileio.isfile(arrays)):
      return
    with fileio.open_file(meta) as f:
      state = json.load(f)
    with fileio.open_file(arrays, "rb") as f:
      npz = np.load(f)
      self.weights = [npz[f"arr_{i}"] for i in range(len(npz.files))]
    self.score, self.epoch, self.since_best = state["score"], state["epoch"], state["since_best"]
    self.history = [tuple(h) for h in state["history"]]
