"""Fine-tuning throughput: training and prediction examples/s for a size and sequence length.

  python benchmarks/finetune.py --sizes small,base --task sst --seq-len 128
  python benchmarks/finetune.py --sizes small --task squad --seq-len 512
  python benchmarks/finetune.py --sample-trials 4 --sample-dir sample_run   # whole trials of the main job

Random weights and random token ids (throughput does not depend on the values); the reference's heads,
loss and optimizer (layer-wise LR, clip, AdamW). The first step (tracing) is excluded.

``--sample-trials N``: the wall time of each of N whole trials (build, train, evaluate, save) of the main
job's fine-tuning (the sample model from random weights on the sample sst task, one process), which is what
the main job's budget pays for, start-up and tracing included.
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
  trainer.train(arrays, 1, 10 ** 9, progress=False)  # trace + first step
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
          "final_loss": stats["loss"]}


def sample_trials(n: int, sample_dir: str) -> dict:
  from electra_tf import presets, sample_data  # pylint: disable=g-import-not-at-top
  from electra_tf.configs import FinetuningConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.finetuning import run_finetuning  # pylint: disable=g-import-not-at-top
  root = sample_data.ensure_sample_setup(sample_dir, log=lambda *_: None, build_records=False)
  hparams = presets.sample_finetuning_hparams(sample_data.vocab_size_of(root / "vocab.txt"))
  cfg = FinetuningConfig.create("bench_sample_trials", str(root), **hparams, init_checkpoint="none",
                                num_trials=n)
  results = run_finetuning(cfg, progress=False)
  return {"sample_trials": n, "trial_seconds": [round(r["time"], 1) for r in results],
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
  p.add_argument("--sample-trials", type=int, default=0, help="time N whole trials of the main job instead")
  p.add_argument("--sample-dir", default=None, help="the sample setup for --sample-trials (built if missing)")
  args = p.parse_args()
  if args.sample_trials:
    print(json.dumps(sample_trials(args.sample_trials, args.sample_dir)), flush=True)
    return
  for size in args.sizes.split(","):
    print(json.dumps(bench(size, args.task, args.seq_len, args.batch_size, args.steps, args.mixed_precision,
                           args.xla)), flush=True)


if __name__ == "__main__":
  main()
