"""The reference's ``ExampleBuilder``: packs tokenized sentences into ``[CLS] A [SEP] B [SEP]`` examples.

Same rules and the same order of random draws as google-research/electra ``build_pretraining_dataset.py``
(reference_spec.md section 3), but with an explicit ``random.Random`` instead of the global module state
so a ``--seed`` makes the output reproducible.
"""

import random

import numpy as np

from electra_tf.errors import DataPrepError


class ExampleBuilder:
  """Accumulates sentences (lists of token ids) until ``target_length`` and emits examples.

  ``add_sentence`` / ``end_document`` return None or an example ``(input_ids, segment_ids)``, two Python
  lists of the same length <= ``max_length`` (unpadded; ``pad_example`` pads them).
  """

  def __init__(self, max_length, cls_id, sep_id, rng=None):
    if max_length < 5:
      raise DataPrepError(f"max_seq_length is {max_length}; it must be at least 5 "
                       "([CLS] A [SEP] B [SEP] and the reference's randint(5, max_seq_length))")
    self._max_length = max_length
    self._cls = cls_id
    self._sep = sep_id
    self._rng = rng if rng is not None else random.Random()
    self._current_sentences = []
    self._current_length = 0
    self._target_length = max_length

  def add_sentence(self, token_ids):
    """Reference ``add_line`` for a non-empty line (its ids may be empty, e.g. only control chars)."""
    self._current_sentences.append(token_ids)
    self._current_length += len(token_ids)
    if self._current_length >= self._target_length:
      return self._create_example()
    return None

  def end_document(self):
    """Reference ``add_line("")``: a blank line or the end of a file flushes pending sentences."""
    if self._current_length != 0:
      return self._create_example()
    # The reference appends an empty sentence here; it can never change an example, so skip it.
    return None

  def _create_example(self):
    rng = self._rng
    # Small chance of a single segment, as in classification tasks.
    if rng.random() < 0.1:
      first_segment_target_length = 100000
    else:
      # -3 for the [CLS] and two [SEP] not yet in the text.
      first_segment_target_length = (self._target_length - 3) // 2

    first_segment = []
    second_segment = []
    for sentence in self._current_sentences:
      # A sentence joins A if A is empty, if it fits in A's target, or (with B still empty and A under
      # target) half of the time; else it joins B. Short-circuiting keeps the reference's draw order.
      if (not first_segment or
          len(first_segment) + len(sentence) < first_segment_target_length or
          (not second_segment and len(first_segment) < first_segment_target_length and
           rng.random() < 0.5)):
        first_segment += sentence
      else:
        second_segment += sentence

    # Truncation uses max_length (not the target); the leftover text is dropped, as in the reference.
    first_segment = first_segment[:self._max_length - 2]
    second_segment = second_segment[:max(0, self._max_length - len(first_segment) - 3)]

    self._current_sentences = []
    self._current_length = 0
    # Small chance of a random-length example.
    if rng.random() < 0.05:
      self._target_length = rng.randint(5, self._max_length)
    else:
      self._target_length = self._max_length

    input_ids = [self._cls] + first_segment + [self._sep]
    segment_ids = [0] * len(input_ids)
    if second_segment:
      input_ids += second_segment + [self._sep]
      segment_ids += [1] * (len(second_segment) + 1)
    return input_ids, segment_ids


def pad_examples(examples, max_length):
  """list of (input_ids, segment_ids) -> (input_ids [n, max_length] int32, segment_ids, lengths [n])."""
  n = len(examples)
  ids = np.zeros([n, max_length], np.int32)  # pad id 0 is hard-coded in the reference
  seg = np.zeros([n, max_length], np.int32)
  lengths = np.zeros([n], np.int32)
  for i, (a, s) in enumerate(examples):
    ids[i, :len(a)] = a
    seg[i, :len(s)] = s
    lengths[i] = len(a)
  return ids, seg, lengths
