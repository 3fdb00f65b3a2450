"""Subprocess body of the accumulation test under MirroredStrategy (two logical CPUs, set before TF starts).

  python _runtime_step_worker.py DATA_DIR pretraining|finetuning
pretraining: trains a tiny ELECTRA (dropout on) 10 steps of a global batch of 16 twice: on one device in one
batch with per-example dropout, and on two replicas with 2 micro-batches each. finetuning: a tiny model on
sst, 8 steps of 8, dropout on, the same two ways (one job per process: two MirroredStrategy objects made
here, not shared through ``select_strategy``, would mix up their collectives). Prints (last stdout line)
{"max_difference": max |weight difference|}.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(data_dir, job):
  from conftest import use_two_logical_cpus
  use_two_logical_cpus()
  diff = pretraining_difference(data_dir) if job == "pretraining" else finetuning_difference(data_dir)
  print(json.dumps({"max_difference": diff}))


def pretraining_difference(data_dir):
  from conftest import TINY_MODEL
  import numpy as np
  import _pretraining_testlib as lib
  from electra_tf.configs import PretrainingConfig
  from electra_tf.pretraining import trainer

  def train(name, strategy, accumulation):
    hp = lib.tiny_hparams(model_hparam_overrides=TINY_MODEL, num_train_steps=10, iterations_per_loop=10,
                          save_checkpoints_steps=10, train_batch_size=16, strategy=strategy,
                          gradient_accumulation_steps=accumulation, per_example_dropout=True)
    t = trainer.Trainer(PretrainingConfig.create(name, data_dir, **hp), progress=False, log_fn=lambda *_: None)
    t.train()
    assert t.num_replicas == (2 if strategy == "mirrored" else 1) and t.step_var.numpy() == 10
    return [v.numpy() for v in t.variables]

  single = train("ga_single", "one_device", 1)
  mirrored = train("ga_mirrored", "mirrored", 2)
  return max(float(np.abs(a - b).max()) for a, b in zip(single, mirrored))


def finetuning_difference(data_dir):
  import pathlib
  import numpy as np
  import tensorflow as tf
  from electra_tf.finetuning.run import FinetuningData
  from electra_tf.finetuning.tasks import get_tasks
  from electra_tf.finetuning.inputs import num_train_steps
  from electra_tf.finetuning.trainer import Trainer
  from electra_tf.tokenization import load_tokenizer
  from tests._finetuning_testlib import tiny_config, tsv, write
  root, vocab = pathlib.Path(data_dir) / "ga_finetuning", pathlib.Path(data_dir) / "vocab.txt"
  write(root / "finetuning_data/sst/train.tsv", tsv([["sentence", "label"]] + [
      [f"{'a great film' if i % 2 else 'dull and slow'} number {i}", i % 2] for i in range(32)]))
  tokenizer = load_tokenizer(vocab, True)

  def train(accumulation, strategy):
    cfg = tiny_config(root, ["sst"], vocab, train_batch_size=8, num_train_epochs=2.0, learning_rate=1e-3,
                      gradient_accumulation_steps=accumulation, per_example_dropout=True)
    tasks = get_tasks(cfg, tokenizer)
    arrays = FinetuningData(cfg, tasks).train_arrays()
    steps = num_train_steps(len(arrays["task_id"]), 8, 2.0)
    trainer = Trainer(cfg, tasks, strategy, seed=0)
    trainer.train(arrays, steps, steps // 2, progress=False)
    assert trainer.strategy.num_replicas_in_sync == (2 if accumulation == 2 else 1)
    return {n: v.numpy() for n, v in trainer.model.reference_variables().items()}

  one = train(1, tf.distribute.OneDeviceStrategy("/cpu:0"))
  two = train(2, tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
  return max(float(np.abs(one[n] - two[n]).max()) for n in one)


if __name__ == "__main__":
  main(*sys.argv[1:3])
