"""The fine-tuning job's in-memory input: the step count, and arrays -> batches (shuffled, repeated, optionally
bucketed by length) as the trainer and its prediction read them."""

import typing

import numpy as np
import tensorflow as tf


def num_train_steps(n_padded: int, batch_size: int, epochs: float) -> int:
  """The reference's step count: int(n_padded // batch * epochs)."""
  return int(n_padded // batch_size * epochs)


def bucket_lengths(width: int, max_seq_length: int) -> typing.List[int]:
  """The padded lengths of ``length_bucket_width`` batches: multiples of ``width``, the last ``max_seq_length``."""
  return sorted({min(n, max_seq_length) for n in range(width, max_seq_length + width, width)})


def make_dataset(arrays: dict, batch_size: int, training: bool, seed: int = 0,
                 bucket_width: int = 0) -> tf.data.Dataset:
  """Arrays -> batches. Training repeats and shuffles with a 100-example buffer after the examples
  were shuffled once in Python, as the reference (shuffled TFRecords + shuffle(100)).

  ``bucket_width`` > 0 (training only; ``length_bucket_width``): each shuffled example is cut to its
  ``input_mask`` length and goes to the bucket of the next length in ``bucket_lengths``; a bucket that holds
  ``batch_size`` examples leaves as one batch padded to that length. Every per-token feature (the arrays
  whose second axis is the padded length) is cut with it; padding is zeros, as the featurizers pad. Batches
  then hold examples of similar length in place of the stream's order, and short ones cost their own
  length: what a batch of tagging or short sentences computes drops by the padding it no longer carries."""
  ds = tf.data.Dataset.from_tensor_slices(arrays)
  if training:
    ds = ds.repeat().shuffle(100, seed=seed)
  # In-memory arrays leave tf.data's autotuner nothing to tune, and its thread made the end of a trial wait:
  # deleting the training iterator waited for the thread's next wake-up, at the end of every trial. The trainer
  # reads the batches through a local iterator, never tf.distribute's wrapper (whose thread did the same).
  options = tf.data.Options()
  options.autotune.enabled = False
  if training and bucket_width:
    padded = int(np.shape(arrays["input_ids"])[1])
    per_token = {k for k, v in arrays.items() if np.ndim(v) == 2 and np.shape(v)[1] == padded}

    def cut(example):
      n = tf.reduce_sum(tf.cast(example["input_mask"], tf.int32))
      return {k: v[:n] if k in per_token else v for k, v in example.items()}

    lengths = bucket_lengths(bucket_width, padded)
    ds = ds.map(cut).bucket_by_sequence_length(
        lambda example: tf.shape(example["input_ids"])[0], [n + 1 for n in lengths],
        [batch_size] * (len(lengths) + 1), pad_to_bucket_boundary=True, drop_remainder=True)
    return ds.prefetch(2).with_options(options)
  return ds.batch(batch_size, drop_remainder=True).prefetch(2).with_options(options)
