"""The pre-training input pipeline alone, and how long a resumed run waits for its first batch.

    python benchmarks/input_pipeline.py                      # Small and Base settings, both figures
    python benchmarks/input_pipeline.py --settings small --resume-steps 0,2000

1. **Throughput**: TFRecords -> parsed, batched int32 features on the host, as training reads them
   (``inputs.global_batches``: repeat, file shuffle, deterministic interleave, shuffle(100), batch, one
   vectorized parse per batch), in sequences/s. Synthetic records of the setting's length in 8 shards.
2. **Time to the first batch of a resumed run**, at step 0 and at a late step, for the setting's batch:
   ``state`` restores the input iterator's position from a checkpoint (what training does), ``replay``
   re-reads the stream up to the position without parsing it (the fallback for a checkpoint without the
   position), ``replay_parsed`` parses and batches every skipped batch (a replay that parses, for
   comparison). The rest of a resume (building the model, restoring weights) does not depend
   on the step.

Prints one Markdown table per figure with the machine (cores, matmul peak) and the command.
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SETTINGS = {"small": (128, 128), "base": (512, 256)}  # (max_seq_length, the paper's batch)


def write_records(directory: str, seq_len: int, records: int, shards: int = 8):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  os.makedirs(directory, exist_ok=True)
  writers = [tf.io.TFRecordWriter(os.path.join(directory, f"pretrain_data.tfrecord-{i}-of-{shards}"))
             for i in range(shards)]
  for r in range(records):
    n = int(rng.integers(seq_len // 2, seq_len + 1))
    ids = [101] + rng.integers(1000, 30000, n - 2).tolist() + [102] + [0] * (seq_len - n)
    feats = {"input_ids": ids, "input_mask": [1] * n + [0] * (seq_len - n), "segment_ids": [0] * seq_len}
    ex = tf.train.Example(features=tf.train.Features(feature={
        k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in feats.items()}))
    writers[r % shards].write(ex.SerializeToString())
  for w in writers:
    w.close()
  return os.path.join(directory, "pretrain_data.tfrecord*")


def _config(pattern, seq_len, batch):
  import types  # pylint: disable=g-import-not-at-top
  return types.SimpleNamespace(max_seq_length=seq_len, skip_bad_records=False, pretrain_tfrecords=pattern,
                               train_batch_size=batch)


def throughput(pattern, seq_len, batch, seconds: float) -> float:
  from electra_tf.pretraining import inputs  # pylint: disable=g-import-not-at-top
  it = iter(inputs.global_batches(_config(pattern, seq_len, batch), pattern, batch, seed=1))
  for _ in range(3):
    next(it)
  n, start = 0, time.perf_counter()
  while time.perf_counter() - start < seconds:
    next(it)
    n += 1
  return n * batch / (time.perf_counter() - start)


def first_batch_seconds(pattern, seq_len, batch, step: int, how: str, work: str) -> float:
  """Seconds from a fresh iterator to the first batch of ``step`` (the position restored or replayed)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from electra_tf.pretrain_data import dataset  # pylint: disable=g-import-not-at-top
  from electra_tf.pretraining import inputs  # pylint: disable=g-import-not-at-top
  cfg = _config(pattern, seq_len, batch)
  prefix = None
  if how == "state":  # a checkpoint taken at ``step`` by an earlier run (not timed)
    it = iter(inputs.global_batches(cfg, pattern, batch, seed=1))
    for _ in range(step):
      next(it)
    prefix = tf.train.Checkpoint(input_iterator=it).write(os.path.join(work, f"state_{step}", "ckpt"))
    del it
  start = time.perf_counter()
  if how == "state":
    it = iter(inputs.global_batches(cfg, pattern, batch, seed=1))
    tf.train.Checkpoint(input_iterator=it).read(prefix).assert_consumed()
  elif how == "replay":
    it = iter(inputs.global_batches(cfg, pattern, batch, seed=1, skip_batches=step))
  else:  # replay_parsed: skip after parsing and batching
    it = iter(dataset.pretraining_dataset(pattern, seq_len, batch, is_training=False, seed=1,
                                          check_files=False).skip(step))
  next(it)
  return time.perf_counter() - start


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--settings", default="small,base")
  ap.add_argument("--records", type=int, default=20000, help="synthetic records per setting (the stream repeats)")
  ap.add_argument("--seconds", type=float, default=10.0, help="timed seconds per throughput figure")
  ap.add_argument("--resume-steps", default="0,2000", help="steps to resume at (0 and a late one)")
  ap.add_argument("--resume-settings", default="base", help="settings whose resume times are measured")
  args = ap.parse_args(argv)
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  from pretrain import matmul_peak_tflops  # pylint: disable=g-import-not-at-top
  print(f"machine: {os.cpu_count()} cores, float32 matmul peak {matmul_peak_tflops('float32', 2048):.3f} TFLOP/s")
  print("command: python benchmarks/input_pipeline.py " + " ".join(argv or sys.argv[1:]))
  steps = [int(s) for s in args.resume_steps.split(",")]
  with tempfile.TemporaryDirectory() as work:
    print("\n| setting | length | batch | sequences/s |\n|---|---:|---:|---:|")
    patterns = {}
    for name in args.settings.split(","):
      seq_len, batch = SETTINGS[name]
      patterns[name] = write_records(os.path.join(work, name), seq_len, args.records)
      print(f"| {name} | {seq_len} | {batch} | {throughput(patterns[name], seq_len, batch, args.seconds):,.0f} |",
            flush=True)
    print("\n| setting | batch | resume at step | position | seconds to the first batch |\n|---|---:|---:|---|---:|")
    for name in args.resume_settings.split(","):
      seq_len, batch = SETTINGS[name]
      for step in steps:
        for how in ("state", "replay", "replay_parsed"):
          secs = first_batch_seconds(patterns[name], seq_len, batch, step, how, work)
          print(f"| {name} | {batch} | {step:,} | {how} | {secs:.2f} |", flush=True)


if __name__ == "__main__":
  main()
