"""TensorBoard: scalars written without the tensorboard package, and a writer that creates its events file
only when the first scalar arrives."""

import typing

import tensorflow as tf
from tensorflow.core.framework import summary_pb2


def _scalar_metadata() -> bytes:
  # What TensorBoard's scalar dashboard reads; ``tf.summary.scalar`` would need the tensorboard package.
  return summary_pb2.SummaryMetadata(
      plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
      data_class=summary_pb2.DATA_CLASS_SCALAR).SerializeToString()


class LazySummaryWriter:
  """A TensorBoard writer whose events file appears with the first scalar written, so that a run that fails
  before logging anything (bad data, a wrong model size) leaves no events file behind."""

  def __init__(self, logdir: str):
    self.logdir, self._writer = logdir, None

  def as_default(self, step=None):
    if self._writer is None:
      self._writer = tf.summary.create_file_writer(self.logdir)
    return self._writer.as_default(step=step)

  def flush(self):
    if self._writer is not None:
      self._writer.flush()


def write_scalars(writer, step: int, values: typing.Mapping[str, float], prefix: str = ""):
  """TensorBoard scalars ``prefix + name`` at ``step`` (non-numbers are skipped); ``writer`` None: no-op."""
  if writer is None:
    return
  metadata = _scalar_metadata()
  with writer.as_default(step=step):
    for k, v in values.items():
      if isinstance(v, (int, float)) and not isinstance(v, bool):
        tf.summary.write(prefix + k, tf.constant(float(v), tf.float32), metadata=metadata)
