"""Pre-training metrics (``pretraining/evaluation.py``) against scikit-learn and hand-computed values."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.pretraining import evaluation


def test_auc_from_histograms_matches_sklearn():
  from sklearn.metrics import roc_auc_score
  rng = np.random.default_rng(0)
  labels = rng.integers(0, 2, 4000)
  probs = np.clip(rng.normal(0.35 + 0.3 * labels, 0.2), 0, 1).astype(np.float32)
  out = {"masked_lm_weights": tf.ones([1, 1]), "masked_lm_ids": tf.zeros([1, 1], tf.int32),
         "masked_lm_preds": tf.zeros([1, 1], tf.int32), "mlm_slot_loss": tf.ones([1, 1]),
         "total_loss": tf.constant(1.0), "input_mask": tf.ones([1, 4000], tf.int32),
         "disc_labels": tf.constant(labels[None], tf.int32), "disc_probs": tf.constant(probs[None]),
         "disc_preds": tf.constant((probs[None] > 0.5).astype(np.int32)), "sampled_tokids": tf.zeros([1, 1], tf.int32),
         "disc_example_loss": tf.ones([1])}
  metrics = evaluation.finalize({k: v.numpy() for k, v in evaluation.eval_sums(out).items()})
  assert abs(metrics["disc_auc"] - roc_auc_score(labels, probs)) < 0.01
  preds = probs > 0.5
  assert metrics["disc_precision"] == pytest.approx(np.mean(labels[preds] == 1), abs=1e-6)
  assert metrics["disc_recall"] == pytest.approx(np.mean(preds[labels == 1]), abs=1e-6)
  assert metrics["disc_accuracy"] == pytest.approx(np.mean(preds == labels), abs=1e-6)


def test_results_written_as_text_and_json(tmp_path):
  import json
  txt = tmp_path / "results" / "unsup_results.txt"
  evaluation.write_results(str(txt), {"disc_auc": 0.75, "masked_lm_accuracy": 0.1}, step=10)
  path = evaluation.write_results(str(txt), {"disc_auc": 0.8, "masked_lm_accuracy": 0.2}, step=20)
  history = json.loads(open(path).read())
  assert [h["step"] for h in history] == [10, 20] and history[1]["disc_auc"] == 0.8
  assert "step 20 (heldout): disc_auc: 0.8000 - masked_lm_accuracy: 0.2000" in txt.read_text()


def test_disc_auc_real_ignores_padding_and_reads_half_for_a_constant_discriminator():
  from sklearn.metrics import roc_auc_score
  rng = np.random.default_rng(1)
  rows, length = 64, 40
  lengths = rng.integers(10, length + 1, rows)
  mask = (np.arange(length)[None] < lengths[:, None]).astype(np.int32)
  labels = (rng.random([rows, length]) < 0.15).astype(np.int32) * mask
  probs = np.clip(rng.normal(0.3 + 0.3 * labels, 0.2), 0, 1).astype(np.float32)

  def metrics(p):
    out = {"masked_lm_weights": tf.ones([1, 1]), "masked_lm_ids": tf.zeros([1, 1], tf.int32),
           "masked_lm_preds": tf.zeros([1, 1], tf.int32), "mlm_slot_loss": tf.ones([1, 1]),
           "total_loss": tf.constant(1.0), "input_mask": tf.constant(mask), "disc_labels": tf.constant(labels),
           "disc_probs": tf.constant(p), "disc_preds": tf.constant((p > 0.5).astype(np.int32)),
           "sampled_tokids": tf.zeros([1, 1], tf.int32), "disc_example_loss": tf.ones([rows])}
    return evaluation.finalize({k: v.numpy() for k, v in evaluation.eval_sums(out).items()})

  real = mask.astype(bool)
  got = metrics(probs)
  assert abs(got["disc_auc_real"] - roc_auc_score(labels[real], probs[real])) < 0.01
  # the reference's AUC scores padding as certain negatives at probability 0, as sklearn does here
  padded = np.where(real, probs, 0.0)
  assert abs(got["disc_auc"] - roc_auc_score(labels.ravel(), padded.ravel())) < 0.01
  # a constant discriminator: the real-token AUC is 0.5, the reference's is lifted by the padding share
  constant = metrics(np.full_like(probs, 0.1))
  assert constant["disc_auc_real"] == pytest.approx(0.5, abs=1e-3)
  negatives = (labels == 0).sum()
  padding_share = (~real).sum() / negatives
  assert constant["disc_auc"] == pytest.approx(0.5 + 0.5 * padding_share, abs=0.01)
  assert constant["disc_recall"] == 0.0


def test_an_empty_held_out_split_is_refused_before_training_not_waited_on(tmp_path):
  """A held-out split without a record (an --eval-fraction that took no document) would leave evaluation
  waiting forever for its first batch."""
  from electra_tf.configs import PretrainingConfig
  from electra_tf.pretraining import inputs
  from electra_tf.pretraining.trainer import PretrainingError
  records = tmp_path / "pretrain_tfrecords"
  records.mkdir()
  with tf.io.TFRecordWriter(str(records / "pretrain_data.tfrecord-0-of-1")) as w:
    w.write(b"x")
  (records / "pretrain_eval.tfrecord-0-of-1").write_bytes(b"")
  cfg = PretrainingConfig.create("m", str(tmp_path), eval_every_steps=2)
  with pytest.raises(PretrainingError, match=r"pretrain_eval.tfrecord\* holds no examples .*rebuild the data"):
    inputs.heldout_patterns(cfg)
  with pytest.raises(PretrainingError, match="holds no examples"):
    inputs.check_data(cfg)  # before the first step
  assert inputs.check_data(PretrainingConfig.create("m", str(tmp_path))) == [
      str(records / "pretrain_data.tfrecord-0-of-1")]  # no evaluation: nothing to wait on
  with tf.io.TFRecordWriter(str(records / "pretrain_eval.tfrecord-0-of-1")) as w:
    w.write(b"x")
  assert inputs.heldout_patterns(cfg) == str(records / "pretrain_eval.tfrecord*")
