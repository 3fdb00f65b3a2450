"""Dynamic masking (``pretraining/masking.py``) against hand-computed values and the reference's rules."""

import numpy as np
import tensorflow as tf

from _pretraining_testlib import token_batch
from electra_tf.pretraining import masking

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


def test_mask_positions_counts_and_replacement_split():
  ids, mask = token_batch(rows=512)
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
