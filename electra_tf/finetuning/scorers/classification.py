"""GLUE scorers: accuracy, Matthews correlation x100 (CoLA), Pearson/Spearman x100 (STS-B)."""

import numpy as np
import scipy.stats
import sklearn.metrics

from electra_tf.finetuning.scorers.base import Scorer


class SentenceLevelScorer(Scorer):
  """Keeps true labels and predictions (and eids) of every example."""

  def __init__(self):
    super().__init__()
    self._true_labels, self._preds, self._eids = [], [], []

  def update(self, outputs):
    super().update(outputs)
    self._true_labels.extend(np.asarray(outputs["targets"]).tolist())
    self._preds.extend(np.asarray(outputs["predictions"]).tolist())
    self._eids.extend(np.asarray(outputs["eid"]).tolist())


class AccuracyScorer(SentenceLevelScorer):
  def _get_results(self):
    correct = sum(int(t == p) for t, p in zip(self._true_labels, self._preds))
    return [("accuracy", 100.0 * correct / len(self._preds)), ("loss", self.get_loss())]


class MCCScorer(SentenceLevelScorer):
  def _get_results(self):
    return [("mcc", 100.0 * sklearn.metrics.matthews_corrcoef(self._true_labels, self._preds)),
            ("loss", self.get_loss())]


class RegressionScorer(SentenceLevelScorer):
  """Targets and predictions are on the normalised scale (label / 5), as the reference scores them; ``scale``
  (the width of a user task's label range) puts the mean squared error back on the labels' scale."""

  def __init__(self, scale: float = 1.0):
    super().__init__()
    self.scale = scale

  def _get_results(self):
    targets, preds = np.asarray(self._true_labels, np.float64), np.asarray(self._preds, np.float64)
    # Undefined (NaN) for fewer than two rows, as for constant targets or predictions.
    correlation = lambda fn: 100.0 * fn(targets, preds)[0] if len(targets) > 1 else float("nan")
    return [("pearson", correlation(scipy.stats.pearsonr)),
            ("spearman", correlation(scipy.stats.spearmanr)),
            ("mse", float(np.mean(np.square(targets - preds))) * self.scale ** 2),
            ("loss", self.get_loss())]
