"""``metadata.json`` beside the TFRecords: what the data was built with, checked before pre-training."""

import json
import logging
import os

from electra_tf import fileio, tokenization
from electra_tf.errors import DataPrepError

METADATA_FILE = "metadata.json"
# 3: each shard also records its size in bytes (``num_bytes``), checked when pre-training starts; 2: each
# split lists its shards with their record counts and SHA-256 (``shards``); 1 had neither. Older formats are
# still read (what they lack is not checked: verification is then by CRC and shapes only).
FORMAT_VERSION = 3


def write_metadata(output_dir, metadata):
  path = os.path.join(output_dir, METADATA_FILE)
  with fileio.open_file(path, "w") as f:
    json.dump(dict(metadata, format_version=FORMAT_VERSION), f, indent=2, sort_keys=True)
    f.write("\n")
  return path


def _metadata_dir(data_dir_or_glob):
  """A data directory, a TFRecord glob or a comma-separated list of globs -> the directory."""
  first = str(data_dir_or_glob).split(",")[0].strip()
  if fileio.isdir(first) and not any(c in first for c in "*?["):
    return first
  matches = sorted(fileio.glob(first))
  return os.path.dirname(matches[0] if matches else first) or "."


def read_metadata(data_dir_or_glob):
  """The metadata dict, or None where the data has none (e.g. built by the reference's script)."""
  path = os.path.join(_metadata_dir(data_dir_or_glob), METADATA_FILE)
  if not fileio.exists(path):
    return None
  try:
    return json.loads(fileio.read_text(path))
  except (OSError, ValueError, fileio.tf.errors.OpError) as e:  # the last: remote paths
    raise DataPrepError(f"pre-training data metadata {path} is unreadable ({e}); rebuild the data with "
                     "data_prep/build_pretraining_dataset.py") from None


def shard_entry(path, num_records: int) -> dict:
  """A written shard's entry in ``metadata.json``: its record count, size and SHA-256."""
  return {"num_records": num_records, "num_bytes": fileio.getsize(path), "sha256": tokenization.file_checksum(path)}


def shard_records(meta) -> dict:
  """``{shard file name: {"num_records": n, "num_bytes": size, "sha256": hex}}`` over every split (no
  ``num_bytes`` before format 3); empty for metadata written before format 2 (or none at all)."""
  shards = {}
  for split in ((meta or {}).get("splits") or {}).values():
    shards.update(split.get("shards") or {})
  return shards


def check_metadata(data_dir_or_glob, vocab_file, do_lower_case, max_seq_length, strip_accents=None,
                   require=False):
  """Checks that pre-training uses the vocab, casing and length the data was built with.

  Args:
    data_dir_or_glob: the output directory of build_pretraining_dataset.py or the TFRecord glob(s)
      (``pretrain_tfrecords`` of the config; comma-separated allowed).
    vocab_file: the vocab / SentencePiece model the model will use (compared by SHA-256).
    do_lower_case, strip_accents: the tokenizer casing the model will use (strip_accents None = follow
      do_lower_case for WordPiece as the reference, off for SentencePiece).
    max_seq_length: the model's max_seq_length; TFRecords hold fixed-length features of exactly this.
    require: raise when there is no metadata (else log a warning and return None).

  Returns:
    The metadata dict, or None where there is none and ``require`` is False.

  Raises:
    ValueError: one line naming the mismatch and the fix.
  """
  meta = read_metadata(data_dir_or_glob)
  where = _metadata_dir(data_dir_or_glob)
  if meta is None:
    msg = (f"no {METADATA_FILE} in {where}: cannot check vocab, casing and max_seq_length; "
           "build the data with data_prep/build_pretraining_dataset.py")
    if require:
      raise DataPrepError(msg)
    logging.warning(msg)
    return None
  fix = "rebuild the data with data_prep/build_pretraining_dataset.py or change the pre-training config"
  if int(meta["max_seq_length"]) != int(max_seq_length):
    raise DataPrepError(f"pre-training data in {where} has max_seq_length {meta['max_seq_length']} but the "
                     f"config has {max_seq_length}; {fix}")
  if not fileio.isfile(str(vocab_file)):
    raise DataPrepError(f"vocab file {vocab_file} not found; pass the vocab the data in {where} was built "
                     f"with ({meta.get('vocab_file')})")
  checksum = tokenization.file_checksum(vocab_file)
  if checksum != meta["vocab_sha256"]:
    raise DataPrepError(f"vocab {vocab_file} differs from the one the data in {where} was built with "
                     f"({meta.get('vocab_file')}, sha256 {meta['vocab_sha256'][:12]}...); {fix}")
  if bool(meta["do_lower_case"]) != bool(do_lower_case):
    raise DataPrepError(f"pre-training data in {where} was built with do_lower_case={meta['do_lower_case']}"
                     f" but the config has do_lower_case={bool(do_lower_case)}; {fix}")
  strip = tokenization.default_strip_accents(meta.get("tokenizer"), do_lower_case, strip_accents)
  if "strip_accents" in meta and bool(meta["strip_accents"]) != strip:
    raise DataPrepError(f"pre-training data in {where} was built with strip_accents={meta['strip_accents']}"
                     f" but the config has strip_accents={strip}; {fix}")
  return meta


def check_shard_sizes(data_dir_or_glob, meta, files):
  """Each of ``files`` that ``meta`` (read from ``data_dir_or_glob``) lists has the size the build recorded:
  a shard cut short, even at a record boundary where it reads without error, or changed since. Costs a stat
  per file; the records themselves are checked by ``--verify``."""
  recorded, where = shard_records(meta), os.path.normpath(_metadata_dir(data_dir_or_glob))
  for path in files:
    info = recorded.get(os.path.basename(path))
    if info is None or "num_bytes" not in info or os.path.normpath(os.path.dirname(path) or ".") != where:
      continue
    size = fileio.getsize(path)
    if size != int(info["num_bytes"]):
      raise DataPrepError(
          f"pre-training data {path} is {size:,} bytes but {METADATA_FILE} recorded {int(info['num_bytes']):,} "
          f"(cut short or changed since the build); check every shard with `python "
          f"data_prep/build_pretraining_dataset.py --verify --output-dir {os.path.dirname(path) or '.'}`, "
          "rebuild the data, or set the hparam skip_bad_records to train on what it holds")
