"""The scorer interface: ``update`` with each batch's per-example outputs, then ``get_results``."""

import collections

import numpy as np


class Scorer:
  """Accumulates per-example outputs (numpy arrays, first axis = example) and reports metrics."""

  def __init__(self):
    self._updated = False
    self._total_loss = 0.0
    self._count = 0

  def update(self, outputs: dict):
    self._updated = True
    self._total_loss += float(np.sum(outputs["loss"]))
    self._count += len(outputs["loss"])

  def get_loss(self) -> float:
    return self._total_loss / max(1, self._count)

  def get_results(self) -> "collections.OrderedDict[str, float]":
    if not self._updated:
      raise ValueError(f"{type(self).__name__}: no predictions to score")
    return collections.OrderedDict((k, float(v)) for k, v in self._get_results())

  def _get_results(self):
    raise NotImplementedError
