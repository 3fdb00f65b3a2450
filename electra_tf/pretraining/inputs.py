"""The pre-training job's inputs: data checks, training and held-out files, the input pipeline.

``global_batches`` is the input of training and evaluation: one deterministic stream of *global* batches,
read by a local iterator (whose position training checkpoints: ``runtime.checkpointing``); replicas take
their rows of each batch inside the compiled loop and the evaluator, so a run on any topology sees the
examples one device would, and a resumed run continues the stream where it stopped.
"""

import logging
import os
import typing

import tensorflow as tf

from electra_tf.configs import PretrainingConfig
from electra_tf.errors import DataPrepError, PretrainingError
from electra_tf.pretrain_data import dataset, metadata, verify

log = logging.getLogger("electra_tf.pretraining")

HELDOUT_GLOB = "pretrain_eval.tfrecord*"


def check_data(cfg: PretrainingConfig) -> typing.List[str]:
  """The TFRecords exist, were built with this vocab, casing and max_seq_length, and have the sizes their build
  recorded (unless ``skip_bad_records``); a held-out split to evaluate on is not empty. Returns the files."""
  try:
    files = dataset.list_files(cfg.pretrain_tfrecords)
  except DataPrepError:
    raise PretrainingError(f"no pre-training data matches {cfg.pretrain_tfrecords}; build it with "
                           "data_prep/build_pretraining_dataset.py --output-dir <data-dir>/pretrain_tfrecords "
                           "or pass --data-dir") from None
  try:
    meta = metadata.check_metadata(cfg.pretrain_tfrecords, cfg.vocab_file, cfg.do_lower_case, cfg.max_seq_length)
    if meta is not None and not cfg.skip_bad_records:  # skip_bad_records trains on what the shards hold
      metadata.check_shard_sizes(cfg.pretrain_tfrecords, meta, files)
  except DataPrepError as e:
    raise PretrainingError(str(e)) from None
  if cfg.do_eval or cfg.eval_every_steps:
    _heldout_files(cfg)
  return files


def _heldout_dir(cfg: PretrainingConfig) -> str:
  return os.path.dirname(cfg.pretrain_tfrecords.split(",")[0])


def _heldout_files(cfg: PretrainingConfig) -> typing.List[str]:
  """The held-out split's files (none without one); a split without a record is an error: evaluation would wait
  for a batch forever."""
  pattern = os.path.join(_heldout_dir(cfg), HELDOUT_GLOB)
  files = tf.io.gfile.glob(pattern)
  if files and not any(tf.io.gfile.stat(f).length for f in files):
    raise PretrainingError(f"the held-out split {pattern} holds no examples (its --eval-fraction took no "
                           "document); rebuild the data with more documents or a larger --eval-fraction, or "
                           "delete those files to evaluate on the training files")
  return files


def heldout_patterns(cfg: PretrainingConfig) -> str:
  """Evaluation files: the held-out ``pretrain_eval.tfrecord*`` that build_pretraining_dataset.py writes
  with ``--eval-fraction`` beside the training files, else the training files themselves (what the
  reference does; it has no held-out set)."""
  pattern = os.path.join(_heldout_dir(cfg), HELDOUT_GLOB)
  if _heldout_files(cfg):
    return pattern
  log.warning("no held-out split next to %s: evaluating on the training files, as the reference does",
              cfg.pretrain_tfrecords.split(",")[0])
  return cfg.pretrain_tfrecords


def train_files(cfg: PretrainingConfig) -> typing.List[str]:
  """The files ``pretrain_tfrecords`` matches, minus the held-out split a broad glob may also match."""
  heldout = set(tf.io.gfile.glob(os.path.join(_heldout_dir(cfg), HELDOUT_GLOB)))
  files = [f for f in dataset.list_files(cfg.pretrain_tfrecords) if f not in heldout]
  if not files:
    raise PretrainingError(f"{cfg.pretrain_tfrecords} matches only the held-out split; point "
                           "pretrain_tfrecords at the training files (pretrain_data.tfrecord*)")
  return files


def data_loss_error(cfg: PretrainingConfig, error: Exception, last_checkpoint) -> PretrainingError:
  """The input pipeline met a corrupt record (its error names no file): the shard and record, found by
  verifying the files now, the checkpoint that stays, and the ways out, in one line."""
  log.warning("a pre-training TFRecord is corrupt; reading the files to find it")
  patterns = ",".join([cfg.pretrain_tfrecords, os.path.join(_heldout_dir(cfg), HELDOUT_GLOB)])
  try:
    bad = verify.verify_pretraining_data(patterns, trust_checksums=True, stop_at_first=True).bad
  except DataPrepError:
    bad = []
  where = (bad[0].describe() if bad else
           f"{verify.error_text(error)} (no shard shows it when read again: a storage or network fault?)")
  return PretrainingError(
      f"corrupt pre-training data: {where}; stopped, the last good checkpoint ({last_checkpoint or 'none'}) "
      f"is kept. Check every shard with `python data_prep/build_pretraining_dataset.py --verify --output-dir "
      f"{_heldout_dir(cfg) or '.'}`, rebuild the data, or set the hparam skip_bad_records to train without "
      "unreadable records")


def _warn_skip_bad_records(patterns):
  first = patterns[0] if isinstance(patterns, (list, tuple)) else patterns
  counted = metadata.shard_records(metadata.read_metadata(first))
  log.warning("skip_bad_records: unreadable or mis-shaped records are skipped%s",
              "; a shard that loses some is reported with the count" if counted else
              " uncounted (metadata.json has no per-shard record counts: rebuild the data to count them)")


def global_batches(cfg: PretrainingConfig, patterns, global_batch: int, seed: int,
                   skip_batches: int = 0) -> tf.data.Dataset:
  """The deterministic stream of global batches training reads (one batch per step since step 0).

  ``skip_batches``: batches to leave out at the start, unparsed (replaying to a position that a checkpoint
  without the iterator's state did not record). ``cfg.skip_bad_records``: unreadable records are dropped
  (and counted, where metadata.json has counts).
  """
  if cfg.skip_bad_records:
    _warn_skip_bad_records(patterns)
  return dataset.pretraining_dataset(patterns, cfg.max_seq_length, global_batch,
                                     is_training=False,  # deterministic order: exact resume and replays
                                     seed=seed, check_files=False, skip_bad_records=cfg.skip_bad_records,
                                     skip_batches=skip_batches)
