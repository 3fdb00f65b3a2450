"""Verifies pre-training TFRecords: every record of every shard is read (CRCs), parsed with the feature
shapes of ``metadata.json``, and each shard's record count and SHA-256 are compared with what the builder
recorded; a bad shard is named with the index of its first bad record.

``python data_prep/build_pretraining_dataset.py --verify --output-dir DIR`` runs it; pre-training runs it
over its files when the input pipeline meets a corrupt record, whose error names no file.
"""

import dataclasses
import os
import re
import typing

import numpy as np
import tensorflow as tf

from electra_tf import fileio, runtime, tokenization
from electra_tf.errors import DataPrepError
from electra_tf.pretrain_data import dataset, metadata

FILE_GLOBS = ("pretrain_data.tfrecord*", "pretrain_eval.tfrecord*")
BATCH = 1024  # records parsed per call; a bad batch is re-read one record at a time to find the record
FIXES = ("rebuild the data with data_prep/build_pretraining_dataset.py, or set the pre-training hparam "
         "skip_bad_records to train without the unreadable records")


@dataclasses.dataclass
class ShardCheck:
  """One shard: records read, and the first problem (None: good) with the index of the record (0-based)."""
  path: str
  num_records: int
  problem: typing.Optional[str] = None
  record: typing.Optional[int] = None

  def describe(self) -> str:
    where = self.path if self.record is None else f"{self.path}, record {self.record}"
    return f"{where}: {self.problem}"


@dataclasses.dataclass
class VerifyReport:
  """What ``verify_pretraining_data`` found."""
  where: str
  shards: typing.List[ShardCheck]
  max_seq_length: int
  exact: bool  # metadata.json recorded counts and checksums, and every shard was compared with them

  @property
  def bad(self) -> typing.List[ShardCheck]:
    return [s for s in self.shards if s.problem is not None]

  def raise_if_bad(self):
    """One line: the first bad shard and record, how many others, and the fixes."""
    bad = self.bad
    if not bad:
      return
    more = ""
    if len(bad) > 1:
      names = ", ".join(os.path.basename(s.path) for s in bad[1:4]) + (", ..." if len(bad) > 4 else "")
      more = f"; {len(bad) - 1} more bad shard(s): {names}"
    raise DataPrepError(f"corrupt pre-training data: {bad[0].describe()}{more}; {FIXES}")

  def summary(self) -> str:
    records = sum(s.num_records for s in self.shards)
    how = ("record counts and SHA-256 match metadata.json" if self.exact else
           "no per-shard counts or checksums in metadata.json (built before they were recorded): CRCs and "
           "shapes only")
    return (f"verified {self.where}: {len(self.shards)} shard(s), {records} records, every record readable "
            f"with length-{self.max_seq_length} features; {how}")


def error_text(error) -> str:
  """A TensorFlow error's first line without its function-node prefix and op suffix."""
  text = str(getattr(error, "message", None) or error).strip()
  text = text.splitlines()[0] if text else type(error).__name__
  text = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", text)
  text = text.replace("' failed with ", ": ")  # TFRecord's "truncated record at 306' failed with Read less..."
  return re.sub(r"\s*\[Op:\w+\].*$", "", text)[:200]


def _bad_values(features, vocab_size) -> typing.Optional[typing.Tuple[int, str]]:
  """(row, problem) of the first row with values the model cannot take, or None."""
  checks = [("input_mask", 0, 2), ("segment_ids", 0, 2)]
  if vocab_size:
    checks.append(("input_ids", 0, vocab_size))
  for name, lo, hi in checks:
    values = features[name]
    rows = np.nonzero(((values < lo) | (values >= hi)).any(axis=1))[0]
    if rows.size:
      return int(rows[0]), f"{name} has values outside [{lo}, {hi})"
  return None


def _read_shard(path: str, max_seq_length: int, vocab_size: typing.Optional[int]) -> ShardCheck:
  spec = dataset.feature_spec(max_seq_length)
  done = 0
  try:
    for batch in tf.data.TFRecordDataset(path).batch(BATCH):
      try:
        features = {k: v.numpy() for k, v in tf.io.parse_example(batch, spec).items()}
      except tf.errors.InvalidArgumentError:
        for i, record in enumerate(batch):  # which record: parse them one at a time
          try:
            tf.io.parse_single_example(record, spec)
          except tf.errors.InvalidArgumentError as e:
            return ShardCheck(path, done + i, f"not a {max_seq_length}-long int64 input_ids/input_mask/"
                              f"segment_ids example ({error_text(e)})", done + i)
        raise  # the batch failed but no record alone does: a bug here, not bad data
      bad = _bad_values(features, vocab_size)
      if bad is not None:
        return ShardCheck(path, done + bad[0], bad[1], done + bad[0])
      done += len(features["input_ids"])
  except tf.errors.DataLossError:
    # The error ends the batch it fell in; re-read record by record from the batch's start.
    n = done
    try:
      for _ in tf.data.TFRecordDataset(path).skip(done):
        n += 1
    except tf.errors.DataLossError as e:
      return ShardCheck(path, n, f"unreadable ({error_text(e)})", n)
    return ShardCheck(path, n, "unreadable while read in batches, readable record by record; read it again")
  return ShardCheck(path, done)


def verify_files(files: typing.Sequence[str], max_seq_length: int, vocab_size: typing.Optional[int] = None,
                 expected: typing.Optional[typing.Mapping[str, dict]] = None, trust_checksums: bool = False,
                 stop_at_first: bool = False, progress: bool = False) -> typing.List[ShardCheck]:
  """Checks each file; ``expected``: ``metadata.shard_records`` (by file name), compared when given.

  ``trust_checksums``: a shard whose SHA-256 equals the recorded one is taken as good without parsing
  (quick, for finding a bad shard); ``stop_at_first``: return after the first bad shard.
  """
  expected = expected or {}
  checks = []
  bar = runtime.progress_bar(progress, total=len(files), desc="verifying", unit="shard")
  try:
    for path in files:
      info = expected.get(os.path.basename(path))
      sha = tokenization.file_checksum(path) if info and info.get("sha256") else None
      if trust_checksums and sha is not None and sha == info["sha256"]:
        check = ShardCheck(path, int(info["num_records"]))
      else:
        check = _read_shard(path, max_seq_length, vocab_size)
      if check.problem is None and info:
        want = info.get("num_records")
        if want is not None and check.num_records != int(want):
          check.problem = (f"holds {check.num_records} records but metadata.json recorded {want} (cut short "
                           "at a record boundary, or inside the next record's length header?)")
        elif sha is not None and sha != info["sha256"]:
          check.problem = (f"every record reads, but the bytes differ from the build (sha256 {sha[:12]}... "
                           f"vs {info['sha256'][:12]}... in metadata.json)")
      checks.append(check)
      if bar is not None:
        bar.update(1)
      if stop_at_first and check.problem is not None:
        break
  finally:
    if bar is not None:
      bar.close()
  return checks


def list_shards(data_dir_or_globs) -> typing.List[str]:
  """A data directory (its training and held-out shards) or comma-separated TFRecord globs -> files."""
  if fileio.isdir(str(data_dir_or_globs)):
    globs = [os.path.join(str(data_dir_or_globs), g) for g in FILE_GLOBS]
  else:
    globs = [g.strip() for g in str(data_dir_or_globs).split(",") if g.strip()]
  return sorted({f for g in globs for f in tf.io.gfile.glob(g) if not os.path.basename(f).startswith(".")})


def verify_pretraining_data(data_dir_or_globs, trust_checksums: bool = False, stop_at_first: bool = False,
                            progress: bool = False) -> VerifyReport:
  """Verifies the shards of a data directory (or of TFRecord globs) against its ``metadata.json``.

  For a directory, shards that ``metadata.json`` lists but that are missing are bad too. Without
  ``metadata.json`` the length of the first readable record is taken as everyone's.

  Raises:
    DataPrepError: no such directory or no TFRecords (bad shards are reported, not raised: see
      ``VerifyReport.raise_if_bad``).
  """
  where = str(data_dir_or_globs)
  is_dir = fileio.isdir(where)
  if not is_dir and not any(c in where for c in "*?[,") and not fileio.exists(where):
    raise DataPrepError(f"{where} does not exist; pass the --output-dir the data was built into")
  files = list_shards(where)
  if not files:
    raise DataPrepError(f"no pre-training TFRecords ({', '.join(FILE_GLOBS)}) in {where}; build them with "
                        "data_prep/build_pretraining_dataset.py")
  meta = metadata.read_metadata(where)
  expected = metadata.shard_records(meta)
  max_seq_length = int(meta["max_seq_length"]) if meta else _first_record_length(files)
  checks = verify_files(files, max_seq_length, (meta or {}).get("vocab_size"), expected, trust_checksums,
                        stop_at_first, progress)
  if is_dir and not (stop_at_first and any(c.problem for c in checks)):
    present = {os.path.basename(f) for f in files}
    checks += [ShardCheck(os.path.join(where, name), 0, "missing, though metadata.json lists it")
               for name in sorted(set(expected) - present)]
    if not expected:  # no counts to compare: the names still say how many shards a complete build has
      checks += [ShardCheck(os.path.join(where, name), 0, "missing: the other shards' names count it and "
                            "there is no metadata.json (an incomplete build?)")
                 for name in _unnumbered_shards(present)]
  exact = bool(expected) and all(os.path.basename(c.path) in expected for c in checks)
  return VerifyReport(where, checks, max_seq_length, exact)


def _unnumbered_shards(names) -> typing.List[str]:
  """Names ``PREFIX-i-of-n`` absent from ``names`` though another ``PREFIX-j-of-n`` is there."""
  counts = {}
  for name in names:
    match = re.fullmatch(r"(pretrain_(?:data|eval)\.tfrecord)-(\d+)-of-(\d+)", name)
    if match:
      counts.setdefault((match.group(1), int(match.group(3))), set()).add(int(match.group(2)))
  return [f"{prefix}-{i}-of-{n}" for (prefix, n), have in sorted(counts.items()) for i in range(n)
          if i not in have]


def _first_record_length(files) -> int:
  for path in files:
    try:
      for record in tf.data.TFRecordDataset(path).take(1):
        return len(tf.train.Example.FromString(record.numpy()).features.feature["input_ids"].int64_list.value)
    except tf.errors.DataLossError:
      continue
  raise DataPrepError(f"no readable record in any of the {len(files)} TFRecord file(s) from {files[0]} on, "
                      "and no metadata.json; rebuild the data with data_prep/build_pretraining_dataset.py")
