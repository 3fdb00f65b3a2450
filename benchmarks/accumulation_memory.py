"""Memory saved by gradient accumulation: peak RSS (and peak device memory on a GPU) of pre-training steps.

  python benchmarks/accumulation_memory.py                        # small, seq 128: 128 x 1 vs 32 x 4
  python benchmarks/accumulation_memory.py --model-size base --batch 256 --accumulation 1,8

Each setting runs in its own process (peak RSS never goes down, so settings must not share one): the
Trainer of ``--model-size`` at global batch ``--batch`` with ``gradient_accumulation_steps`` k, fed a
synthetic batch (random ids, full length), one step to trace, then ``--steps`` timed steps. Reported per k:
peak RSS of the process, RSS once the model and optimizer are built (before the first step), their
difference (what the training step adds: activations, gradients, the accumulators), peak GPU memory when
there is a GPU, and sequences/s.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from electra_tf import runtime  # pylint: disable=wrong-import-position  (no TensorFlow)

runtime.set_default_xla_flags()  # as the commands do, before TensorFlow starts


def _rss_mib() -> float:
  """Current resident set size (Linux /proc)."""
  with open("/proc/self/statm") as f:
    return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def measure(model_size: str, batch: int, seq_len: int, accumulation: int, steps: int) -> dict:
  """One setting, in this process; returns the figures."""
  import tensorflow as tf
  from electra_tf.configs import PretrainingConfig
  from electra_tf.pretraining import masking, trainer
  with tempfile.TemporaryDirectory() as tmp:
    cfg = PretrainingConfig.create("bench", tmp, preset=model_size, max_seq_length=seq_len, train_batch_size=batch,
                                   gradient_accumulation_steps=accumulation, num_train_steps=1000,
                                   iterations_per_loop=1)
    t = trainer.Trainer(cfg, progress=False, log_fn=lambda *_: None, check_inputs=False,
                        special=masking.SpecialIds())
    ids = tf.random.uniform([batch, seq_len], 1000, cfg.vocab_size, dtype=tf.int32, seed=1)
    ids = tf.concat([tf.fill([batch, 1], 101), ids[:, 1:-1], tf.fill([batch, 1], 102)], 1)
    data = {"input_ids": ids, "input_mask": tf.ones_like(ids), "segment_ids": tf.zeros_like(ids)}
    iterator = iter(tf.data.Dataset.from_tensors(data).repeat())  # global batches, as the trainer reads them
    loop = t.runner.train_loop()
    built = _rss_mib()
    gpu = bool(tf.config.list_physical_devices("GPU"))
    if gpu:
      tf.config.experimental.reset_memory_stats("GPU:0")
    loop(iterator, tf.constant(1))[1].numpy()  # trace
    start = time.perf_counter()
    loop(iterator, tf.constant(steps))[1].numpy()
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    out = {"model_size": model_size, "batch": batch, "accumulation": accumulation,
           "micro_batch": batch // accumulation, "peak_rss_mib": peak, "rss_before_steps_mib": built,
           "step_adds_mib": peak - built, "sequences_per_sec": steps * batch / elapsed}
    if gpu:
      out["gpu_peak_mib"] = tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2 ** 20
    return out


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--model-size", default="small")
  p.add_argument("--batch", type=int, default=128, help="global batch")
  p.add_argument("--seq-len", type=int, default=128)
  p.add_argument("--accumulation", default="1,4", help="comma-separated gradient_accumulation_steps")
  p.add_argument("--steps", type=int, default=2, help="timed steps after the traced one")
  p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
  args = p.parse_args(argv)
  if args.child:
    print(json.dumps(measure(args.model_size, args.batch, args.seq_len, int(args.accumulation), args.steps)))
    return 0
  rows = []
  for k in (int(x) for x in args.accumulation.split(",")):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--model-size", args.model_size, "--batch",
           str(args.batch), "--seq-len", str(args.seq_len), "--accumulation", str(k), "--steps", str(args.steps)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if proc.returncode:
      sys.stderr.write(proc.stderr[-3000:])
      return proc.returncode
    rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(json.dumps(rows[-1]), flush=True)
  print(f"\n{args.model_size}, seq {args.seq_len}, global batch {args.batch}")
  print("| micro-batch x k | peak RSS MiB | RSS before the steps | the step adds | GPU peak MiB | sequences/s |")
  print("|---|---|---|---|---|---|")
  for r in rows:
    gpu = f"{r['gpu_peak_mib']:,.0f}" if "gpu_peak_mib" in r else "-"
    print(f"| {r['micro_batch']} x {r['accumulation']} | {r['peak_rss_mib']:,.0f} | {r['rss_before_steps_mib']:,.0f} "
          f"| {r['step_adds_mib']:,.0f} | {gpu} | {r['sequences_per_sec']:.1f} |")
  return 0


if __name__ == "__main__":
  sys.exit(main())
