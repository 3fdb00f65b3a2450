"""Fingerprints of tiny fixed-seed training runs: per-step losses and final weights, hashed bit for bit.

Run it on two versions of the code on the same machine to show that a refactor of the training loop left
training unchanged to the bit (pre-training) or to show what it changed (fine-tuning):

    PYTHONPATH=/path/to/old/checkout python experiments/training_fingerprint.py --out old.json
    python experiments/training_fingerprint.py --out new.json
    python experiments/training_fingerprint.py --compare old.json new.json

Each case pre-trains the tests' tiny ELECTRA (WikiText-2 from ``ELECTRA_TEST_DATA``, BERT vocab) for 30
steps in 3 compiled loops, with a checkpoint at step 20, and records the sha256 of the float32 bytes of
every logged loss and of every trainable variable (in variable order). The ``finetune`` case fine-tunes the
same tiny network from random weights on 400 real rt_polarity sentences for 2 epochs (1 trial) and records
the trained weights and (under ``losses``) the dev accuracy. ``--cases`` picks a subset; every case runs in its own process,
the ``mirrored`` one on two logical CPU devices.
"""

import argparse
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
CASES = {
    "plain": {},
    "accumulation2": {"gradient_accumulation_steps": 2},
    "no_xla": {"use_xla": False},
    "bias_correction": {"adam_bias_correction": True},
    "float16": {"mixed_precision": "float16"},
    "mirrored": {"strategy": "mirrored"},  # two logical CPU devices (a subprocess per case)
    "finetune": {},
}


def _digest(arrays) -> str:
  import numpy as np  # pylint: disable=g-import-not-at-top
  h = hashlib.sha256()
  for a in arrays:
    h.update(np.ascontiguousarray(np.asarray(a, np.float32)).tobytes())
  return h.hexdigest()[:16]


def finetune_case(work: str) -> dict:
  sys.path.insert(0, str(REPO / "tests"))
  sys.path.insert(0, str(REPO))
  from conftest import real_data_dir  # pylint: disable=g-import-not-at-top
  from electra_tf.finetuning.run import FinetuningRun  # pylint: disable=g-import-not-at-top
  from tests._finetuning_testlib import tiny_config  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  data = real_data_dir()
  src = data / "glue-style" / "rt_polarity"
  root = pathlib.Path(work)
  (root / "finetuning_data" / "sst").mkdir(parents=True)
  lines = (src / "train.tsv").read_text(encoding="utf-8").split("\n")
  (root / "finetuning_data" / "sst" / "train.tsv").write_text("\n".join(lines[:401]) + "\n", encoding="utf-8")
  (root / "finetuning_data" / "sst" / "dev.tsv").write_text((src / "dev.tsv").read_text(encoding="utf-8"),
                                                           encoding="utf-8")
  cfg = tiny_config(root, ["sst"], data / "vocab" / "bert-base-uncased-vocab.txt", num_train_epochs=2.0,
                    learning_rate=1e-3, train_batch_size=16, eval_batch_size=32, iterations_per_loop=7,
                    keep_all_models=True)
  run = FinetuningRun(cfg, progress=False)
  results = run.run()
  reader = tf.train.load_checkpoint(run.model_dir(1))
  names = sorted(n for n in reader.get_variable_to_shape_map() if n != "global_step")
  return {"losses": _digest([results[0]["sst"]["accuracy"]]), "weights": _digest([reader.get_tensor(n) for n in names]),
          "first_loss": [results[0]["sst"]["accuracy"]], "last_loss": []}


def run_case(name: str, work: str) -> dict:
  if name == "finetune":
    return finetune_case(work)
  sys.path.insert(0, str(REPO / "tests"))
  import _pretraining_testlib as lib  # pylint: disable=g-import-not-at-top
  from conftest import real_data_dir  # pylint: disable=g-import-not-at-top
  from electra_tf.configs import PretrainingConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.pretraining import trainer  # pylint: disable=g-import-not-at-top
  data = real_data_dir()
  root = lib.build_tfrecords(pathlib.Path(work) / "data", data, data / "vocab" / "bert-base-uncased-vocab.txt",
                             max_lines=400)
  hp = lib.tiny_hparams(num_train_steps=30, iterations_per_loop=10, save_checkpoints_steps=20,
                        **CASES.get(name, {}))
  cfg = PretrainingConfig.create(name, str(root), **hp)
  losses = []
  t = trainer.Trainer(cfg, progress=False, log_fn=lambda *_: None)
  original = t._log_loop  # pylint: disable=protected-access

  def log_loop(*args, **kwargs):
    values = original(*args, **kwargs)
    losses.append([values[k] for k in sorted(values) if k.endswith("loss")])
    return values

  t._log_loop = log_loop  # pylint: disable=protected-access
  t.train()
  weights = [v.numpy() for v in t.variables]
  return {"losses": _digest(losses), "weights": _digest(weights), "first_loss": losses[0],
          "last_loss": losses[-1]}


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--cases", default=",".join(CASES))
  p.add_argument("--out", default=None, help="write the fingerprints here as JSON")
  p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two outputs of --out")
  p.add_argument("--case", help=argparse.SUPPRESS)  # one case in this process (the mirrored subprocess)
  args = p.parse_args(argv)
  if args.compare:
    a, b = (json.loads(pathlib.Path(x).read_text()) for x in args.compare)
    same = True
    for name in sorted(set(a) & set(b)):
      for key in ("losses", "weights"):
        ok = a[name][key] == b[name][key]
        same &= ok
        print(f"{name:16s} {key:8s} {'identical' if ok else 'DIFFERENT'}  {a[name][key]}  {b[name][key]}")
    return 0 if same else 1
  if args.case:
    if args.case == "mirrored":
      sys.path.insert(0, str(REPO / "tests"))
      from conftest import use_two_logical_cpus  # pylint: disable=g-import-not-at-top
      use_two_logical_cpus()
    with tempfile.TemporaryDirectory() as work:
      print(json.dumps(run_case(args.case, work)))
    return 0
  results = {}
  for name in args.cases.split(","):
    out = subprocess.run([sys.executable, __file__, "--case", name], check=True, capture_output=True, text=True,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    print(name, results[name], flush=True)
  if args.out:
    pathlib.Path(args.out).write_text(json.dumps(results, indent=1))
  return 0


if __name__ == "__main__":
  sys.exit(main())
