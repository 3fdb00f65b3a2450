"""Restoring a checkpoint that may not fit, reported in one line without TensorFlow's noise."""

import gc
import logging
import typing

import tensorflow as tf

from electra_tf.errors import ConversionError, first_line

# What reading the values of a checkpoint whose ``.data`` file is cut or corrupt raises: its ``.index`` lists
# every variable, so the checkpoint opens, and the damage shows only when the values are read.
DAMAGED = (IndexError, tf.errors.DataLossError, tf.errors.OutOfRangeError)


def damaged_reason(prefix: str, error: BaseException) -> str:
  """``<prefix>: cannot read its values (<why>): its .data file is truncated or corrupt``."""
  return f"{prefix}: cannot read its values ({first_line(error)}): its .data file is truncated or corrupt"


def restore_checkpoint(prefix: str, objects: typing.Mapping[str, typing.Any],
                       require_match: bool = True) -> typing.Optional[str]:
  """Restores ``objects`` (the root's children of a ``tf.train.Checkpoint``) from ``prefix``; returns None,
  or the first line of why the checkpoint does not fit (another model size or structure), for the caller's
  one-line error. ``require_match``: every object must be in the checkpoint (else only what is restored
  must fit).

  A restore that fails half-way leaves TensorFlow's restore state behind, and when that is collected it
  logs a warning per value it did not restore: hundreds of lines after the error. The checkpoint and that
  state are collected here, with TensorFlow's logger quiet, before the caller reports anything.

  Raises ``ConversionError`` (one line) when the checkpoint's values cannot be read: its ``.index`` lists
  every variable, so it opens, and a truncated or corrupt ``.data`` file shows only when the values are read.
  """
  logger = tf.get_logger()
  level = logger.level
  logger.setLevel(logging.ERROR)
  try:
    checkpoint = tf.train.Checkpoint(**objects)
    try:
      status = checkpoint.read(prefix).expect_partial()
      if require_match:
        status.assert_existing_objects_matched()
      return None
    except DAMAGED as e:
      damaged = damaged_reason(prefix, e)
    except (ValueError, AssertionError, tf.errors.OpError) as e:
      reason, damaged = first_line(e), None
    del checkpoint  # it holds the restore state too
    gc.collect()  # the failure (its traceback holds the restore state) is gone once the except block ends
    if damaged is not None:
      raise ConversionError(f"{damaged}; copy the checkpoint again, or use an earlier one of the run")
    return reason
  finally:
    logger.setLevel(level)
