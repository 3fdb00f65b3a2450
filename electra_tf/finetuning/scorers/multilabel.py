"""Multi-label classification: micro-averaged F1 over every (example, label) decision, and exact match (the
share of examples whose whole predicted label set is right), x100."""

import numpy as np

from electra_tf.finetuning.scorers.base import Scorer


class MultiLabelScorer(Scorer):
  """Reads ``predictions`` and ``targets`` ([N, n_labels] of 0/1)."""

  def __init__(self):
    super().__init__()
    self._targets, self._preds = [], []

  def update(self, outputs):
    super().update(outputs)
    self._targets.append(np.asarray(outputs["targets"]) > 0.5)
    self._preds.append(np.asarray(outputs["predictions"]) > 0.5)

  def _get_results(self):
    gold, pred = np.concatenate(self._targets), np.concatenate(self._preds)
    true_positive = float(np.sum(gold & pred))
    n_pred, n_gold = float(np.sum(pred)), float(np.sum(gold))
    precision = true_positive / n_pred if n_pred else 0.0
    recall = true_positive / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    exact = float(np.mean(np.all(gold == pred, axis=1)))
    return [("micro_f1", 100.0 * f1), ("exact_match", 100.0 * exact), ("loss", self.get_loss())]
