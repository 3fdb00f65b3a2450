"""Subprocess body of the fine-tuning multi-replica test: one sst trial of a tiny model, dropout on.

  python _finetuning_dist_worker.py MODE ROOT VOCAB
MODE: single (one device), mirrored (MirroredStrategy on two logical CPU devices, set before TensorFlow starts).
Writes every weight of the saved model to ROOT/weights.npz (reference names) and prints (last stdout line)
{"replicas": n, "results": dev results}.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(mode, root, vocab):
  from conftest import TINY_MODEL, use_two_logical_cpus
  if mode == "mirrored":
    use_two_logical_cpus()
  import tensorflow as tf
  from electra_tf.finetuning.run import FinetuningRun
  from tests._finetuning_testlib import tiny_config
  model = TINY_MODEL  # dropout on (the head's too): masks keyed by each example's global row
  cfg = tiny_config(root, ["sst"], vocab, model_hparam_overrides=model,
                    train_batch_size=4, eval_batch_size=4, num_train_epochs=2.0, learning_rate=1e-3,
                    strategy="one_device" if mode == "single" else "mirrored")
  run = FinetuningRun(cfg, progress=False)
  replicas = run.strategy.num_replicas_in_sync
  results = run.run()[0]["sst"]
  reader = tf.train.load_checkpoint(run.model_dir(1))
  np.savez(os.path.join(root, "weights.npz"), **{name: reader.get_tensor(name) for name in
                                                  reader.get_variable_to_shape_map() if name != "global_step"})
  print(json.dumps({"replicas": replicas, "results": results}))


if __name__ == "__main__":
  main(*sys.argv[1:4])
