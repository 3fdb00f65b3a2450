"""The pre-training objective (``pretraining/objective.py``) against numpy."""

import numpy as np
import pytest

from _pretraining_testlib import token_batch
from electra_tf.pretraining import masking

SPECIAL = masking.SpecialIds()  # BERT ids: PAD 0, CLS 101, SEP 102, MASK 103


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
  ids, mask = token_batch(rows=6, special=SPECIAL)
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
  ids, mask = token_batch(rows=1, length=12)
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
