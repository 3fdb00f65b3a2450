"""Reads pre-training TFRecords like the reference's ``pretrain_helpers``/``run_pretraining`` input_fn."""

import os
import sys

import tensorflow as tf

from electra_tf.errors import DataPrepError
from electra_tf.pretrain_data import metadata


def feature_spec(max_seq_length):
  """The reference's TFRecord features: three int64 lists of length max_seq_length."""
  return {
      "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
  }


def list_files(file_patterns):
  """Comma-separated string or list of globs -> sorted list of files (ValueError if none match)."""
  if isinstance(file_patterns, str):
    file_patterns = file_patterns.split(",")
  files = []
  for pattern in file_patterns:
    if pattern.strip():
      files.extend(sorted(tf.io.gfile.glob(pattern.strip())))
  if not files:
    raise DataPrepError(f"no pre-training TFRecords match {','.join(file_patterns)}; build them with "
                     "data_prep/build_pretraining_dataset.py and pass their glob")
  return files


def check_tfrecords(files, max_seq_length):
  """Reads and parses the first record of every non-empty file; one-line ValueError if one is corrupt."""
  spec = feature_spec(max_seq_length)
  for path in files:
    try:
      for record in tf.data.TFRecordDataset(path).take(1):
        tf.io.parse_single_example(record, spec)
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
      reason = str(e.message if hasattr(e, "message") else e).splitlines()[0][:160]
      raise DataPrepError(f"corrupt or incompatible pre-training TFRecord {path} ({reason}); expected "
                       f"int64 features input_ids/input_mask/segment_ids of length {max_seq_length}; "
                       "rebuild with data_prep/build_pretraining_dataset.py") from None


def _decode_record(record, spec):
  example = tf.io.parse_single_example(record, spec)
  # tf.Example stores int64; the model (and TPUs in the reference) want int32.
  return {name: tf.cast(t, tf.int32) for name, t in example.items()}


def _shard_skipping_bad_records(path, expected, spec, max_seq_length):
  """One shard's decoded examples without the records that cannot be read or parsed (an unreadable one
  ends the shard: TFRecord framing cannot be picked up again after it). When the shard ends with fewer
  examples than metadata.json recorded (``expected``; -1: unknown), a warning names it and the count."""
  examples = tf.data.TFRecordDataset(path).map(lambda r: _decode_record(r, spec)).ignore_errors()
  blank = {k: tf.zeros([max_seq_length], tf.int32) for k in spec}
  marked = examples.map(lambda ex: (ex, False)).concatenate(tf.data.Dataset.from_tensors((blank, True)))

  def count(n, item):
    _, end = item
    if end and n < expected:
      tf.print("warning: skip_bad_records: skipped", expected - n, "of", expected, "records of", path,
               "(unreadable or mis-shaped)", output_stream=sys.stderr)
    return n + tf.cast(tf.logical_not(end), tf.int64), item

  return (marked.scan(tf.constant(0, tf.int64), count)
          .filter(lambda ex, end: tf.logical_not(end)).map(lambda ex, end: ex))


def _decode_batch(records, spec):
  """A batch of serialized examples -> int32 features: one vectorized parse (the per-record parse of the
  reference gives the same values at a fraction of the speed)."""
  return {name: tf.cast(t, tf.int32) for name, t in tf.io.parse_example(records, spec).items()}


def pretraining_dataset(file_patterns, max_seq_length, batch_size, is_training=True, num_cpu_threads=4,
                        repeat=True, seed=None, check_files=True, skip_bad_records=False, skip_batches=0):
  """The reference input_fn: repeat -> shuffle files -> interleave -> shuffle(100) -> batch.

  Args:
    file_patterns: comma-separated string or list of TFRecord globs.
    max_seq_length: length of the stored features (must match the data; see check_metadata).
    batch_size: examples per batch; the last partial batch is dropped (drop_remainder, as the reference).
    is_training: deterministic (non-sloppy) interleave when False.
    num_cpu_threads: interleave cycle length is min(num_cpu_threads, number of files) (reference: 4).
    repeat: repeat forever (the reference does so for training and eval); False gives one pass.
    seed: optional seed for the two shuffles.
    check_files: parse the first record of every file up front for a clear error on corrupt data.
    skip_bad_records: drop records that cannot be read or parsed instead of failing (the rest of a shard
      after an unreadable record is lost); a shard that gave fewer records than metadata.json recorded is
      reported on stderr with the count each time it is read. Otherwise the same examples in the same
      order.
    skip_batches: batches to leave out at the start, dropped before they are parsed (replaying the stream
      to a resumed run's position costs reading, not decoding).

  Returns:
    tf.data.Dataset of dicts ``input_ids``, ``input_mask``, ``segment_ids``: int32 [batch_size,
    max_seq_length]. A record corrupted past the first one surfaces as tf.errors.DataLossError
    (``verify.verify_pretraining_data`` finds it).
  """
  files = list_files(file_patterns)
  if check_files and not skip_bad_records:
    check_tfrecords(files, max_seq_length)
  spec = feature_spec(max_seq_length)
  if skip_bad_records:
    counts = metadata.shard_records(metadata.read_metadata(files[0]))
    expected = [int(counts.get(os.path.basename(f), {}).get("num_records", -1)) for f in files]
    d = tf.data.Dataset.from_tensor_slices((tf.constant(files), tf.constant(expected, tf.int64)))
  else:
    d = tf.data.Dataset.from_tensor_slices(tf.constant(files))
  if repeat:
    d = d.repeat()
  d = d.shuffle(buffer_size=len(files), seed=seed)
  # With skip_bad_records each shard is decoded inside, so that a record that fails to parse is dropped too.
  read_shard = ((lambda f, n: _shard_skipping_bad_records(f, n, spec, max_seq_length)) if skip_bad_records
                else tf.data.TFRecordDataset)
  d = d.interleave(read_shard, cycle_length=min(num_cpu_threads, len(files)),
                   num_parallel_calls=tf.data.AUTOTUNE, deterministic=not is_training)
  d = d.shuffle(buffer_size=100, seed=seed)
  d = d.batch(batch_size, drop_remainder=True)
  if skip_batches:
    d = d.skip(skip_batches)
  if not skip_bad_records:
    d = d.map(lambda r: _decode_batch(r, spec), num_parallel_calls=num_cpu_threads)
  else:  # skip_bad_records' shards print what they lost: state-free, so the iterator may still be saved
    options = tf.data.Options()
    options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.IGNORE
    d = d.with_options(options)
  return d.prefetch(tf.data.AUTOTUNE)
