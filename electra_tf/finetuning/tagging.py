"""Chunking (CoNLL-2000 layout): words tagged on their first sub-token, tags converted to BIOES.

File: one ``word ... tag`` per line (word = first column, tag = last column), a blank line between
sentences, ``-DOCSTART-`` lines skipped. The label map is the sorted set of BIOES tags of
train/dev/test, pickled under ``<model_dir>/finetuning_data_cache/`` so later runs reuse it.
"""

import os
import pickle
import typing

import numpy as np

from electra_tf import fileio
from electra_tf.finetuning.base import DataError, FeatureSpec, Task, common_feature_specs, pad
from electra_tf.finetuning.scorers.tagging import EntityLevelF1Scorer, get_span_labels, get_tags

LABEL_ENCODING = "BIOES"


class TaggingExample(typing.NamedTuple):
  eid: int
  task_name: str
  words: tuple
  tags: tuple      # the file's tags
  labels: list     # ids of the BIOES tags


def read_conll(path: str) -> typing.List[typing.Tuple[tuple, tuple]]:
  """[(words, tags)] of a CoNLL file; raises DataError for a missing file or a one-column line."""
  if not fileio.isfile(path):
    raise DataError(path, None, "file not found")
  sentences, sentence = [], []
  with fileio.open_file(path) as f:
    for line_no, line in enumerate(f, 1):
      cols = line.strip().split()
      if not cols:
        if sentence:
          sentences.append(tuple(zip(*sentence)))
          sentence = []
        continue
      if cols[0] == "-DOCSTART-":
        continue
      if len(cols) < 2:
        raise DataError(path, line_no, f"expected 'word ... tag', got {line.strip()!r}")
      sentence.append((cols[0], cols[-1]))
  if sentence:
    sentences.append(tuple(zip(*sentence)))
  return sentences


def to_bioes(tags) -> list:
  return get_tags(get_span_labels(list(tags)), len(tags), LABEL_ENCODING)


def tokenize_and_align(tokenizer, words, cased: bool = False) -> typing.List[list]:
  """Word pieces of ``[CLS] words [SEP]``, one list per word (the reference's ``tokenize_and_align``):
  each word is cleaned, lowercased and accent-stripped unless ``cased``, split on punctuation and
  word-pieced on its own."""
  basic = tokenizer.basic_tokenizer
  out = []
  for word in ["[CLS]"] + list(words) + ["[SEP]"]:
    word = basic._clean_text(word)  # pylint: disable=protected-access
    if word in ("[CLS]", "[SEP]"):
      pieces = [word]
    else:
      if not cased:
        word = basic._run_strip_accents(word.lower())  # pylint: disable=protected-access
      pieces = basic._run_split_on_punc(word)  # pylint: disable=protected-access
    out.append([p for piece in pieces for p in tokenizer.wordpiece_tokenizer.tokenize(piece)])
  return out


def featurize_tagging(task, examples, cased: bool = False, fill: bool = False) -> list:
  """Tagging features of ``task``'s examples; labels are word-aligned, positions point at each word's first
  piece. Words that do not fit are cut: the input ends with [SEP] at the first word whose pieces would overflow.
  With ``fill`` that is the first word whose pieces and the closing [SEP] do not fit in ``max_seq_length``;
  without it, the reference's test, which also counts every word of the sentence (so a sentence of many
  short words loses its last words well before ``max_seq_length`` pieces)."""
  max_len = task.config.max_seq_length
  vocab = task.tokenizer.vocab
  name = task.name
  features = []
  for example in examples:
    words_to_tokens = tokenize_and_align(task.tokenizer, example.words, cased)
    input_ids, positions = [], []
    for word_tokens in words_to_tokens:
      if (len(input_ids) + len(word_tokens) + 1 > max_len if fill
          else len(words_to_tokens) + len(input_ids) + 1 > max_len):
        input_ids.append(vocab["[SEP]"])
        break
      if "[CLS]" not in word_tokens and "[SEP]" not in word_tokens:
        positions.append(len(input_ids))
      input_ids.extend(vocab[t] for t in word_tokens)
    input_ids = input_ids[:max_len]
    positions = [p for p in positions if p < max_len]
    features.append({
        "input_ids": pad(input_ids, max_len), "input_mask": pad([1] * len(input_ids), max_len),
        "segment_ids": pad([1] * len(input_ids), max_len),  # the reference's quirk: all 1
        "task_id": task.task_index, f"{name}_eid": example.eid,
        f"{name}_labels": pad(example.labels[:len(positions)], max_len),
        f"{name}_labels_mask": pad([1.0] * len(positions), max_len, 0.0),
        f"{name}_labeled_positions": pad(positions, max_len)})
  return features


def tagging_feature_specs(task) -> list:
  n = task.config.max_seq_length
  return common_feature_specs(n) + [
      FeatureSpec(f"{task.name}_eid", ()), FeatureSpec(f"{task.name}_labels", (n,)),
      FeatureSpec(f"{task.name}_labels_mask", (n,), np.float32),
      FeatureSpec(f"{task.name}_labeled_positions", (n,))]


class Chunking(Task):
  name = "chunk"
  head_type = "tagging"
  test_splits = ("test",)

  def __init__(self, config, tokenizer):
    super().__init__(config, tokenizer)
    self._label_mapping = None

  @property
  def label_mapping_path(self) -> str:
    return os.path.join(self.config.model_dir, "finetuning_data_cache",
                        ("debug_" if self.config.debug else "") + f"{self.name}_label_mapping.pkl")

  def _sentences(self, split):
    return read_conll(os.path.join(self.data_dir, f"{split}.txt"))

  def label_mapping(self, provided_split=None, provided=None) -> dict:
    """Sorted BIOES tags of every split present -> ids (pickled once, as the reference)."""
    if self._label_mapping is not None:
      return self._label_mapping
    if fileio.exists(self.label_mapping_path):
      with fileio.open_file(self.label_mapping_path, "rb") as f:
        self._label_mapping = pickle.load(f)
      return self._label_mapping
    tags = set()
    for split in ("train", "dev", "test"):
      if split == provided_split:
        sentences = provided
      elif fileio.exists(os.path.join(self.data_dir, f"{split}.txt")):
        sentences = self._sentences(split)
      else:
        continue
      for _, sentence_tags in sentences:
        tags.update(to_bioes(sentence_tags))
    if not tags:
      raise DataError(self.data_dir, None, "no tagged sentences in train/dev/test.txt")
    self._label_mapping = {t: i for i, t in enumerate(sorted(tags))}
    fileio.makedirs(os.path.dirname(self.label_mapping_path))
    tmp = self.label_mapping_path + ".tmp"
    with fileio.open_file(tmp, "wb") as f:
      pickle.dump(self._label_mapping, f)
    fileio.rename(tmp, self.label_mapping_path)
    return self._label_mapping

  def get_examples(self, split):
    sentences = self._sentences(split)
    mapping = self.label_mapping(split, sentences)
    path = os.path.join(self.data_dir, f"{split}.txt")
    examples = []
    for i, (words, tags) in enumerate(sentences):
      bioes = to_bioes(tags)
      unknown = [t for t in bioes if t not in mapping]
      if unknown:
        raise DataError(path, None, f"sentence {i + 1}: tag {unknown[0]!r} is not in the label map "
                        f"{self.label_mapping_path} (delete it if the data changed)")
      examples.append(TaggingExample(i, self.name, words, tags, [mapping[t] for t in bioes]))
    if not examples:
      raise DataError(path, None, "no sentences")
    return examples

  def featurize(self, examples, is_training):
    return featurize_tagging(self, examples)

  def feature_specs(self):
    return tagging_feature_specs(self)

  @property
  def num_outputs(self):
    return len(self.label_mapping())

  def get_scorer(self, split="dev", output_dir=None):
    return EntityLevelF1Scorer(self.label_mapping())
