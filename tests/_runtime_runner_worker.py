"""Subprocess body of the training-runtime tests that need two logical CPU devices (set before TensorFlow
starts): a short fine-tuning trial or a short pre-training run with XLA on, first on one device, then on two
replicas (one process: one TensorFlow start for both; only the second run makes a MirroredStrategy).

  python _runtime_runner_worker.py JOB ROOT VOCAB
JOB: finetune | pretrain.
Output (last stdout line): {mode: {"replicas": n, "xla": whether the step is compiled (on two replicas: the
gradients and each device's optimizer update), "weights": npz path}}
for the modes single and mirrored.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _finetune(mode, root, vocab):
  from conftest import TINY_MODEL
  from electra_tf.finetuning.run import FinetuningRun
  from tests._finetuning_testlib import tiny_config
  # dropout on (the head's too): the masks are keyed by each example's global row, the same on any replica
  cfg = tiny_config(root, ["sst"], vocab, model_hparam_overrides=TINY_MODEL, train_batch_size=4,
                    num_train_epochs=2.0, learning_rate=1e-3, use_xla=True, iterations_per_loop=3,
                    strategy="one_device" if mode == "single" else "mirrored", keep_all_models=True)
  run = FinetuningRun(cfg, progress=False)
  trainer_holder = {}
  from electra_tf.finetuning import run as run_lib
  original = run_lib.Trainer

  class Recording(original):
    def __init__(self, *args, **kwargs):
      super().__init__(*args, **kwargs)
      trainer_holder["t"] = self

  run_lib.Trainer = Recording
  try:
    run.run()
  finally:
    run_lib.Trainer = original
  t = trainer_holder["t"]
  weights = {n: v.numpy() for n, v in t.model.reference_variables().items()}
  return run.strategy.num_replicas_in_sync, t.replica_step, weights


def _pretrain(mode, root, vocab):
  import _pretraining_testlib as lib
  from conftest import TINY_MODEL
  from electra_tf.configs import PretrainingConfig
  from electra_tf.pretraining import trainer
  hp = lib.tiny_hparams(num_train_steps=6, iterations_per_loop=3, use_xla=True,
                        model_hparam_overrides=TINY_MODEL,
                        strategy="one_device" if mode == "single" else "mirrored")
  t = trainer.Trainer(PretrainingConfig.create(f"xla_{mode}", root, **hp), progress=False, log_fn=lambda *_: None)
  t.train()
  return t.num_replicas, t.replica_step, {str(i): v.numpy() for i, v in enumerate(t.variables)}


def main(job, root, vocab):
  import numpy as np
  from conftest import use_two_logical_cpus
  use_two_logical_cpus()
  out = {}
  for mode in ("single", "mirrored"):
    replicas, replica_step, weights = (_finetune if job == "finetune" else _pretrain)(mode, root, vocab)
    # pylint: disable=protected-access
    if replicas > 1:  # the gradients, and each device's optimizer update apart (traced, so it ran)
      optimizer = replica_step.optimizer
      compiled = (replica_step._grads_fn._jit_compile and optimizer.compile_per_device
                  and optimizer._device_update.experimental_get_tracing_count() > 0)
    else:
      compiled = getattr(replica_step._single_fn, "_jit_compile", False)
    path = os.path.join(root, f"weights_{job}_{mode}.npz")
    np.savez(path, **weights)
    out[mode] = {"replicas": replicas, "xla": bool(compiled), "weights": path}
  print(json.dumps(out))


if __name__ == "__main__":
  main(*sys.argv[1:4])
