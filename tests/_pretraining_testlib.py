"""Tiny real-text pre-training data for the pre-training tests: WikiText-2 with the BERT vocab.

Examples are packed greedily into ``[CLS] A [SEP] B [SEP]`` of ``max_seq_length`` from consecutive
WikiText lines (tokenized with the reference's FullTokenizer), written as the reference's TFRecord
features with the metadata the trainer checks.
"""

import gzip
import json
import os
import pathlib

import numpy as np

from conftest import TINY_MODEL
from electra_tf.pretraining.masking import SpecialIds



def _wikitext_lines(data_dir: pathlib.Path, split: str, max_lines: int):
  with gzip.open(data_dir / "corpus" / "wikitext-2" / f"{split}.raw.gz", "rt", encoding="utf-8") as f:
    for i, line in enumerate(f):
      if i >= max_lines:
        break
      line = line.strip()
      if line and not line.startswith("="):
        yield line


def frequent_pieces_vocab(tokenizer, lines, top_k):
  """The 5 special tokens, then the ``top_k`` most frequent word pieces of ``lines``."""
  from collections import Counter
  special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  counts = Counter(t for line in lines for t in tokenizer.tokenize(line) if t not in special)
  return special + [t for t, _ in counts.most_common(top_k)]


def build_tfrecords(out_dir: pathlib.Path, data_dir: pathlib.Path, vocab_file: pathlib.Path,
                    max_seq_length: int = 32, max_lines: int = 600, num_files: int = 2,
                    heldout: bool = True, top_k: int = 0) -> pathlib.Path:
  """Writes ``out_dir/pretrain_tfrecords`` (+ held-out ``pretrain_eval.tfrecord*``) and ``out_dir/vocab.txt``.

  ``top_k`` > 0: the vocab is the 5 special tokens plus the ``top_k`` most frequent word pieces of the
  text (the rest become [UNK]), so a tiny model sees every token often. Returns out_dir.
  """
  import tensorflow as tf
  from electra_tf import tokenization
  from electra_tf.pretrain_data import metadata

  out_dir = pathlib.Path(out_dir)
  rec_dir = out_dir / "pretrain_tfrecords"
  rec_dir.mkdir(parents=True, exist_ok=True)
  vocab_copy = out_dir / "vocab.txt"
  tok = tokenization.FullTokenizer(str(vocab_file), do_lower_case=True)
  remap = None
  if top_k:
    tokens = frequent_pieces_vocab(tok, _wikitext_lines(data_dir, "train", max_lines), top_k)
    vocab_copy.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    remap = {t: i for i, t in enumerate(tokens)}
  else:
    vocab_copy.write_bytes(pathlib.Path(vocab_file).read_bytes())
  if remap:
    cls, sep = remap["[CLS]"], remap["[SEP]"]
  else:
    cls, sep = tok.vocab["[CLS]"], tok.vocab["[SEP]"]

  def to_ids(tokens):
    return [remap.get(t, 1) for t in tokens] if remap else tok.convert_tokens_to_ids(tokens)

  def examples(split, limit):
    cur = []
    for line in _wikitext_lines(data_dir, split, limit):
      ids = to_ids(tok.tokenize(line))
      while ids:
        room = max_seq_length - 2 - len(cur)
        cur.extend(ids[:room])
        ids = ids[room:]
        if len(cur) >= max_seq_length - 2:
          yield [cls] + cur + [sep]
          cur = []
    if cur:
      yield [cls] + cur + [sep]

  def write(path_pattern, split, limit, files):
    writers = [tf.io.TFRecordWriter(str(path_pattern.format(i=i, n=files))) for i in range(files)]
    count = 0
    for count, ids in enumerate(examples(split, limit), 1):
      pad = max_seq_length - len(ids)
      feats = {"input_ids": ids + [0] * pad, "input_mask": [1] * len(ids) + [0] * pad,
               "segment_ids": [0] * max_seq_length}
      ex = tf.train.Example(features=tf.train.Features(feature={
          k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in feats.items()}))
      writers[count % files].write(ex.SerializeToString())
    for w in writers:
      w.close()
    return count

  n = write(str(rec_dir / "pretrain_data.tfrecord-{i}-of-{n}"), "train", max_lines, num_files)
  if heldout:
    write(str(rec_dir / "pretrain_eval.tfrecord-{i}-of-{n}"), "valid", max_lines // 3, 1)
  metadata.write_metadata(str(rec_dir), {"max_seq_length": max_seq_length, "do_lower_case": True,
                                         "strip_accents": True, "vocab_file": str(vocab_copy),
                                         "vocab_sha256": tokenization.file_checksum(str(vocab_copy)),
                                         "num_examples": n})
  return out_dir


def tiny_hparams(**extra) -> dict:
  """A tiny ELECTRA on the real 30522-token vocab: H 32, 1 layer, batch 8, length 32, no warmup."""
  hp = {"model_hparam_overrides": dict(TINY_MODEL), "embedding_size": 32, "max_seq_length": 32,
        "train_batch_size": 8, "eval_batch_size": 8, "num_train_steps": 40, "num_warmup_steps": 0,
        "learning_rate": 2e-3, "iterations_per_loop": 10, "save_checkpoints_steps": 20,
        "num_eval_steps": 4, "generator_hidden_size": 1.0}
  hp.update(extra)
  return hp


def token_batch(rows=64, length=32, seed=0, special=None):
  """Random BERT-id rows of 6..length real tokens: [CLS] ... [SEP] ... [SEP], then padding.
  Returns (ids, input_mask), int32 [rows, length]."""
  special = special or SpecialIds()
  rng = np.random.default_rng(seed)
  lengths = rng.integers(6, length + 1, rows)
  ids = np.zeros([rows, length], np.int32)
  for r, n in enumerate(lengths):
    ids[r, :n] = rng.integers(1000, 2000, n)
    ids[r, 0], ids[r, n - 1] = special.cls, special.sep
    ids[r, n // 2] = special.sep  # a second segment boundary
  mask = (np.arange(length)[None] < lengths[:, None]).astype(np.int32)
  return ids, mask
