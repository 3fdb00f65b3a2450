"""Unit tests of the pre-training pieces against hand-computed and numpy values."""

import math

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.pretraining import evaluation, masking, random_ops, sampling

SPECIAL = masking.SpecialIds()  # BERT ids: PAD 0, CLS 101, SEP 102, MASK 103


def test_scatter_update_averages_duplicates_with_floordiv_and_ignores_position_zero():
  seq = tf.constant([[1, 2, 3, 4, 5]])
  updates = tf.constant([[10, 21, 50, 7]])
  positions = tf.constant([[2, 2, 0, 4]])  # 2 twice -> (10 + 21) // 2 = 15; position 0 ignored
  out, mask = masking.scatter_update(seq, updates, positions)
  np.testing.assert_array_equal(out.numpy(), [[1, 2, 15, 4, 7]])
  np.testing.assert_array_equal(mask.numpy(), [[0, 0, 1, 0, 1]])
  fseq = tf.zeros([1, 3, 2])
  fout, _ = masking.scatter_update(fseq, tf.constant([[[2.0, 4.0], [4.0, 8.0]]]), tf.constant([[1, 1]]))
  np.testing.assert_allclose(fout.numpy()[0, 1], [3.0, 6.0])  # floats: mean


def test_num_to_predict_rounds_half_to_even_and_caps():
  mask = tf.sequence_mask([10, 14, 2, 100], 100, dtype=tf.int32)
  # 10 * 0.25 = 2.5 -> 2, 14 * 0.25 = 3.5 -> 4 (half to even), 2 * 0.25 = 0.5 -> 0 -> at least 1, 25 -> cap 19
  np.testing.assert_array_equal(masking.num_to_predict(mask, 0.25, 19).numpy(), [2, 4, 1, 19])


def _batch(rows=64, length=32, seed=0):
  rng = np.random.default_rng(seed)
  lengths = rng.integers(6, length + 1, rows)
  ids = np.zeros([rows, length], np.int32)
  for r, n in enumerate(lengths):
    ids[r, :n] = rng.integers(1000, 2000, n)
    ids[r, 0], ids[r, n - 1] = SPECIAL.cls, SPECIAL.sep
    ids[r, n // 2] = SPECIAL.sep  # a second segment boundary
  mask = (np.arange(length)[None] < lengths[:, None]).astype(np.int32)
  return ids, mask


def test_mask_positions_counts_and_replacement_split():
  ids, mask = _batch(rows=512)
  n = 4
  out = masking.mask(ids, mask, np.zeros_like(ids), 0.15, n, SPECIAL, seed=3, step=7)
  pos, w, lm_ids = out.masked_lm_positions.numpy(), out.masked_lm_weights.numpy(), out.masked_lm_ids.numpy()
  np.testing.assert_array_equal(w.sum(1), np.maximum(1, np.minimum(n, np.round(mask.sum(1) * np.float32(0.15)))))
  used = w > 0
  chosen_ids = np.take_along_axis(ids, pos, 1)
  assert not np.isin(chosen_ids[used], [SPECIAL.pad, SPECIAL.cls, SPECIAL.sep, SPECIAL.mask]).any()
  np.testing.assert_array_equal(lm_ids, chosen_ids * used)
  assert (pos[~used] == 0).all()
  new = out.input_ids.numpy()
  at = np.take_along_axis(new, pos, 1)[used]
  assert set(np.unique(at)) <= set(np.unique(chosen_ids[used])) | {SPECIAL.mask}
  frac_masked = np.mean(at == SPECIAL.mask)
  assert abs(frac_masked - 0.85) < 0.03, frac_masked  # 85% [MASK], 15% kept
  untouched = np.ones_like(new, bool)
  np.put_along_axis(untouched, pos, False, 1)
  np.testing.assert_array_equal(new[untouched], ids[untouched])  # only chosen positions change


def test_mask_draws_with_replacement_and_duplicates_stay_mask():
  ids = np.array([[SPECIAL.cls, 1500, 1501, SPECIAL.sep] + [0] * 4], np.int32)  # two candidates
  ids = np.repeat(ids, 256, 0)
  mask = (ids > 0).astype(np.int32)
  out = masking.mask(ids, mask, np.zeros_like(ids), 1.0, 4, SPECIAL, seed=1, step=0)  # 4 draws of 2 slots
  pos = out.masked_lm_positions.numpy()
  assert (np.sort(pos, 1)[:, :-1] == np.sort(pos, 1)[:, 1:]).any(1).all()  # pigeonhole: duplicates
  assert set(np.unique(pos)) == {1, 2}
  new = out.input_ids.numpy()
  assert np.isin(new[:, 1:3], [1500, 1501, SPECIAL.mask]).all()  # averaging [MASK] with itself is [MASK]


def test_keyed_uniform_is_independent_of_how_rows_are_split():
  key = random_ops.step_key(5, 11, random_ops.GUMBEL)
  full = random_ops.keyed_uniform(key, [4, 3, 7]).numpy()
  halves = [random_ops.keyed_uniform(key, [2, 3, 7], row_offset=o).numpy() for o in (0, 2)]
  np.testing.assert_array_equal(full, np.concatenate(halves))
  assert 0.0 <= full.min() and full.max() < 1.0
  other = random_ops.keyed_uniform(random_ops.step_key(5, 12, random_ops.GUMBEL), [4, 3, 7]).numpy()
  assert not np.allclose(full, other)
  big = random_ops.keyed_uniform(key, [64, 4096]).numpy()
  assert abs(big.mean() - 0.5) < 0.005 and abs(big.var() - 1 / 12) < 0.002


def test_gumbel_sampling_matches_softmax_and_options():
  logits = np.log(np.array([0.5, 0.3, 0.15, 0.05], np.float32))
  batch = np.tile(logits, [20000, 1, 1])  # [B, 1, V]
  draws = sampling.sample_tokens(tf.constant(batch), seed=0, step=1).numpy().ravel()
  freq = np.bincount(draws, minlength=4) / draws.size
  np.testing.assert_allclose(freq, [0.5, 0.3, 0.15, 0.05], atol=0.012)
  hot = sampling.sample_tokens(tf.constant(batch), seed=0, step=1, temperature=0.05).numpy().ravel()
  assert np.mean(hot == 0) > 0.99  # low temperature -> argmax
  banned = sampling.sample_tokens(tf.constant(batch), 0, 1, disallow_ids=tf.zeros([20000, 1], tf.int32))
  assert not (banned.numpy() == 0).any()  # disallow_correct: never the original
  half = sampling.sample_tokens(tf.constant(batch[:10000]), 0, 1).numpy().ravel()
  np.testing.assert_array_equal(half, draws[:10000])  # same rows, same draws
  bf16 = sampling.sample_tokens(tf.constant(batch, tf.bfloat16), seed=0, step=1)
  assert bf16.dtype == tf.int32


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


# --- objective against numpy ---------------------------------------------------------------------------------

def _tiny_model(**overrides):
  from electra_tf.configs import PretrainingConfig
  from electra_tf.pretraining.objective import PretrainingModel
  hp = dict(model_hparam_overrides={"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                                    "intermediate_size": 32, "vocab_size": 2100},
            embedding_size=16, vocab_size=2100, max_seq_length=32, generator_hidden_size=1.0)
  hp.update(overrides)
  return PretrainingModel(PretrainingConfig.create("t", "/nonexistent", **hp), SPECIAL)


def _log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.mark.parametrize("variant", ["electra", "electric"])
def test_losses_labels_and_fake_input_match_numpy(variant):
  hp = {} if variant == "electra" else {"electra_objective": False, "electric_objective": True}
  model = _tiny_model(**hp)
  ids, mask = _batch(rows=6)
  feats = {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}
  out = {k: v.numpy() for k, v in model.forward(feats, seed=2, step=3, training=False).items()}
  w, lm_ids = out["masked_lm_weights"], out["masked_lm_ids"]
  np.testing.assert_allclose(out["mlm_loss"], (w * out["mlm_slot_loss"]).sum() / (w.sum() + 1e-6), rtol=1e-5)
  labels, probs = out["disc_labels"], out["disc_probs"]
  logits = np.log(probs) - np.log1p(-probs)
  bce = np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))
  disc = (bce * mask).sum() / (mask.sum() + 1e-6)
  np.testing.assert_allclose(out["disc_loss"], disc, rtol=2e-4)
  gen = out["cloze_loss"] if variant == "electric" else out["mlm_loss"]
  np.testing.assert_allclose(out["total_loss"], gen + 50.0 * out["disc_loss"], rtol=1e-5)
  pos = masking.mask(ids, mask, np.zeros_like(ids), 0.15, model.config.max_predictions_per_seq, SPECIAL, 2,
                     3).masked_lm_positions.numpy()
  sampled = out["sampled_tokids"]
  expect = np.zeros_like(ids)
  for r in range(ids.shape[0]):
    chosen = {p for p in pos[r] if p != 0}
    for p in chosen:
      vals = [sampled[r, j] for j in range(pos.shape[1]) if pos[r, j] == p]
      fake = sum(vals) // len(vals)  # the reference's duplicate averaging
      expect[r, p] = 1 if variant == "electric" else int(fake != ids[r, p])
  np.testing.assert_array_equal(labels, expect)


def test_electric_towers_are_causal_and_cloze_never_sees_its_token():
  model = _tiny_model(electra_objective=False, electric_objective=True)
  gen = model.networks.generator
  ids, mask = _batch(rows=1, length=12)
  ids[0, :] = np.arange(1000, 1012)
  mask[:] = 1
  seg = np.zeros_like(ids)
  base = gen(ids, mask, seg)["logits"].numpy()
  changed = ids.copy()
  changed[0, 6] = 1500
  after = gen(changed, mask, seg)["logits"].numpy()
  np.testing.assert_allclose(after[0, 6], base[0, 6], rtol=1e-5, atol=1e-5)  # own token unseen
  assert not np.allclose(after[0, 5], base[0, 5]) and not np.allclose(after[0, 7], base[0, 7])
  ltr = gen.ltr(ids, mask, seg)["sequence_output"].numpy()
  ltr2 = gen.ltr(changed, mask, seg)["sequence_output"].numpy()
  np.testing.assert_allclose(ltr2[0, :6], ltr[0, :6], rtol=1e-5, atol=1e-6)


# --- optimizer pieces (the lead's optimization.py) as the pre-training loop uses them --------------------------

def test_learning_rate_schedule_hand_computed():
  from electra_tf.optimization import learning_rate_schedule
  lr = learning_rate_schedule(1e-3, num_train_steps=100, num_warmup_steps=10)
  assert float(lr(0)) == 0.0
  assert float(lr(5)) == pytest.approx(1e-3 * (1 - 0.05) * 0.5)  # warmup multiplies the decay
  assert float(lr(50)) == pytest.approx(1e-3 * 0.5)
  assert float(lr(100)) == pytest.approx(0.0)


def test_adam_without_bias_correction_and_weight_decay_exclusion():
  from electra_tf.optimization import AdamWeightDecay, clip_by_global_norm
  import keras
  kernel = keras.Variable([1.0, -2.0])
  gamma = keras.Variable([0.5, 0.5])
  bias = keras.Variable([0.1, 0.2])
  names = {id(kernel): "electra/encoder/layer_0/output/dense/kernel",
           id(gamma): "electra/encoder/layer_0/output/LayerNorm/gamma",
           id(bias): "electra/encoder/layer_0/output/dense/bias"}
  opt = AdamWeightDecay(0.1, weight_decay_rate=0.01, variable_names=names)
  variables = [kernel, gamma, bias]
  ref = {id(v): v.numpy().copy() for v in variables}
  m = {id(v): np.zeros(2) for v in variables}
  s = {id(v): np.zeros(2) for v in variables}
  grads_seq = [[np.array([0.3, -0.4]), np.array([1.0, 2.0]), np.array([-0.5, 0.5])],
               [np.array([3.0, 4.0]), np.array([0.1, 0.1]), np.array([0.2, -0.2])]]
  for grads in grads_seq:
    clipped, norm = clip_by_global_norm([tf.constant(g, tf.float32) for g in grads], 1.0)
    gnorm = math.sqrt(sum((g ** 2).sum() for g in grads))
    assert float(norm) == pytest.approx(gnorm, rel=1e-5)
    opt.apply(clipped, variables)
    for v, g in zip(variables, grads):
      g = g * min(1.0, 1.0 / gnorm)
      m[id(v)] = 0.9 * m[id(v)] + 0.1 * g
      s[id(v)] = 0.999 * s[id(v)] + 0.001 * g * g
      update = m[id(v)] / (np.sqrt(s[id(v)]) + 1e-6)  # no bias correction
      if v is kernel:
        update += 0.01 * ref[id(v)]  # decoupled decay, not for LayerNorm or bias
      ref[id(v)] = ref[id(v)] - 0.1 * update
  for v in variables:
    np.testing.assert_allclose(v.numpy(), ref[id(v)], rtol=1e-5, atol=1e-6)
