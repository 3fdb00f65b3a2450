"""The reference's eight pre-training metrics, accumulated as sums over batches and replicas.

Definitions follow ``metric_fn`` in the reference's ``run_pretraining.py`` (tf.metrics in TF1):
- masked_lm_accuracy: generator argmax == original token, over masked slots;
- masked_lm_loss: mean -log p(original) over masked slots;
- sampled_masked_lm_accuracy: the *sampled* token == original, over masked slots;
- disc_loss: mean over examples of the per-example discriminator loss;
- disc_auc: ROC AUC of sigmoid(logit) vs "replaced", tf.metrics.auc style (200 thresholds, trapezoid),
  over ``labels * input_mask`` and ``probs * input_mask`` (padding counts as a certain negative, as there);
- disc_auc_real (not in the reference): the same AUC over real tokens only. Padding, a certain negative
  scored 0, lifts ``disc_auc`` to 0.5 + 0.5 x (padding share of negatives) for a constant discriminator
  (about 0.63 on the sample data); ``disc_auc_real`` reads 0.5 for it.
- disc_accuracy / disc_precision / disc_recall: over real tokens; precision among predicted-replaced,
  recall among actually replaced.
``evaluate_heldout`` runs them on the held-out batches through the job's runner; results go to
``<model_dir>/results/unsup_results.{txt,json,pkl}`` (written atomically).
"""

import json
import os
import pickle
import typing

import numpy as np
import tensorflow as tf

from electra_tf import fileio
from electra_tf.pretraining import inputs
from electra_tf.runtime.atomic_files import atomic_write

NUM_THRESHOLDS = 200
# Masking/sampling stream offset for evaluation, so eval batches never reuse training draws.
EVAL_SEED_OFFSET = 1_000_003
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
    # The reference's AUC: padding enters as a certain negative at probability 0.
    sums.update(auc_histograms(out["disc_probs"] * m, f(labels) * m, tf.ones_like(m), "auc"))
    sums.update(auc_histograms(out["disc_probs"], f(labels), m, "auc_real"))
  return sums


def replica_eval(model, seed: int):
  """``replica_eval(features, batch_index) -> eval_sums`` of one replica's rows of a global batch (the runner's
  evaluator sums them over replicas: ``runtime.loop.compile_eval``).

  Masking and sampling are keyed by (``seed``, ``batch_index``, global row), so every evaluation of the same
  checkpoint draws the same masks; loss normalisers are global, as in training."""

  def replica_fn(features, batch_index):
    ctx = tf.distribute.get_replica_context()
    dens = model.local_denominators(features)
    if ctx.num_replicas_in_sync > 1:
      dens = ctx.all_reduce(tf.distribute.ReduceOp.SUM, dens)
    row_offset = tf.cast(ctx.replica_id_in_sync_group, tf.int32) * tf.shape(features["input_ids"])[0]
    out = model.forward(features, seed, batch_index, training=False, row_offset=row_offset, denominators=dens)
    return eval_sums(out)

  return replica_fn


def auc_histograms(probs, positive, weights, prefix: str) -> dict:
  """``{prefix_pos, prefix_neg}``: [NUM_THRESHOLDS + 1] float32 counts of weighted positives/negatives per
  bucket, bucket b = number of thresholds strictly below the probability (sum them across batches)."""
  probs, positive, weights = (tf.reshape(tf.cast(x, tf.float32), [-1]) for x in (probs, positive, weights))
  bucket = tf.searchsorted(tf.constant(auc_thresholds()), probs, side="left")
  return {f"{prefix}_pos": tf.math.unsorted_segment_sum(positive * weights, bucket, NUM_THRESHOLDS + 1),
          f"{prefix}_neg": tf.math.unsorted_segment_sum((1.0 - positive) * weights, bucket, NUM_THRESHOLDS + 1)}


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
        "disc_auc_real": auc_from_histograms(sums["auc_real_pos"], sums["auc_real_neg"]),
        "disc_accuracy": div("disc_correct", "disc_count"),
        "disc_precision": div("precision_correct", "precision_count"),
        "disc_recall": div("recall_correct", "recall_count"),
    })
  return metrics


def results_json_path(results_txt: str) -> str:
  """``unsup_results.json`` beside ``unsup_results.txt``: every evaluation so far, one object per step."""
  return os.path.splitext(results_txt)[0] + ".json"


def write_results(results_txt: str, metrics: dict, step: int, split: str = "heldout",
                  results_pkl: typing.Optional[str] = None) -> str:
  """Appends ``step``'s metrics to ``results_txt`` (one line) and rewrites the JSON list beside it and,
  given ``results_pkl`` (the reference's hparam, ``unsup_results.pkl``), the same list pickled there.

  Returns the JSON path (``unsup_results.json``).
  """
  json_path = results_json_path(results_txt)
  history = []
  if fileio.exists(json_path):
    with fileio.open_file(json_path) as f:
      history = json.load(f)
  history = [h for h in history if not (h.get("step") == step and h.get("split") == split)]
  history.append({"step": int(step), "split": split, **{k: float(v) for k, v in metrics.items()}})
  atomic_write(json_path, json.dumps(history, indent=2) + "\n")
  if results_pkl:
    atomic_write(results_pkl, pickle.dumps(history))
  lines = [f"step {h['step']} ({h['split']}): " + " - ".join(
      f"{k}: {h[k]:.4f}" for k in sorted(h) if k not in ("step", "split")) for h in history]
  atomic_write(results_txt, "\n".join(lines) + "\n")
  return json_path


def evaluate_heldout(runner, model, cfg, step: int, num_steps: typing.Optional[int] = None) -> dict:
  """The reference's metrics of ``model`` over ``num_steps`` (default ``cfg.num_eval_steps``) held-out global
  batches, masked and sampled from a stream of their own; the chief writes them under results/ and says so.
  ``runner``: the job's ``runtime.runner.Runner`` (its evaluator)."""
  batches = iter(inputs.global_batches(cfg, inputs.heldout_patterns(cfg), cfg.eval_batch_size, cfg.seed + 1))
  sums = runner.evaluate("heldout", replica_eval(model, cfg.seed + EVAL_SEED_OFFSET), batches,
                         num_steps or cfg.num_eval_steps)
  metrics = finalize(sums)
  if runner.chief:
    path = write_results(cfg.results_txt, metrics, step, results_pkl=cfg.results_pkl)
    runner.say(f"eval at step {step}: " + "  ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items()))
               + f"  (written to {path})")
  return metrics
