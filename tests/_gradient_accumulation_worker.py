"""Subprocess body of the accumulation test under MirroredStrategy (two logical CPUs, set before TF starts).

  python _gradient_accumulation_worker.py DATA_DIR
Trains a tiny ELECTRA (dropout on) 10 steps of a global batch of 16 twice: on one device in one batch with
per-example dropout, and on two replicas with 2 micro-batches each. Prints (last stdout line)
{"replicas": [1, 2], "max_difference": max |weight difference|}.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(data_dir):
  from conftest import TINY_MODEL, use_two_logical_cpus
  use_two_logical_cpus()
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
    return t.num_replicas, [v.numpy() for v in t.variables]

  n_one, single = train("ga_single", "one_device", 1)
  n_two, mirrored = train("ga_mirrored", "mirrored", 2)
  diff = max(float(np.abs(a - b).max()) for a, b in zip(single, mirrored))
  print(json.dumps({"replicas": [n_one, n_two], "max_difference": diff}))


if __name__ == "__main__":
  main(sys.argv[1])
