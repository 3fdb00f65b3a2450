"""Fine-tuning throughput: training and prediction examples/s for a size and sequence length.

  python benchmarks/finetune.py --sizes small,base --task sst --seq-len 128
  python benchmarks/finetune.py --sizes small --task squad --seq-len 512
  python benchmarks/finetune.py --sample-trials 4 --sample-dir sample_run   # whole trials of the main job

Random weights and random token ids (throughput does not depend on the values); the reference's heads,
loss and optimizer (layer-wise LR, clip, AdamW). The first step (tracing) is excluded.

``--length-buckets 0,32``: training examples/s of ``length_bucket_width`` settings on the real POS sentences of
``--pos-dir`` (default ``$ELECTRA_TEST_DATA/tagging/oanc_pos``) featurized at ``--seq-len`` with the BERT vocab
there, the tagging head, one Trainer per width, alternating ``--rounds`` times; also the mean batch width.

``--sample-trials N``: the wall time of each of N whole trials (build, train, evaluate, save) of the main
job's fine-tuning (the sample model from random weights on the main job's labelled subset of the sample sst
task, with the setting the main job gives random weights; one process), which is what the main job's budget
pays for, start-up included; the first trial also traces and compiles the steps the next ones reuse.
``--sample-bucket-width W`` runs them with ``length_bucket_width`` W (each bucket length compiles its own step).
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from electra_tf import runtime  # pylint: disable=wrong-import-position  (no TensorFlow)

runtime.set_default_xla_flags()  # as the commands do, before TensorFlow starts


def bench(size, task_name, seq_len, batch, steps, mixed_precision="float32", use_xla=False):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from electra_tf.configs import FinetuningConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.runtime import select_strategy  # pylint: disable=g-import-not-at-top
  from electra_tf.finetuning.base import stack_features  # pylint: disable=g-import-not-at-top
  from electra_tf.finetuning.tasks import get_tasks  # pylint: disable=g-import-not-at-top
  from electra_tf.finetuning.trainer import Trainer  # pylint: disable=g-import-not-at-top

  class _Vocab:  # featurization is not benchmarked; the tasks only need a vocab for [CLS]/[SEP]
    vocab = {"[CLS]": 101, "[SEP]": 102}

  cfg = FinetuningConfig.create("bench", tempfile.mkdtemp(), task_names=[task_name], model_size=size,
                                max_seq_length=seq_len, train_batch_size=batch, eval_batch_size=batch,
                                init_checkpoint="none", mixed_precision=mixed_precision, use_xla=use_xla)
  tasks = get_tasks(cfg, _Vocab())
  rng = np.random.RandomState(0)
  n = batch * (steps + 1)
  feats = []
  for i in range(n):
    f = {"input_ids": rng.randint(1000, 30000, seq_len).tolist(), "input_mask": [1] * seq_len,
         "segment_ids": [0] * (seq_len // 4) + [1] * (seq_len - seq_len // 4), "task_id": 0,
         f"{task_name}_eid": i}
    if task_name in ("squad", "squadv1"):
      f.update({f"{task_name}_start_positions": seq_len // 2, f"{task_name}_end_positions": seq_len // 2 + 3})
    else:
      f[f"{task_name}_label_ids"] = i % 2
    feats.append(f)
  specs = tasks[0].feature_specs()
  arrays = stack_features(feats, specs, 1, batch)
  trainer = Trainer(cfg, tasks, select_strategy(cfg), seed=0)
  trainer.make_optimizer(10 * steps)
  t = time.time()
  trainer.train(arrays, 1, 10 ** 9, progress=False)  # trace + first step
  first_call = time.time() - t
  t = time.time()
  stats = trainer.train(arrays, 1 + steps, 10 ** 9, progress=False)
  train_eps = steps * batch / (time.time() - t)
  small = {k: v[:batch] for k, v in arrays.items()}
  trainer.predict(small, batch)  # trace
  t = time.time()
  trainer.predict({k: v[:batch * steps] for k, v in arrays.items()}, batch)
  predict_eps = steps * batch / (time.time() - t)
  return {"size": size, "task": task_name, "seq_len": seq_len, "batch": batch, "steps": steps,
          "device": "GPU" if tf.config.list_logical_devices("GPU") else "CPU",
          "mixed_precision": mixed_precision, "xla": use_xla,
          "train_examples_per_s": round(train_eps, 2), "predict_examples_per_s": round(predict_eps, 2),
          "first_step_s": round(first_call, 1), "final_loss": stats["loss"]}


def length_buckets(widths, size, seq_len, batch, steps, rounds, pos_dir, vocab_file) -> list:
  import numpy as np  # pylint: disable=g-import-not-at-top
  from electra_tf.configs import FinetuningConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.runtime import select_strategy  # pylint: disable=g-import-not-at-top
  from electra_tf.finetuning.base import stack_features  # pylint: disable=g-import-not-at-top
  from electra_tf.finetuning.tasks import get_tasks  # pylint: disable=g-import-not-at-top
  from electra_tf.finetuning.inputs import make_dataset  # pylint: disable=g-import-not-at-top
  from electra_tf.finetuning.trainer import Trainer  # pylint: disable=g-import-not-at-top
  from electra_tf.tokenization import load_tokenizer  # pylint: disable=g-import-not-at-top

  raw = tempfile.mkdtemp()
  os.makedirs(os.path.join(raw, "chunk"))
  os.symlink(os.path.abspath(os.path.join(pos_dir, "train.txt")), os.path.join(raw, "chunk", "train.txt"))
  trainers = {}
  for width in widths:
    cfg = FinetuningConfig.create("bench", tempfile.mkdtemp(), task_names=["chunk"], model_size=size,
                                  max_seq_length=seq_len, train_batch_size=batch, init_checkpoint="none",
                                  raw_data_dir=raw, vocab_file=vocab_file, length_bucket_width=width)
    tasks = get_tasks(cfg, load_tokenizer(vocab_file, True))
    arrays = stack_features(tasks[0].featurize(tasks[0].get_examples("train"), True), tasks[0].feature_specs(),
                            1, batch)
    trainer = Trainer(cfg, tasks, select_strategy(cfg), seed=0)
    trainer.make_optimizer(10 ** 6)
    trainer.train(arrays, 1, 10 ** 9, progress=False)  # trace + first step
    widths_seen = [int(b["input_ids"].shape[1]) for b in make_dataset(arrays, batch, True, 0, width).take(200)]
    trainers[width] = (trainer, arrays, float(np.mean(widths_seen)), [])
  for _ in range(rounds):
    for width, (trainer, arrays, _, rates) in trainers.items():
      done = int(trainer.optimizer.iterations.numpy())
      t = time.time()
      trainer.train(arrays, done + steps, 10 ** 9, progress=False)
      rates.append(steps * batch / (time.time() - t))
  base = np.median(trainers[widths[0]][3])
  return [{"size": size, "task": "chunk (oanc_pos train)", "seq_len": seq_len, "batch": batch, "steps": steps,
           "length_bucket_width": width, "mean_batch_width": round(mean_width, 1),
           "train_examples_per_s": [round(r, 1) for r in rates], "median": round(float(np.median(rates)), 1),
           f"vs_width_{widths[0]}": round(float(np.median(rates) / base), 2)}
          for width, (_, _, mean_width, rates) in trainers.items()]


def sample_trials(n: int, sample_dir: str, dropout: str = "keyed", bucket_width: int = 0) -> dict:
  from electra_tf import presets, quickstart, sample_data  # pylint: disable=g-import-not-at-top
  from electra_tf.configs import FinetuningConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.finetuning import run_finetuning  # pylint: disable=g-import-not-at-top
  root = sample_data.ensure_sample_setup(sample_dir, log=lambda *_: None, build_records=False)
  split = quickstart.label_subset(root)
  hparams = presets.sample_label_subset_hparams(sample_data.vocab_size_of(root / "vocab.txt"), "random")
  cfg = FinetuningConfig.create("bench_sample_trials", str(root), **hparams, init_checkpoint="none",
                                num_trials=n, raw_data_dir=split["dev_root"],
                                per_example_dropout=dropout == "keyed", length_bucket_width=bucket_width)
  start = time.time()
  results = run_finetuning(cfg, progress=False)
  return {"sample_trials": n, "labels": split["train"], "dropout": dropout, "length_bucket_width": bucket_width,
          "seconds": round(time.time() - start, 1), "learning_rate": hparams["learning_rate"],
          "epochs": hparams["num_train_epochs"], "trial_seconds": [round(r["time"], 1) for r in results],
          "accuracy": [r[presets.SAMPLE_TASK]["accuracy"] for r in results]}


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--sizes", default="small,base")
  p.add_argument("--task", default="sst", help="sst (classification) or squad (QA head with beam decode)")
  p.add_argument("--seq-len", type=int, default=128)
  p.add_argument("--batch-size", type=int, default=32)
  p.add_argument("--steps", type=int, default=5)
  p.add_argument("--mixed-precision", default="float32", choices=("float32", "bfloat16", "float16"))
  p.add_argument("--xla", action="store_true")
  p.add_argument("--length-buckets", default="", help="time these length_bucket_width values on POS instead")
  p.add_argument("--rounds", type=int, default=3, help="--length-buckets: alternating rounds per width")
  data = os.environ.get("ELECTRA_TEST_DATA", os.path.join(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))), "..", "shared", "data"))
  p.add_argument("--pos-dir", default=os.path.join(data, "tagging", "oanc_pos"))
  p.add_argument("--vocab", default=os.path.join(data, "vocab", "bert-base-uncased-vocab.txt"))
  p.add_argument("--sample-trials", type=int, default=0, help="time N whole trials of the main job instead")
  p.add_argument("--sample-dir", default=None, help="the sample setup for --sample-trials (built if missing)")
  p.add_argument("--dropout", default="keyed", choices=("keyed", "philox"),
                 help="--sample-trials: dropout keyed per example (the default) or TensorFlow's Philox")
  p.add_argument("--sample-bucket-width", type=int, default=0,
                 help="--sample-trials: their length_bucket_width (0: the main job's batches of 64 tokens)")
  args = p.parse_args()
  if args.length_buckets:
    widths = [int(w) for w in args.length_buckets.split(",")]
    for row in length_buckets(widths, args.sizes.split(",")[0], args.seq_len, args.batch_size, args.steps,
                              args.rounds, args.pos_dir, args.vocab):
      print(json.dumps(row), flush=True)
    return
  if args.sample_trials:
    print(json.dumps(sample_trials(args.sample_trials, args.sample_dir, args.dropout, args.sample_bucket_width)),
          flush=True)
    return
  for size in args.sizes.split(","):
    print(json.dumps(bench(size, args.task, args.seq_len, args.batch_size, args.steps, args.mixed_precision,
                           args.xla)), flush=True)


if __name__ == "__main__":
  main()
