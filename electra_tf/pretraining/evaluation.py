"""The reference's eight pre-training metrics, accumulated as sums over batches and replicas.

Definitions follow ``metric_fn`` in the reference's ``run_pretraining.py`` (tf.metrics in TF1):
- masked_lm_accuracy: generator argmax == original token, over masked slots;
- masked_lm_loss: mean -log p(original) over masked slots;
- sampled_masked_lm_accuracy: the *sampled* token == original, over masked slots;
- disc_loss: mean over examples of the per-example discriminator loss;
- disc_auc: ROC AUC of sigmoid(logit) vs "replaced", tf.metrics.auc style (200 thresholds, trapezoid),
  over ``labels * input_mask`` and ``probs * input_mask`` (padding counts as a certain negative, as there);
- disc_accuracy / disc_precision / disc_recall: over real tokens; precision among predicted-replaced,
  recall among actually replaced.
Results go to ``<model_dir>/results/unsup_results.{txt,json}`` (written atomically).
"""

import json
import os
import tempfile

import numpy as np
import tensorflow as tf

NUM_THRESHOLDS = 200
_KEPSILON = 1e-7  # tf.metrics.auc's


def auc_thresholds():
  inner = [(i + 1) * 1.0 / (NUM_THRESHOLDS - 1) for i in range(NUM_THRESHOLDS - 2)]
  return np.array([0.0 - _KEPSILON] + inner + [1.0 + _KEPSILON], np.float32)


def eval_sums(out: dict) -> dict:
  """Per-batch float32 sums for the metrics (add them across batches and replicas)."""
  f = lambda x: tf.cast(x, tf.float32)
  w = out["masked_lm_weights"]
  ids = out["masked_lm_ids"]
  sums = {"mlm_correct": tf.reduce_sum(w * f(tf.equal(ids, out["masked_lm_preds"]))),
          "mlm_count": tf.reduce_sum(w),
          "mlm_loss_sum": tf.reduce_sum(w * out["mlm_slot_loss"]),
          "total_loss_sum": out["total_loss"], "batches": tf.constant(1.0)}
  if "disc_labels" in out:
    m, labels, preds = f(out["input_mask"]), out["disc_labels"], out["disc_preds"]
    correct = f(tf.equal(labels, preds))
    sums.update({
        "sampled_correct": tf.reduce_sum(w * f(tf.equal(ids, out["sampled_tokids"]))),
        "disc_loss_sum": tf.reduce_sum(out["disc_example_loss"]),
        "examples": f(tf.shape(labels)[0]),
        "disc_correct": tf.reduce_sum(m * correct), "disc_count": tf.reduce_sum(m),
        "precision_correct": tf.reduce_sum(m * f(preds) * correct), "precision_count": tf.reduce_sum(m * f(preds)),
        "recall_correct": tf.reduce_sum(m * f(labels) * correct), "recall_count": tf.reduce_sum(m * f(labels)),
    })
    # AUC histograms: bucket b = number of thresholds strictly below the probability.
    probs = tf.reshape(out["disc_probs"] * m, [-1])
    positive = tf.reshape(f(labels) * m, [-1])
    bucket = tf.searchsorted(tf.constant(auc_thresholds()), probs, side="left")
    sums["auc_pos"] = tf.math.unsorted_segment_sum(positive, bucket, NUM_THRESHOLDS + 1)
    sums["auc_neg"] = tf.math.unsorted_segment_sum(1.0 - positive, bucket, NUM_THRESHOLDS + 1)
  return sums


def auc_from_histograms(pos, neg) -> float:
  """tf.metrics.auc (ROC, trapezoidal) from the bucket histograms of ``eval_sums``."""
  pos, neg = np.asarray(pos, np.float64), np.asarray(neg, np.float64)
  # predictions above threshold i are those in buckets i+1 .. NUM_THRESHOLDS
  tp = np.array([pos[i + 1:].sum() for i in range(NUM_THRESHOLDS)])
  fp = np.array([neg[i + 1:].sum() for i in range(NUM_THRESHOLDS)])
  fn, tn = pos.sum() - tp, neg.sum() - fp
  tpr = (tp + _KEPSILON) / (tp + fn + _KEPSILON)
  fpr = fp / (fp + tn + _KEPSILON)
  return float(np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2.0))


def finalize(sums: dict) -> dict:
  """Metric values (Python floats) from accumulated sums."""
  div = lambda a, b: float(sums[a]) / float(sums[b]) if float(sums[b]) > 0 else 0.0
  metrics = {"masked_lm_accuracy": div("mlm_correct", "mlm_count"),
             "masked_lm_loss": div("mlm_loss_sum", "mlm_count"),
             "loss": div("total_loss_sum", "batches")}
  if "disc_count" in sums:
    metrics.update({
        "sampled_masked_lm_accuracy": div("sampled_correct", "mlm_count"),
        "disc_loss": div("disc_loss_sum", "examples"),
        "disc_auc": auc_from_histograms(sums["auc_pos"], sums["auc_neg"]),
        "disc_accuracy": div("disc_correct", "disc_count"),
        "disc_precision": div("precision_correct", "precision_count"),
        "disc_recall": div("recall_correct", "recall_count"),
    })
  return metrics


def _atomic_write(path: str, text: str):
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".tmp_")
  with os.fdopen(fd, "w", encoding="utf-8") as f:
    f.write(text)
  os.replace(tmp, path)


def write_results(results_txt: str, metrics: dict, step: int, split: str = "heldout") -> str:
  """Appends ``step``'s metrics to ``results_txt`` (one line) and rewrites the JSON list beside it.

  Returns the JSON path (``unsup_results.json``).
  """
  json_path = os.path.splitext(results_txt)[0] + ".json"
  history = []
  if os.path.exists(json_path):
    with open(json_path, encoding="utf-8") as f:
      history = json.load(f)
  history = [h for h in history if not (h.get("step") == step and h.get("split") == split)]
  history.append({"step": int(step), "split": split, **{k: float(v) for k, v in metrics.items()}})
  _atomic_write(json_path, json.dumps(history, indent=2) + "\n")
  lines = [f"step {h['step']} ({h['split']}): " + " - ".join(
      f"{k}: {h[k]:.4f}" for k in sorted(h) if k not in ("step", "split")) for h in history]
  _atomic_write(results_txt, "\n".join(lines) + "\n")
  return json_path
