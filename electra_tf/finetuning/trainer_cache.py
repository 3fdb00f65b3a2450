"""Trainers kept for the next fine-tuning runs of one process: a search's grid points, an experiment's seeds
and the main job's two runs share compiled steps instead of tracing and compiling the same ones again."""

import collections
import dataclasses
import json

import tensorflow as tf

from electra_tf.finetuning.trainer import Trainer


class TrainerCache:
  """Trainers kept for the next fine-tuning runs of one process (``FinetuningRun(..., trainers=cache)``).

  A run's trials share one trainer. An experiment that makes every grid point and seed a run of its own would
  otherwise trace and compile the same steps for each. With a cache, a run whose trainer would be built like a
  kept one (the same config but for the fields marked ``per_run`` in ``configs.FinetuningConfig``: its seed,
  init weights, peak LR and length, where data and outputs are; heads of the same tasks and sizes) takes that
  one, with its config, ``reset`` to its seed: the weights, optimizer state, dropout masks and data order of a
  new trainer, its own peak LR and length (``Trainer.set_schedule``), the same results bit for bit. Keeps the
  ``size`` most recently used.
  """

  def __init__(self, size: int = 4):
    self.size = size
    self._kept = collections.OrderedDict()
    self.built = self.reused = 0

  def key(self, config, tasks) -> str:
    per_run = {f.name for f in dataclasses.fields(config) if f.metadata.get("per_run")}
    fields = {k: v for k, v in config.to_dict().items() if k not in per_run}
    heads = [(t.name, t.head_type, t.num_outputs) for t in tasks]
    return json.dumps([fields, heads], sort_keys=True, default=str)

  def get(self, config, tasks, strategy: tf.distribute.Strategy, seed: int) -> Trainer:
    """A kept trainer reset for this run, else a new one (then kept)."""
    key = self.key(config, tasks)
    trainer = self._kept.pop(key, None)
    if trainer is None:
      trainer = Trainer(config, tasks, strategy, seed)
      self.built += 1
    else:
      trainer.reset(seed, config, tasks)
      self.reused += 1
    self._kept[key] = trainer
    while len(self._kept) > self.size:
      self._kept.popitem(last=False)
    return trainer
