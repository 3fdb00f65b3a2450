"""Counter-based random numbers keyed by (seed, step, stream, example row).

Masking and generator sampling draw from a small integer hash (Wellons' ``lowbias32``) of the element's
coordinates instead of a stateful or Philox generator:
- a value depends only on (seed, step, stream, global row, position in the row), so one device and N
  replicas given the same global batch draw exactly the same masks and samples, and a resumed run replays
  them without saving generator state;
- it is elementwise integer arithmetic that XLA fuses: on this CPU the [128, 19, 30522] Gumbel noise of
  one ELECTRA-Small step takes 0.04 s, against 0.4 s for ``stateless_uniform`` (Philox) and 37 s for the
  default stateless algorithm under XLA.
Statistical quality is ample for masking and sampling (full-avalanche 32-bit hash, two rounds).
"""

import tensorflow as tf

_GOLDEN = 0x9E3779B9
# Stream ids: independent draws of one step.
MASK_POSITIONS, MASK_REPLACE, GUMBEL = 1, 2, 3


def _u32(x):
  return tf.constant(x, tf.uint32)


def hash32(x):
  """lowbias32 on uint32 tensors (wrapping arithmetic)."""
  x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _u32(16)))
  x = x * _u32(0x7FEB352D)
  x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _u32(15)))
  x = x * _u32(0x846CA68B)
  return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _u32(16)))


def _as_u32(x):
  x = tf.convert_to_tensor(x)
  if x.dtype == tf.uint32:
    return x
  return tf.bitcast(tf.cast(x, tf.int32), tf.uint32) if x.dtype != tf.int64 else tf.cast(
      tf.bitwise.bitwise_and(x, 0xFFFFFFFF), tf.uint32)


def step_key(seed, step, stream: int):
  """uint32 scalar key for draw ``stream`` of training step ``step`` (int tensors or ints)."""
  k = hash32(_as_u32(seed) + _u32(_GOLDEN))
  k = hash32(tf.bitwise.bitwise_xor(k, _as_u32(step)))
  return hash32(tf.bitwise.bitwise_xor(k, _u32(stream * 0x632BE5AB & 0xFFFFFFFF)))


def keyed_uniform(key, shape, row_offset=0):
  """float32 U[0, 1) of ``shape`` = [B, ...]; row r gets the values of global row ``row_offset + r``.

  ``key`` is from ``step_key``; values have 24 random bits (like ``tf.random.uniform`` in float32).
  """
  shape = tf.convert_to_tensor(shape, tf.int32)
  rows = _as_u32(tf.range(shape[0]) + tf.cast(row_offset, tf.int32))
  per_row = tf.reduce_prod(shape[1:])
  row_keys = hash32(tf.bitwise.bitwise_xor(hash32(rows * _u32(_GOLDEN) + key), key))  # [B]
  cols = _as_u32(tf.range(per_row))
  x = hash32(row_keys[:, tf.newaxis] + cols[tf.newaxis, :] * _u32(0x85EBCA6B))
  x = hash32(x + row_keys[:, tf.newaxis])
  u = tf.cast(tf.bitwise.right_shift(x, _u32(8)), tf.float32) * (1.0 / (1 << 24))
  return tf.reshape(u, shape)
