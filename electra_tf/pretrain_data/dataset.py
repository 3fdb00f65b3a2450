"""Reads pre-training TFRecords like the reference's ``pretrain_helpers``/``run_pretraining`` input_fn."""

import tensorflow as tf

from electra_tf.errors import DataPrepError


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


def pretraining_dataset(file_patterns, max_seq_length, batch_size, is_training=True, num_cpu_threads=4,
                        repeat=True, seed=None, check_files=True):
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

  Returns:
    tf.data.Dataset of dicts ``input_ids``, ``input_mask``, ``segment_ids``: int32 [batch_size,
    max_seq_length]. A record corrupted past the first one surfaces as tf.errors.DataLossError.
  """
  files = list_files(file_patterns)
  if check_files:
    check_tfrecords(files, max_seq_length)
  spec = feature_spec(max_seq_length)
  d = tf.data.Dataset.from_tensor_slices(tf.constant(files))
  if repeat:
    d = d.repeat()
  d = d.shuffle(buffer_size=len(files), seed=seed)
  d = d.interleave(tf.data.TFRecordDataset, cycle_length=min(num_cpu_threads, len(files)),
                   num_parallel_calls=tf.data.AUTOTUNE, deterministic=not is_training)
  d = d.shuffle(buffer_size=100, seed=seed)
  d = d.map(lambda r: _decode_record(r, spec), num_parallel_calls=num_cpu_threads)
  d = d.batch(batch_size, drop_remainder=True)
  return d.prefetch(tf.data.AUTOTUNE)
