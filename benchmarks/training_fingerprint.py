"""Fingerprints of tiny fixed-seed training runs: logged losses, evaluation results and final weights, hashed
bit for bit, to show that a change to the training runtime left training unchanged to the bit or to measure
what it changed.

    PYTHONPATH=/path/to/old/checkout python /path/to/old/checkout/benchmarks/training_fingerprint.py \
        --out old.json --arrays old_arrays
    python benchmarks/training_fingerprint.py --out new.json --arrays new_arrays
    python benchmarks/training_fingerprint.py --compare old.json new.json --arrays old_arrays new_arrays

(run each version's own copy of this script: it imports the tests' code from the checkout it sits in).

Pre-training cases train the tests' tiny ELECTRA (WikiText-2 from ``ELECTRA_TEST_DATA``, BERT vocab) for 30
steps in 3 compiled loops with a checkpoint at step 20 and record the sha256 of the float32 bytes of every
logged loss and of every trainable variable (in variable order); ``plain`` also evaluates the trained model
(``evaluation``). Fine-tuning cases train the same tiny network from random weights on 400 real rt_polarity
sentences for 2 epochs (1 trial) and record the saved weights and the dev results (``evaluation``: accuracy
and loss). ``--arrays DIR`` keeps each case's weights and results, so ``--compare`` can say by how much two
versions differ where they do. ``--cases`` picks a subset; every case runs in its own process, the mirrored
ones on two logical CPU devices.
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
PRETRAINING_CASES = {
    "plain": {},
    "accumulation2": {"gradient_accumulation_steps": 2},
    "no_xla": {"use_xla": False},
    "bias_correction": {"adam_bias_correction": True},
    "float16": {"mixed_precision": "float16"},
    "replica_dropout": {"per_example_dropout": False},
    "mirrored": {"strategy": "mirrored"},
}
FINETUNING_CASES = {
    "finetune": {},
    "finetune_replica_dropout": {"per_example_dropout": False},
    "finetune_accumulation2": {"gradient_accumulation_steps": 2},
    "finetune_float16": {"mixed_precision": "float16"},
    "finetune_mirrored": {"strategy": "mirrored"},
    "finetune_no_dropout": {"dropout": 0.0},  # the model's and the head's dropout off
    "finetune_seed2": {"seed": 2},  # other trials' seeds: the spread of results between trials
    "finetune_seed3": {"seed": 3},
}
CASES = {**PRETRAINING_CASES, **FINETUNING_CASES}
KEYS = ("losses", "evaluation", "weights")


def _digest(arrays) -> str:
  import numpy as np  # pylint: disable=g-import-not-at-top
  h = hashlib.sha256()
  for a in arrays:
    h.update(np.ascontiguousarray(np.asarray(a, np.float32)).tobytes())
  return h.hexdigest()[:16]


def _paths():
  sys.path.insert(0, str(REPO))
  sys.path.insert(0, str(REPO / "tests"))


def finetune_case(name: str, work: str, arrays_dir) -> dict:
  _paths()
  from conftest import real_data_dir  # pylint: disable=g-import-not-at-top
  from electra_tf.finetuning.run import FinetuningRun  # pylint: disable=g-import-not-at-top
  from tests._finetuning_testlib import tiny_config  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  data = real_data_dir()
  src = data / "glue-style" / "rt_polarity"
  root = pathlib.Path(work)
  (root / "finetuning_data" / "sst").mkdir(parents=True)
  lines = (src / "train.tsv").read_text(encoding="utf-8").split("\n")
  (root / "finetuning_data" / "sst" / "train.tsv").write_text("\n".join(lines[:401]) + "\n", encoding="utf-8")
  (root / "finetuning_data" / "sst" / "dev.tsv").write_text((src / "dev.tsv").read_text(encoding="utf-8"),
                                                           encoding="utf-8")
  from conftest import TINY_MODEL  # pylint: disable=g-import-not-at-top
  hp = dict(FINETUNING_CASES[name])
  if "dropout" in hp:
    rate = hp.pop("dropout")
    hp["model_hparam_overrides"] = dict(TINY_MODEL, hidden_dropout_prob=rate, attention_probs_dropout_prob=rate)
    from electra_tf.finetuning import head_layers  # pylint: disable=g-import-not-at-top
    head_layers.stateless_dropout = lambda x, *args, **kwargs: x  # the heads' fixed 0.1 as well
  cfg = tiny_config(root, ["sst"], data / "vocab" / "bert-base-uncased-vocab.txt", num_train_epochs=2.0,
                    learning_rate=1e-3, train_batch_size=16, eval_batch_size=32, iterations_per_loop=7,
                    keep_all_models=True, **hp)
  run = FinetuningRun(cfg, progress=False)
  results = run.run()[0]["sst"]
  reader = tf.train.load_checkpoint(run.model_dir(1))
  names = sorted(n for n in reader.get_variable_to_shape_map() if n != "global_step")
  weights = {n: reader.get_tensor(n) for n in names}
  if arrays_dir:
    np.savez(os.path.join(arrays_dir, f"{name}.npz"), **weights)
  evaluation = [results["accuracy"], results["loss"]]
  return {"losses": _digest([]), "evaluation": _digest(evaluation), "weights": _digest(weights.values()),
          "results": {"accuracy": results["accuracy"], "loss": results["loss"]}}


def pretrain_case(name: str, work: str, arrays_dir) -> dict:
  _paths()
  import _pretraining_testlib as lib  # pylint: disable=g-import-not-at-top
  from conftest import real_data_dir  # pylint: disable=g-import-not-at-top
  from electra_tf.configs import PretrainingConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.pretraining import trainer  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  data = real_data_dir()
  root = lib.build_tfrecords(pathlib.Path(work) / "data", data, data / "vocab" / "bert-base-uncased-vocab.txt",
                             max_lines=400)
  hp = lib.tiny_hparams(num_train_steps=30, iterations_per_loop=10, save_checkpoints_steps=20,
                        **PRETRAINING_CASES[name])
  cfg = PretrainingConfig.create(name, str(root), **hp)
  losses = []
  t = trainer.Trainer(cfg, progress=False, log_fn=lambda *_: None)

  def after_loop(step):  # each loop's logged values (a point after every loop here)
    del step
    values = t.runner.training_log.last
    losses.append([values[k] for k in sorted(values) if k.endswith("loss")])

  t.train(after_loop=after_loop)
  weights = [v.numpy() for v in t.variables]
  metrics = t.evaluate() if name == "plain" else {}
  if arrays_dir:
    np.savez(os.path.join(arrays_dir, f"{name}.npz"), **{f"{i:03d}": w for i, w in enumerate(weights)})
  return {"losses": _digest(losses), "evaluation": _digest([metrics[k] for k in sorted(metrics)]),
          "weights": _digest(weights), "results": {"first_loss": losses[0], "last_loss": losses[-1],
                                                   **{k: metrics[k] for k in sorted(metrics)}}}


def compare(a_path, b_path, arrays=None) -> int:
  a, b = (json.loads(pathlib.Path(x).read_text()) for x in (a_path, b_path))
  same = True
  for name in [n for n in CASES if n in a and n in b]:
    for key in KEYS:
      ok = a[name][key] == b[name][key]
      same &= ok
      print(f"{name:26s} {key:10s} {'identical' if ok else 'DIFFERENT'}  {a[name][key]}  {b[name][key]}")
    if a[name]["weights"] != b[name]["weights"] and arrays:
      import numpy as np  # pylint: disable=g-import-not-at-top
      with np.load(os.path.join(arrays[0], f"{name}.npz")) as x, np.load(os.path.join(arrays[1], f"{name}.npz")) as y:
        worst = max((float(np.abs(x[k] - y[k]).max()), k) for k in x.files)
        mean = float(np.mean([np.abs(x[k] - y[k]).mean() for k in x.files]))
      print(f"{'':26s} max |weight difference| {worst[0]:.3g} ({worst[1]}), mean {mean:.3g}")
    if a[name]["evaluation"] != b[name]["evaluation"] or a[name]["losses"] != b[name]["losses"]:
      print(f"{'':26s} old {a[name]['results']}\n{'':26s} new {b[name]['results']}")
  return 0 if same else 1


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--cases", default=",".join(CASES))
  p.add_argument("--out", default=None, help="write the fingerprints here as JSON")
  p.add_argument("--arrays", nargs="+", default=None,
                 help="a directory for each case's weights (with --compare: the two versions' directories)")
  p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two outputs of --out")
  p.add_argument("--case", help=argparse.SUPPRESS)  # one case in this process
  args = p.parse_args(argv)
  if args.compare:
    return compare(*args.compare, arrays=args.arrays)
  arrays_dir = args.arrays[0] if args.arrays else None
  if args.case:
    if CASES[args.case].get("strategy") == "mirrored":
      _paths()
      from conftest import use_two_logical_cpus  # pylint: disable=g-import-not-at-top
      use_two_logical_cpus()
    with tempfile.TemporaryDirectory() as work:
      run = finetune_case if args.case in FINETUNING_CASES else pretrain_case
      print(json.dumps(run(args.case, work, arrays_dir)))
    return 0
  if arrays_dir:
    os.makedirs(arrays_dir, exist_ok=True)
  results = {}
  for name in args.cases.split(","):
    cmd = [sys.executable, __file__, "--case", name] + (["--arrays", arrays_dir] if arrays_dir else [])
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if out.returncode:
      sys.stderr.write(out.stderr[-3000:])
      return out.returncode
    results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    print(name, json.dumps(results[name]), flush=True)
    if args.out:
      pathlib.Path(args.out).write_text(json.dumps(results, indent=1))
  return 0


if __name__ == "__main__":
  sys.exit(main())
