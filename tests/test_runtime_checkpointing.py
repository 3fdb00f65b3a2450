"""Resuming from a run's own checkpoints when the newest one is damaged (``runtime/checkpointing.py``).

A ``.data`` file cut short (a full disk, an interrupted copy) still opens through its ``.index``; the damage
shows only when the values are read. The run resumes from the newest earlier checkpoint that reads, with a
warning, and when none reads the error is one line.
"""

import logging

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.errors import CheckpointError
from electra_tf.runtime import checkpointing


def _objects():
  step = tf.Variable(0, dtype=tf.int64)
  weights = tf.Variable(np.zeros((64, 64), np.float32))
  return step, weights, {"step": step, "weights": weights}


def _run_with_checkpoints(directory, steps=(1, 2, 3)):
  """Saves a checkpoint at each of ``steps``; the weights at step k are all k."""
  step, weights, objects = _objects()
  ckpt = checkpointing.Checkpointer(str(directory), objects, step)
  for k in steps:
    step.assign(k)
    weights.assign(np.full((64, 64), float(k), np.float32))
    ckpt.save(k)
  return ckpt


def _cut(prefix):
  data = tf.io.gfile.glob(prefix + ".data-*")[0]
  with open(data, "r+b") as f:
    f.truncate(100)


def test_an_intact_run_resumes_from_its_newest_checkpoint(tmp_path):
  _run_with_checkpoints(tmp_path)
  step, weights, objects = _objects()
  path, skip = checkpointing.Checkpointer(str(tmp_path), objects, step).restore()
  assert path.endswith("ckpt-3") and skip == 0
  assert int(step.numpy()) == 3 and np.all(weights.numpy() == 3.0)


def test_a_cut_newest_checkpoint_resumes_from_the_earlier_one_with_a_warning(tmp_path, caplog):
  saved = _run_with_checkpoints(tmp_path)
  _cut(saved.latest)
  step, weights, objects = _objects()
  with caplog.at_level(logging.WARNING, logger="electra_tf.runtime"):
    path, _ = checkpointing.Checkpointer(str(tmp_path), objects, step).restore()
  assert path.endswith("ckpt-2")
  assert int(step.numpy()) == 2 and np.all(weights.numpy() == 2.0)  # every value from ckpt-2, none from ckpt-3
  warning = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
  assert "ckpt-3" in warning and "truncated or corrupt" in warning and "resumed from" in warning


def test_no_readable_checkpoint_is_one_error_line(tmp_path):
  saved = _run_with_checkpoints(tmp_path, steps=(1, 2))
  for prefix in tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths:
    _cut(prefix)
  step, _, objects = _objects()
  with pytest.raises(CheckpointError) as error:
    checkpointing.Checkpointer(str(tmp_path), objects, step).restore()
  message = str(error.value)
  assert "\n" not in message and saved.latest in message and "no earlier checkpoint" in message


def test_a_checkpoint_of_other_shapes_is_one_error_line_without_tensorflow_warnings(tmp_path, caplog, capsys):
  """Resuming (or evaluating) with other model hparams than the run's: one line naming the checkpoint, the
  mismatch and the fix; neither the input-position warning nor TensorFlow's per-value warnings follow it."""
  import gc
  step, weights, objects = _objects()
  iterator = iter(tf.data.Dataset.range(10))
  ckpt = checkpointing.Checkpointer(str(tmp_path), objects, step, iterator=iterator)
  next(iterator)
  ckpt.save(1)
  other_step = tf.Variable(0, dtype=tf.int64)
  other = {"step": other_step, "weights": tf.Variable(np.zeros((32, 64), np.float32))}
  capsys.readouterr()
  with caplog.at_level(logging.WARNING):
    with pytest.raises(CheckpointError) as error:
      checkpointing.Checkpointer(str(tmp_path), other, other_step, iterator=iter(tf.data.Dataset.range(10))).restore()
    gc.collect()
  message = str(error.value)
  assert "\n" not in message and message.startswith(f"{ckpt.latest} does not fit this run's networks (")
  assert "(64, 64)" in message and "rerun with the hparams the run was started with" in message
  assert not [r for r in caplog.records if r.levelno >= logging.WARNING], [r.getMessage() for r in caplog.records]
  assert capsys.readouterr().err == ""


def test_a_checkpoint_of_variable_names_in_the_model_directory_says_to_pass_it_as_init_checkpoint(tmp_path):
  """A released (TF1, name-based) checkpoint copied into a run's model directory is not a run to resume."""
  from electra_tf.convert import write_tf1
  write_tf1(str(tmp_path), {"electra/embeddings/word_embeddings": np.zeros((4, 2), np.float32)}, 30, None,
            overwrite=True)
  step, _, objects = _objects()
  with pytest.raises(CheckpointError, match=r"model.ckpt-30 is a checkpoint of variable names \(the reference's TF1 "
                     r"layout\), not one of a run of this trainer; to start from its weights pass it as "
                     r"--init-checkpoint, with another model directory"):
    checkpointing.Checkpointer(str(tmp_path), objects, step).restore()
