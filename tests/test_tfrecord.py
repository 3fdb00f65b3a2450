"""The TensorFlow-free TFRecord writer against TensorFlow's own serializer, writer and reader."""

import gzip

import numpy as np
import pytest

from conftest import require_module
from electra_tf import tokenization
from electra_tf.pretrain_data import build, tfrecord

tf = require_module("tensorflow")


def _tf_example(input_ids, segment_ids, length):
  """What the builder wrote with TensorFlow before: sorted map keys (deterministic) in every process."""
  mask = [1] * int(length) + [0] * (len(input_ids) - int(length))
  feature = lambda values: tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))
  return tf.train.Example(features=tf.train.Features(feature={
      "input_ids": feature(input_ids), "input_mask": feature(mask), "segment_ids": feature(segment_ids),
  })).SerializeToString(deterministic=True)


def _wikitext_examples(data_dir, bert_vocab, max_seq_length=128):
  with gzip.open(data_dir / "corpus" / "wikitext-2" / "valid.raw.gz", "rt", encoding="utf-8") as f:
    lines = f.read().split("\n")
  docs = [[line] for line in lines if line.strip()]
  tok = tokenization.FullTokenizer(bert_vocab, True)
  result = build.process_chunk(tok, 0, docs, seed=0, max_seq_length=max_seq_length, eval_fraction=0.1)
  return result.splits


def test_crc32c_known_value():
  # CRC-32C (Castagnoli) of "123456789" is 0xE3069283 (RFC 3720's check value); TFRecord masks it.
  crc = 0xE3069283
  assert tfrecord.masked_crc32c(b"123456789") == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_examples_equal_tensorflows_serialization_on_real_text(data_dir, bert_vocab):
  splits = _wikitext_examples(data_dir, bert_vocab)
  for ids, seg, lengths in splits.values():
    assert len(ids) > 100
    assert tfrecord.encode_examples(ids, seg, lengths) == [
        _tf_example(i, s, n) for i, s, n in zip(ids, seg, lengths)]


@pytest.mark.parametrize("top", [1, 127, 128, 16383, 16384, 2**21, 2**35, 2**63 - 1])
def test_examples_equal_tensorflows_serialization_at_every_varint_width(top):
  rng = np.random.default_rng(top % 1000)
  n, length = 40, 16
  ids = rng.integers(0, top, (n, length), dtype=np.int64, endpoint=True)
  ids[0, :] = top
  ids[1, :] = 0
  seg = rng.integers(0, 2, (n, length))
  lengths = rng.integers(0, length + 1, n)  # length 0: an all-zero mask
  assert tfrecord.encode_examples(ids, seg, lengths) == [
      _tf_example(i, s, k) for i, s, k in zip(ids, seg, lengths)]


def test_an_empty_chunk_gives_no_records():
  assert tfrecord.encode_examples(np.zeros([0, 8], np.int64), np.zeros([0, 8], np.int64), []) == []


def test_negative_values_are_refused():
  with pytest.raises(ValueError, match="non-negative"):
    tfrecord.encode_examples(np.array([[5, -1]]), np.zeros([1, 2], np.int64), [2])


def test_files_equal_tensorflows_writer_and_read_back(tmp_path, data_dir, bert_vocab):
  ids, seg, lengths = _wikitext_examples(data_dir, bert_vocab, max_seq_length=64)["train"]
  records = tfrecord.encode_examples(ids, seg, lengths)
  with tfrecord.TFRecordWriter(str(tmp_path / "ours")) as writer:
    for record in records:
      writer.write(record)
  with tf.io.TFRecordWriter(str(tmp_path / "tf")) as writer:
    for record in records:
      writer.write(record)
  assert (tmp_path / "ours").read_bytes() == (tmp_path / "tf").read_bytes()
  spec = {k: tf.io.FixedLenFeature([64], tf.int64) for k in tfrecord.FEATURES}
  read = [tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(str(tmp_path / "ours"))]
  assert len(read) == len(ids)
  for k in (0, len(ids) // 2, len(ids) - 1):
    assert read[k]["input_ids"].numpy().tolist() == ids[k].tolist()
    assert read[k]["segment_ids"].numpy().tolist() == seg[k].tolist()
    assert int(read[k]["input_mask"].numpy().sum()) == lengths[k]
