"""Pre-training throughput of a multi-worker job on this machine: N local processes under
MultiWorkerMirroredStrategy (``strategy`` multi_worker, TF_CONFIG on localhost ports), one replica each.

  python benchmarks/multi_worker.py [--workers 2] [--size small] [--batch 16] [--steps 5] [--xla]
                                    [--runs 3] [--against OLD_CHECKOUT]

Every worker builds the trainer of ``--size`` on the same synthetic global batch (each keeps its replica's rows,
as a job does), runs a warm-up loop (tracing, compiling), then times ``--steps`` steps; the gradients cross the
processes through TensorFlow's collective all-reduce, so the figure holds the cost of the all-reduce that a
single-process run has not. Prints each run's global sequences/s (the chief's) and the medians; ``--against``
times another checkout's code too, its runs alternating with this one's.
"""

import argparse
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent.parent


def measure(size: str, batch: int, steps: int, xla: bool) -> float:
  """Global sequences/s of one worker of the job TF_CONFIG describes (in this process): ``pretrain.py``'s
  measurement of the trainer's compiled loop after one warm-up step."""
  import electra_tf  # pylint: disable=import-outside-toplevel,unused-import  (the timed checkout's, from PYTHONPATH,
  # before pretrain.py puts this checkout first on sys.path: its subpackages then load from the same place)
  from pretrain import bench_ours  # pylint: disable=import-outside-toplevel
  from electra_tf.configs import PretrainingConfig  # pylint: disable=import-outside-toplevel
  cfg = PretrainingConfig.create(f"multi_worker_{size}", "/nonexistent", preset=size, train_batch_size=batch,
                                 max_seq_length=128, use_xla=xla, num_warmup_steps=0, strategy="multi_worker")
  return bench_ours(cfg, steps, warmup=1)[0]


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def run_job(repo: str, args) -> float:
  """One job of ``args.workers`` processes with the code of the checkout ``repo``: the chief's sequences/s."""
  cluster = {"worker": [f"127.0.0.1:{_free_port()}" for _ in range(args.workers)]}
  procs = []
  for i in range(args.workers):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=repo,
               TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}))
    cmd = [sys.executable, __file__, "--child", repo, "--size", args.size, "--batch", str(args.batch),
           "--steps", str(args.steps)] + (["--xla"] if args.xla else [])
    procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
  outs = [p.communicate(timeout=1800) for p in procs]
  for p, (_, err) in zip(procs, outs):
    if p.returncode:
      raise RuntimeError(f"a worker failed: {err.strip().splitlines()[-1] if err.strip() else p.returncode}")
  return json.loads(outs[0][0].strip().splitlines()[-1])["seq_per_s"]


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--workers", type=int, default=2)
  p.add_argument("--size", default="small", help="model preset")
  p.add_argument("--batch", type=int, default=16, help="global batch")
  p.add_argument("--steps", type=int, default=5, help="timed steps")
  p.add_argument("--xla", action="store_true", help="compile each worker's step with XLA")
  p.add_argument("--runs", type=int, default=3, help="jobs of each checkout")
  p.add_argument("--against", help="another checkout to time alternately with this one")
  p.add_argument("--child", help=argparse.SUPPRESS)
  args = p.parse_args(argv)
  if args.child:
    print(json.dumps({"seq_per_s": measure(args.size, args.batch, args.steps, args.xla)}))
    return 0
  checkouts = [str(HERE)] + ([os.path.abspath(args.against)] if args.against else [])
  results = {c: [] for c in checkouts}
  for _ in range(args.runs):
    for c in checkouts:
      results[c].append(run_job(c, args))
      print(f"{c}: {results[c][-1]:.2f} sequences/s", flush=True)
  for c in checkouts:
    print(f"{c}: median {statistics.median(results[c]):.2f} sequences/s of {len(results[c])} jobs "
          f"({', '.join(f'{r:.2f}' for r in results[c])})")
  return 0


if __name__ == "__main__":
  sys.exit(main())
