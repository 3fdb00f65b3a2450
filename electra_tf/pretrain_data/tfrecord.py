"""Pre-training examples as TFRecord files, written without TensorFlow.

``encode_examples`` turns a chunk's padded examples into the bytes of
``tf.train.Example(...).SerializeToString(deterministic=True)`` (three int64 features ``input_ids``,
``input_mask``, ``segment_ids``, keys in sorted order), with NumPy over the whole chunk at once instead of
one protobuf message per example. ``TFRecordWriter`` frames records as TensorFlow's
writer does: the length (8 bytes, little-endian), its masked CRC32C, the data, the data's masked CRC32C.
Both give TensorFlow's bytes exactly (tests/test_tfrecord.py), so the files read back with
``tf.data.TFRecordDataset`` and equal those of ``tf.io.TFRecordWriter``; building from local text thereby
never imports TensorFlow (whose import takes longer than building WikiText-2 does).
"""

import struct

import google_crc32c
import numpy as np

from electra_tf import fileio

FEATURES = ("input_ids", "input_mask", "segment_ids")  # sorted: the order of deterministic serialization
_MASK_DELTA = 0xA282EAD8


def masked_crc32c(data: bytes) -> int:
  """TFRecord's checksum: CRC32C, rotated right by 15 bits, plus a constant (mod 2**32)."""
  crc = google_crc32c.value(data)
  return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
  """One record as it sits in a TFRecord file."""
  header = struct.pack("<Q", len(record))
  return b"".join((header, struct.pack("<I", masked_crc32c(header)), record,
                   struct.pack("<I", masked_crc32c(record))))


class TFRecordWriter:
  """An uncompressed TFRecord file (``write`` serialized records, then ``close``; or ``with``), on any
  filesystem ``fileio`` knows (``gs://`` through TensorFlow's)."""

  def __init__(self, path: str):
    self._file = fileio.open_file(path, "wb")

  def write(self, record: bytes):
    self._file.write(frame(record))

  def close(self):
    self._file.close()

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.close()


def _varint(n: int) -> bytes:
  out = bytearray()
  while n >= 0x80:
    out.append((n & 0x7F) | 0x80)
    n >>= 7
  out.append(n)
  return bytes(out)


_SMALL_VARINTS = [_varint(n) for n in range(1 << 14)]


def varint(n: int) -> bytes:
  return _SMALL_VARINTS[n] if n < len(_SMALL_VARINTS) else _varint(n)


def packed_varints(values: np.ndarray):
  """[n, L] non-negative integers -> (bytes of every row's varints, one row after another; [n] byte counts)."""
  n, length = values.shape
  if values.size == 0:
    return b"", np.zeros([n], np.int64)
  if values.min() < 0:
    raise ValueError("feature values must be non-negative (token, mask and segment ids)")
  top = int(values.max())
  if top < 0x80:  # one byte each (masks, segment ids)
    return values.astype(np.uint8).tobytes(), np.full([n], length, np.int64)
  width = (top.bit_length() + 6) // 7
  v = values.astype(np.uint32 if top < 1 << 32 else np.uint64)
  positions = np.arange(width, dtype=v.dtype)
  nbytes = np.ones(v.shape, np.int64)
  for k in range(1, width):
    nbytes += v >= v.dtype.type(1 << (7 * k))
  groups = ((v[..., None] >> (positions * v.dtype.type(7))) & v.dtype.type(0x7F)).astype(np.uint8)
  groups |= np.where(positions < nbytes[..., None] - 1, 0x80, 0).astype(np.uint8)  # continuation bits
  return groups[positions < nbytes[..., None]].tobytes(), nbytes.sum(axis=1)


def _entry_prefix(key: bytes, size: int) -> bytes:
  """The bytes before an Int64List's packed varints (``size`` bytes of them) in its ``map<string, Feature>``
  entry of ``Features``: entry(key, Feature(int64_list=Int64List(value)))."""
  int64_list_header = b"\x0a" + varint(size) if size else b""  # proto3 leaves an empty packed field out
  int64_list_size = len(int64_list_header) + size
  feature_size = 1 + len(varint(int64_list_size)) + int64_list_size
  entry_size = 1 + len(varint(len(key))) + len(key) + 1 + len(varint(feature_size)) + feature_size
  return (b"\x0a" + varint(entry_size) + b"\x0a" + varint(len(key)) + key + b"\x12" + varint(feature_size) +
          b"\x1a" + varint(int64_list_size) + int64_list_header)


def encode_examples(input_ids: np.ndarray, segment_ids: np.ndarray, lengths: np.ndarray):
  """Padded examples ([n, L] ids and segment ids, [n] unpadded lengths) -> their serialized
  ``tf.train.Example``s (``input_mask``: 1 over the first ``length`` positions)."""
  input_ids, segment_ids = np.asarray(input_ids), np.asarray(segment_ids)
  mask = (np.arange(input_ids.shape[1])[None, :] < np.asarray(lengths)[:, None]).astype(np.int64)
  parts = []
  totals = np.zeros([len(input_ids)], np.int64)
  for key, values in zip(FEATURES, (input_ids, mask, segment_ids)):
    data, sizes = packed_varints(values)
    prefix_of = {size: _entry_prefix(key.encode(), size) for size in np.unique(sizes).tolist()}
    prefixes = [prefix_of[size] for size in sizes.tolist()]
    ends = np.cumsum(sizes)
    totals += sizes + np.fromiter(map(len, prefixes), np.int64, len(prefixes))
    parts.append((prefixes, data, (ends - sizes).tolist(), ends.tolist()))
  (pa, da, sa, ea), (pb, db, sb, eb), (pc, dc, sc, ec) = parts
  return [b"".join((b"\x0a", varint(total), pa[i], da[sa[i]:ea[i]], pb[i], db[sb[i]:eb[i]], pc[i],
                    dc[sc[i]:ec[i]]))
          for i, total in enumerate(totals.tolist())]
