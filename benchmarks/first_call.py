"""The first compiled call of a training run: tracing the step (and compiling it, with XLA), then one step.

  python benchmarks/first_call.py [--xla] [--runs 5] [--against OLD_CHECKOUT]

Builds the tests' tiny pre-training model (``tests/_pretraining_testlib.tiny_hparams``: H 32, 1 layer, the
BERT vocab, batch 8 x 32 tokens) on 300 lines of WikiText-2 (``ELECTRA_TEST_DATA``) and times
``Trainer.train(max_steps=1)``, each run in a fresh process. ``--against`` times another checkout's code too
(an older commit), its runs alternating with this one's so that a drift in the machine's speed reaches both
alike; prints every run's seconds and the medians.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent.parent


def measure(repo: str, xla: bool) -> float:
  """One first call with the code of the checkout ``repo`` (in this process)."""
  sys.path[:0] = [repo, os.path.join(repo, "tests")]
  import _pretraining_testlib as lib  # pylint: disable=import-outside-toplevel
  from conftest import real_data_dir  # pylint: disable=import-outside-toplevel
  from electra_tf.configs import PretrainingConfig  # pylint: disable=import-outside-toplevel
  from electra_tf.pretraining import trainer  # pylint: disable=import-outside-toplevel
  data = real_data_dir()
  work = pathlib.Path(tempfile.mkdtemp(prefix="first_call_"))
  lib.build_tfrecords(work, data, data / "vocab" / "bert-base-uncased-vocab.txt", max_lines=300)
  hp = lib.tiny_hparams(num_train_steps=2, iterations_per_loop=1, save_checkpoints_steps=100, use_xla=xla)
  t = trainer.Trainer(PretrainingConfig.create("first_call", str(work), **hp), progress=False,
                      log_fn=lambda *_: None)
  start = time.perf_counter()
  t.train(max_steps=1)
  return time.perf_counter() - start


def _run_child(repo: str, xla: bool) -> float:
  cmd = [sys.executable, __file__, "--child", repo] + (["--xla"] if xla else [])
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=repo)
  out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
  return json.loads(out.strip().splitlines()[-1])["first_call_s"]


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--xla", action="store_true", help="compile the step with XLA")
  p.add_argument("--runs", type=int, default=5, help="runs of each checkout")
  p.add_argument("--against", help="another checkout to time alternately with this one")
  p.add_argument("--child", help=argparse.SUPPRESS)
  args = p.parse_args()
  if args.child:
    print(json.dumps({"first_call_s": measure(args.child, args.xla)}))
    return
  checkouts = [str(HERE)] + ([os.path.abspath(args.against)] if args.against else [])
  seconds = {repo: [] for repo in checkouts}
  for _ in range(args.runs):
    for repo in checkouts:
      seconds[repo].append(_run_child(repo, args.xla))
  for repo, values in seconds.items():
    print(f"{repo}: first compiled call median {statistics.median(values):.2f} s "
          f"(runs: {', '.join(f'{v:.2f}' for v in values)}; xla {args.xla})")


if __name__ == "__main__":
  main()
