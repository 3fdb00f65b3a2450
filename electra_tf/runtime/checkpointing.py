"""Training checkpoints with the input position in them, so a resumed run starts in constant time.

A ``Checkpointer`` saves the job's objects (weights, optimizer slots and step, loss scale) together with
the state of the local ``tf.data`` iterator of global batches (``loop.compile_loop`` reads it): a resumed
run restores the iterator where it stopped instead of re-reading and re-decoding every batch before it.
The iterator's state is topology-free (it yields global batches; replicas take their rows afterwards), so a
run may resume on another number of devices. A checkpoint written without the iterator's state (by an
older version, or whose state no longer fits the pipeline) resumes by replaying the stream instead:
``restore`` then returns the number of global batches the caller must skip. A newest checkpoint whose values
cannot be read (a ``.data`` file cut by a full disk or an interrupted copy) is passed over with a warning for
the newest earlier one that reads; when none reads, the error says so in one line, as it does for a
checkpoint that does not fit the job's networks (a run resumed with other model hparams).

In a multi-worker job every worker restores the chief's latest checkpoint; non-chief workers write
throw-away copies (every worker must take part in a save) to a directory of their own on their local disk,
outside the job's directories, deleted when training ends (``worker_dir``).
"""

import contextlib
import gc
import hashlib
import logging
import os
import tempfile
import typing

import tensorflow as tf

from electra_tf import fileio
from electra_tf.errors import CheckpointError, first_line
from electra_tf.runtime.restore import DAMAGED, damaged_reason

log = logging.getLogger(__name__)

ITERATOR_KEY = "input_iterator"
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"  # what an object-based checkpoint holds, a name-based one not


class Checkpointer:
  """``objects``: the ``tf.train.Checkpoint`` children (without the iterator); ``step_var`` numbers the
  files (``ckpt-<step>``); ``write_dir`` defaults to ``directory`` (the chief's)."""

  def __init__(self, directory: str, objects: typing.Mapping[str, typing.Any], step_var, max_to_keep: int = 5,
               write_dir: typing.Optional[str] = None, iterator=None):
    self.directory, self.step_var = directory, step_var
    self.write_dir = write_dir or directory
    self.objects = dict(objects)
    if iterator is not None:
      self.objects[ITERATOR_KEY] = iterator
    self.max_to_keep = max_to_keep
    self._new_checkpoint()

  def _new_checkpoint(self):
    self.checkpoint = tf.train.Checkpoint(**self.objects)
    self.manager = tf.train.CheckpointManager(self.checkpoint, self.write_dir, max_to_keep=self.max_to_keep,
                                              step_counter=self.step_var, checkpoint_name="ckpt")

  @property
  def latest(self) -> typing.Optional[str]:
    """The newest checkpoint of the job (the chief's directory), or None."""
    return tf.train.latest_checkpoint(self.directory)

  def restore(self) -> typing.Tuple[typing.Optional[str], int]:
    """Restores the latest readable checkpoint, if any: (its path or None, global batches the input must skip).

    The skip is 0 when the iterator's position came back with the checkpoint (or there was none)."""
    latest = self.latest
    if latest is None:
      return None, 0
    state = tf.train.get_checkpoint_state(self.directory)
    candidates = [latest] + [p for p in reversed(list(state.all_model_checkpoint_paths) if state else [])
                             if p != latest and tf.io.gfile.exists(p + ".index")]
    if not holds_object_graph(latest):
      raise CheckpointError(f"{latest} is a checkpoint of variable names (the reference's TF1 layout), not one of "
                            "a run of this trainer; to start from its weights pass it as --init-checkpoint, with "
                            "another model directory")
    unreadable = []
    for path in candidates:
      misfit = None
      with _quiet_tensorflow():  # a failed restore's state logs a warning per value it did not restore
        try:
          skip = self._restore_from(path)
        except DAMAGED as e:
          unreadable.append(damaged_reason(path, e))
          continue
        except (ValueError, AssertionError, tf.errors.OpError) as e:  # another model size or structure
          misfit = first_line(e)
        if misfit is not None:  # the failed restore's state goes now, not after the error line
          self._new_checkpoint()
          gc.collect()
      if misfit is not None:
        raise CheckpointError(f"{path} does not fit this run's networks ({misfit[:300]}); rerun with the "
                              "hparams the run was started with, or start in a new model directory")
      if unreadable:
        log.warning("%s; resumed from %s instead (the run repeats the steps after it)", unreadable[0], path)
      return path, skip
    raise CheckpointError(f"{unreadable[0]}, and no earlier checkpoint of the run in {self.directory} reads "
                          "either; copy the run's checkpoints again, or start the run in a new model directory")

  def _restore_from(self, path: str) -> int:
    saved = tf.compat.v1.train.NewCheckpointReader(path).get_variable_to_shape_map()  # any filesystem (gs://)
    has_iterator = ITERATOR_KEY in self.objects and any(name.startswith(ITERATOR_KEY + "/") for name in saved)
    position_misfit = None
    if has_iterator:
      try:
        self.checkpoint.read(path).assert_existing_objects_matched().expect_partial()
        return 0
      except DAMAGED:
        raise
      except (tf.errors.OpError, ValueError, AssertionError) as e:
        position_misfit = first_line(e)[:200]
    others = {k: v for k, v in self.objects.items() if k != ITERATOR_KEY}
    tf.train.Checkpoint(**others).read(path).expect_partial().assert_existing_objects_matched()
    if position_misfit is not None:  # said only once the rest has fitted (else restore() says what did not)
      log.warning("the input position in %s does not fit this input pipeline (%s); replaying the input "
                  "stream to it instead", path, position_misfit)
    return int(self.step_var.numpy()) if ITERATOR_KEY in self.objects else 0

  def save(self, step: int) -> str:
    return self.manager.save(checkpoint_number=step)

  def saved_at(self, step: int) -> bool:
    latest = self.manager.latest_checkpoint
    return latest is not None and latest.endswith(f"-{step}")

  def remove_worker_copies(self):
    """Deletes a non-chief worker's throw-away directory."""
    if self.write_dir != self.directory:
      fileio.rmtree(self.write_dir, ignore_errors=True)


def holds_object_graph(prefix: str) -> bool:
  """Whether the checkpoint at ``prefix`` is object-based (a run of this trainer's), not one of variable names
  (the reference's TF1 layout). An index that does not read counts as object-based: restoring says what is
  wrong with it."""
  try:
    return OBJECT_GRAPH_KEY in tf.compat.v1.train.NewCheckpointReader(prefix).get_variable_to_shape_map()
  except tf.errors.OpError:
    return True


@contextlib.contextmanager
def _quiet_tensorflow():
  logger = tf.get_logger()
  level = logger.level
  logger.setLevel(logging.ERROR)
  try:
    yield
  finally:
    logger.setLevel(level)


def worker_dir(model_dir: str, strategy: tf.distribute.Strategy, chief: bool) -> str:
  """Where this worker writes the checkpoints of ``model_dir``: ``model_dir`` itself for the chief; for another
  worker a throw-away directory in its local temporary directory, one per process and checkpoint directory,
  so that nothing but the chief writes into the job's directories."""
  if chief:
    return model_dir
  key = hashlib.sha1(str(model_dir).encode("utf-8")).hexdigest()[:12]
  task = getattr(getattr(strategy, "cluster_resolver", None), "task_id", 0)
  return os.path.join(tempfile.gettempdir(), f"electra_worker{task}_{os.getpid()}_{key}")
