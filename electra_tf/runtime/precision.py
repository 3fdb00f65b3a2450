"""Precision: float32 / bfloat16 / float16 compute with float32 variables (the Keras global policy)."""

import keras

PRECISION_POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def set_precision_policy(mixed_precision: str):
  """float32 / bfloat16 / float16 -> the Keras global dtype policy (variables stay float32)."""
  keras.mixed_precision.set_global_policy(PRECISION_POLICIES[mixed_precision])
