"""Subprocess body of the fine-tuning distribution tests: one sst trial of a tiny model, dropout on.

  python _finetuning_dist_worker.py MODE ROOT VOCAB [OUT [HPARAMS]]
MODE: single (one device), mirrored (MirroredStrategy on two logical CPU devices, set before TensorFlow starts),
worker (one worker of a MultiWorkerMirroredStrategy job: ``strategy: auto`` reads the cluster from TF_CONFIG).
OUT (default ROOT): where this process writes ``weights.npz`` (every weight of the trained model, reference
names). HPARAMS: JSON of further hparams. A worker records every file its process writes or removes under
ROOT/models (Python's file operations, TensorFlow checkpoints and TensorBoard writers). Prints (last stdout
line) {"replicas": n, "chief": whether it writes, "results": dev results, "writes": [paths under models/],
"checkpoint_dirs": [where its checkpoints went, and whether they are still there]}.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

_WRITE_EVENTS = {"os.mkdir", "os.rename", "os.remove", "os.rmdir", "shutil.rmtree", "shutil.copyfile",
                 "shutil.copytree", "shutil.move", "tempfile.mkstemp", "tempfile.mkdtemp", "os.symlink", "os.link",
                 "os.truncate", "os.chmod"}


def _record_writes(directory, writes, checkpoint_dirs):
  """Appends to ``writes`` each path under ``directory`` this process writes, creates or removes."""
  import tensorflow as tf
  directory = os.path.realpath(directory) + os.sep

  def inside(path):
    return isinstance(path, (str, bytes, os.PathLike)) and (
        os.path.realpath(os.fsdecode(path)) + os.sep).startswith(directory)

  def hook(event, args):
    if event == "open" and len(args) >= 3:
      path, mode, flags = args[:3]
      writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
          isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
      if writing and inside(path):
        writes.append(os.fsdecode(path))
    elif event in _WRITE_EVENTS:
      writes.extend(os.fsdecode(p) for p in args[:2] if inside(p))

  sys.addaudithook(hook)
  save, create_writer = tf.train.CheckpointManager.save, tf.summary.create_file_writer

  def recorded_save(self, *args, **kwargs):
    checkpoint_dirs.append(self.directory)
    if inside(self.directory):
      writes.append(self.directory)
    return save(self, *args, **kwargs)

  def recorded_writer(logdir, *args, **kwargs):
    if inside(logdir):
      writes.append(logdir)
    return create_writer(logdir, *args, **kwargs)

  tf.train.CheckpointManager.save = recorded_save
  tf.summary.create_file_writer = recorded_writer


def main(mode, root, vocab, out=None, hparams="{}"):
  from conftest import TINY_MODEL, use_two_logical_cpus
  if mode == "mirrored":
    use_two_logical_cpus()
  writes, checkpoint_dirs = [], []
  _record_writes(os.path.join(root, "models"), writes, checkpoint_dirs)
  from electra_tf.finetuning.run import FinetuningRun
  from tests._finetuning_testlib import tiny_config
  model = TINY_MODEL  # dropout on (the head's too): masks keyed by each example's global row
  hp = dict(train_batch_size=4, eval_batch_size=4, num_train_epochs=2.0, learning_rate=1e-3)
  hp.update(json.loads(hparams))
  cfg = tiny_config(root, ["sst"], vocab, model_hparam_overrides=model,
                    strategy={"single": "one_device", "mirrored": "mirrored", "worker": "auto"}[mode], **hp)
  run = FinetuningRun(cfg, progress=False)
  replicas = run.strategy.num_replicas_in_sync
  results = run.run()[0]["sst"]
  trainer = run._trainer  # pylint: disable=protected-access
  np.savez(os.path.join(out or root, "weights.npz"),
           **{name: v.numpy() for name, v in trainer.model.reference_variables().items()})
  print(json.dumps({"replicas": replicas, "chief": run.chief, "results": results, "writes": sorted(set(writes)),
                    "checkpoint_dirs": sorted({(d, os.path.exists(d)) for d in checkpoint_dirs})}))


if __name__ == "__main__":
  main(*sys.argv[1:6])
