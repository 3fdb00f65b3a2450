"""An interrupted fine-tuning run, kept so that rerunning the same command resumes it.

When SIGTERM or SIGINT stops a trial, the trainer saves the trial's checkpoint (weights, optimizer slots,
step and input position) under ``<model_dir>/finetuning_resume/<tasks>/trial_<t>/``, and this module writes
``state.json`` beside it: the interrupted trial, the results of the trials already finished, and the hparams.
The next run of the same command (same hparams; ``num_trials`` may change) keeps those results, resumes the
trial exactly where it stopped and goes on; once every trial is done the directory is removed. Without a
``state.json`` (no interruption, or a crash) a run starts from scratch, as the reference's does. In a
multi-worker job only the chief writes or removes any of it (``writes``); every worker reads it.
"""

import json
import os
import typing

from electra_tf import fileio, runtime
from electra_tf.errors import FinetuningError

STATE_FILE = "state.json"
# Hparams a resumed run may change: they do not change what a trial computes.
FREE_HPARAMS = ("num_trials",)


def _hparams(config) -> dict:
  values = json.loads(config.to_json())
  return {k: v for k, v in values.items() if k not in FREE_HPARAMS}


class InterruptedRun:
  """The resume directory of one model_dir and task set; ``writes``: this process records and clears it."""

  def __init__(self, config, tasks_key: str, writes: bool = True):
    self.config, self.writes = config, writes
    self.directory = os.path.join(config.model_dir, "finetuning_resume", tasks_key)

  def trial_dir(self, trial: int) -> str:
    return os.path.join(self.directory, f"trial_{trial}")

  def load(self) -> typing.Optional[dict]:
    """``{"trial": t, "results": [finished trials' results]}`` of an interrupted run, or None (then any
    leftover checkpoints of a crashed run are removed)."""
    path = os.path.join(self.directory, STATE_FILE)
    if not fileio.exists(path):
      self.clear()
      return None
    try:
      with fileio.open_file(path, "r") as f:
        state = json.loads(f.read())
      trial, results, hparams = int(state["trial"]), list(state["results"]), dict(state["hparams"])
    except (ValueError, KeyError, TypeError):
      raise FinetuningError(f"{path} is not a readable resume state; delete {self.directory} to start the run "
                            "over") from None
    changed = sorted(k for k in set(hparams) | set(_hparams(self.config))
                     if hparams.get(k) != _hparams(self.config).get(k))
    if changed:
      raise FinetuningError(f"{self.directory} holds an interrupted run with other hparams ({', '.join(changed)}); "
                            f"rerun with the same hparams to resume it, or delete {self.directory} to start over")
    return {"trial": trial, "results": results}

  def record(self, trial: int, finished_results: list):
    """Marks ``trial`` as interrupted (its checkpoint is in ``trial_dir(trial)``)."""
    if not self.writes:
      return
    state = {"trial": trial, "results": finished_results, "hparams": _hparams(self.config)}
    runtime.atomic_write(os.path.join(self.directory, STATE_FILE), json.dumps(state, indent=1, default=float))

  def clear(self):
    if not self.writes:
      return
    if fileio.isdir(self.directory):
      fileio.rmtree(self.directory)
    parent = os.path.dirname(self.directory)
    if fileio.isdir(parent) and not fileio.listdir(parent):  # no other task set's run left to resume
      fileio.rmtree(parent)
