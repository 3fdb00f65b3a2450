"""Subprocess body of the distribution tests: trains a tiny ELECTRA (dropout on, keyed per example) and prints JSON.

  python _pretraining_dist_worker.py MODE DATA_DIR MODEL_NAME WEIGHTS_NPZ [HPARAMS_JSON]
MODE: single (one device), mirrored (two logical CPU devices), mirrored_resumed (the same, stopped after
3 steps and resumed from that checkpoint by a new trainer in the process), worker (MultiWorkerMirrored via
TF_CONFIG), worker_xla (the same with use_xla). HPARAMS_JSON: more hparams (mixed_precision,
gradient_accumulation_steps).
Writes every trained weight to WEIGHTS_NPZ (keys: position in the trainer's variable list and name) and prints
(last stdout line) {"losses": [[total, mlm, disc] per step], "loss_scales": [the float16 loss scale after each
step, or null], "update_compiled": whether the optimizer's update ran as one compiled function per device}.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(mode, data_dir, model_name, weights_npz, hparams="{}"):
  from conftest import TINY_MODEL, use_two_logical_cpus
  if mode.startswith("mirrored"):
    use_two_logical_cpus()
  import _pretraining_testlib as lib
  from electra_tf.configs import PretrainingConfig
  from electra_tf.pretraining import trainer
  model = TINY_MODEL  # dropout on: its masks are keyed by the global row, as masking and sampling are
  hp = lib.tiny_hparams(model_hparam_overrides=model, num_train_steps=6, iterations_per_loop=1,
                        save_checkpoints_steps=3 if mode == "mirrored_resumed" else 100, use_xla=mode == "worker_xla",
                        strategy={"single": "one_device", "mirrored": "mirrored", "mirrored_resumed": "mirrored",
                                  "worker": "multi_worker", "worker_xla": "multi_worker"}[mode],
                        **json.loads(hparams))
  cfg = PretrainingConfig.create(model_name, data_dir, **hp)
  new_trainer = lambda: trainer.Trainer(cfg, progress=False, log_fn=lambda *_: None)
  t = new_trainer()
  assert t.num_replicas == (1 if mode == "single" else 2), t.num_replicas
  losses, scales = [], []

  def record(step):  # each loop's logged values (a point after every loop)
    del step
    values = t.runner.training_log.last
    losses.append([values["total_loss"], values["mlm_loss"], values["disc_loss"]])
    scales.append(values.get("loss_scale"))

  if mode == "mirrored_resumed":
    t.train(max_steps=3, after_loop=record)
    t = new_trainer()  # restores step 3: the weights, the optimizer and the input position
  t.train(after_loop=record)
  np.savez(weights_npz, **{f"{i:03d} {v.name}": v.numpy() for i, v in enumerate(t.variables)})
  optimizer = t.replica_step.optimizer
  # pylint: disable-next=protected-access
  compiled = optimizer.compile_per_device and optimizer._device_update.experimental_get_tracing_count() > 0
  print(json.dumps({"losses": losses, "loss_scales": scales, "update_compiled": bool(compiled)}))


if __name__ == "__main__":
  main(*sys.argv[1:6])
