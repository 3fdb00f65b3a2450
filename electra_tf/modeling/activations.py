"""Activations by the names the reference's BertConfig uses."""

import math

import tensorflow as tf


def gelu(x):
  """Exact GELU, 0.5 x (1 + erf(x / sqrt 2)), as the reference (not the tanh approximation)."""
  return 0.5 * x * (1.0 + tf.math.erf(x * tf.cast(1.0 / math.sqrt(2.0), x.dtype)))


def get_activation(name: str):
  activations = {"gelu": gelu, "relu": tf.nn.relu, "tanh": tf.tanh, "linear": None}
  if name not in activations:
    raise ValueError(f"unsupported activation {name!r}; use one of {', '.join(activations)}")
  return activations[name]
