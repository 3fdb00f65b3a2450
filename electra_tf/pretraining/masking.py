"""Dynamic masking with the reference's semantics (``pretrain/pretrain_helpers.py``), fresh every step.

- count: ``max(1, min(N, round(sum(input_mask) * mask_prob)))`` with round-half-to-even (``tf.round``);
  the count includes [CLS] and [SEP];
- positions: N draws *with replacement*, uniform over candidates (real tokens that are not [CLS], [SEP],
  [MASK] or [PAD]); unused slots get position 0 and weight 0;
- 85% of the drawn positions become [MASK], the other 15% keep their token (no random replacement);
- ``scatter_update`` ignores position 0 and averages duplicate updates (floordiv for ids).
"""

import logging
import typing

import tensorflow as tf

from electra_tf import fileio, tokenization
from electra_tf.errors import PretrainingError, VocabError
from electra_tf.pretraining import random_ops, sampling

log = logging.getLogger(__name__)

MASK_FRACTION = 0.85  # of the chosen positions; the rest keep the original token


class SpecialIds(typing.NamedTuple):
  pad: int = 0
  cls: int = 101
  sep: int = 102
  mask: int = 103

  @classmethod
  def from_vocab(cls, vocab: typing.Mapping[str, int]) -> "SpecialIds":
    missing = [t for t in ("[PAD]", "[CLS]", "[SEP]", "[MASK]") if t not in vocab]
    if missing:
      raise VocabError(f"vocabulary lacks {', '.join(missing)}; ELECTRA's masking needs them")
    return cls(vocab["[PAD]"], vocab["[CLS]"], vocab["[SEP]"], vocab["[MASK]"])

  @classmethod
  def from_vocab_file(cls, vocab_file: str, vocab_size: int) -> "SpecialIds":
    """Reads the vocab a pre-training run names (WordPiece vocab.txt or SentencePiece .model, through
    ``tokenization.read_vocab``) and checks it fits ``vocab_size`` (PretrainingError else; a warning for a vocab
    smaller than the table)."""
    if not fileio.isfile(vocab_file):
      raise PretrainingError(f"vocab file {vocab_file} not found; put the vocab the data was built with "
                             "there or pass {\"vocab_file\": ...} in --hparams")
    try:
      vocab = tokenization.read_vocab(vocab_file, check_special=False)
    except VocabError as e:
      raise PretrainingError(str(e)) from None
    if vocab.size > vocab_size:
      raise PretrainingError(f"vocab {vocab_file} has {vocab.size} tokens but vocab_size is "
                             f"{vocab_size}; set {{\"vocab_size\": {vocab.size}}} in --hparams")
    if vocab.size < vocab_size:  # the reference trains it; the exporters want the vocab to fill the table
      log.warning("vocab %s has %d tokens but vocab_size is %d: %d word-embedding rows no token uses, and the "
                  "exporters (transformers, keras-hub, TF1) refuse the model with this vocab; unless you mean "
                  "it, set {\"vocab_size\": %d} in --hparams", vocab_file, vocab.size, vocab_size,
                  vocab_size - vocab.size, vocab.size)
    try:
      return cls.from_vocab(vocab.special)
    except VocabError as e:
      raise PretrainingError(f"{vocab_file}: {e}") from None


class MaskedInputs(typing.NamedTuple):
  """``input_ids`` [B, T] with [MASK]s in; ``masked_lm_positions``/``ids`` int32 [B, N]; weights f32 [B, N]."""
  input_ids: tf.Tensor
  input_mask: tf.Tensor
  segment_ids: tf.Tensor
  masked_lm_positions: tf.Tensor
  masked_lm_ids: tf.Tensor
  masked_lm_weights: tf.Tensor


def gather_positions(sequence, positions):
  """[B, T] or [B, T, D] gathered at int [B, P] positions -> [B, P] or [B, P, D]."""
  return tf.gather(sequence, tf.cast(positions, tf.int32), batch_dims=1)


def scatter_update(sequence, updates, positions):
  """The reference's ``scatter_update``: writes ``updates`` [B, P(, D)] into ``sequence`` [B, T(, D)].

  Updates to position 0 are ignored (that is where unused slots point); when a position is written
  several times the values are averaged (``floordiv`` of the summed ids for integer sequences).
  Returns (updated sequence, int32 [B, T] mask of updated positions).
  """
  depth = sequence.shape.rank == 3
  if not depth:
    sequence, updates = sequence[..., tf.newaxis], updates[..., tf.newaxis]
  shape = tf.shape(sequence)
  b, t = shape[0], shape[1]
  positions = tf.cast(positions, tf.int32)
  index = tf.stack([tf.broadcast_to(tf.range(b)[:, tf.newaxis], tf.shape(positions)), positions], -1)
  summed = tf.scatter_nd(index, tf.cast(updates, sequence.dtype), shape)
  counts = tf.scatter_nd(index, tf.ones_like(positions), tf.stack([b, t]))
  counts *= tf.concat([tf.zeros([b, 1], tf.int32), tf.ones([b, t - 1], tf.int32)], -1)  # position 0 never
  counts3 = counts[..., tf.newaxis]
  if sequence.dtype.is_integer:
    averaged = tf.math.floordiv(summed, tf.maximum(1, tf.cast(counts3, sequence.dtype)))
  else:
    averaged = summed / tf.maximum(1.0, tf.cast(counts3, sequence.dtype))
  updated = tf.where(counts3 > 0, averaged, sequence)
  if not depth:
    updated = tf.squeeze(updated, -1)
  return updated, tf.minimum(counts, 1)


def candidates_mask(input_ids, input_mask, special: SpecialIds):
  """bool [B, T]: real tokens other than [CLS], [SEP], [MASK], [PAD]."""
  mask = tf.cast(input_mask, tf.bool)
  for token in (special.sep, special.cls, special.mask, special.pad):
    mask &= tf.not_equal(input_ids, token)
  return mask


def num_to_predict(input_mask, mask_prob: float, max_predictions: int):
  """int32 [B]: ``max(1, min(N, round(real tokens * mask_prob)))``, rounding half to even."""
  num_tokens = tf.cast(tf.reduce_sum(tf.cast(input_mask, tf.int32), -1), tf.float32)
  return tf.maximum(1, tf.minimum(max_predictions, tf.cast(tf.round(num_tokens * mask_prob), tf.int32)))


def mask(input_ids, input_mask, segment_ids, mask_prob: float, max_predictions: int, special: SpecialIds,
         seed, step, row_offset=0) -> MaskedInputs:
  """The reference's ``mask()`` for int32 [B, T] inputs.

  Randomness is keyed by (``seed``, ``step``, global row = ``row_offset`` + row), see ``random_ops``.
  Positions are drawn with the Gumbel-max trick over the uniform candidate distribution, which is a
  categorical draw with replacement (what ``tf.random.categorical`` does).
  """
  input_ids = tf.cast(input_ids, tf.int32)
  n = max_predictions
  b, t = tf.shape(input_ids)[0], tf.shape(input_ids)[1]
  candidates = candidates_mask(input_ids, input_mask, special)
  weights = tf.sequence_mask(num_to_predict(input_mask, mask_prob, n), n, dtype=tf.float32)

  # categorical(log p) with p uniform on candidates: argmax over T of (log p + Gumbel noise)
  u = random_ops.keyed_uniform(random_ops.step_key(seed, step, random_ops.MASK_POSITIONS), [b, n, t],
                               row_offset)
  logits = tf.where(candidates[:, tf.newaxis, :], sampling.gumbel_noise(u), -1e9)
  positions = sampling.materialized_argmax(logits)  # finite logits: tf.argmax's answer
  positions *= tf.cast(weights, tf.int32)
  masked_lm_ids = gather_positions(input_ids, positions) * tf.cast(weights, tf.int32)

  u_replace = random_ops.keyed_uniform(random_ops.step_key(seed, step, random_ops.MASK_REPLACE), [b, n],
                                       row_offset)
  replace_positions = positions * tf.cast(u_replace < MASK_FRACTION, tf.int32)
  masked_ids, _ = scatter_update(input_ids, tf.fill([b, n], special.mask), replace_positions)
  return MaskedInputs(tf.stop_gradient(masked_ids), input_mask, segment_ids, positions, masked_lm_ids,
                      weights)


def unmask(inputs: MaskedInputs):
  """Original ids back at the masked positions (the reference's ``unmask``)."""
  ids, _ = scatter_update(inputs.input_ids, inputs.masked_lm_ids, inputs.masked_lm_positions)
  return ids
