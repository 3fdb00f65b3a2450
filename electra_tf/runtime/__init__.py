"""What every training and export job shares, one concept per module:

- ``devices``: ``select_strategy`` / ``is_chief`` / ``xla_choice``, the ``tf.distribute`` strategy a
  ``RuntimeConfig`` asks for, whether this process writes the outputs (one writer per job) and whether the step
  is XLA-compiled (auto: on a GPU).
- ``precision``: ``set_precision_policy``, float32 / bfloat16 / float16 compute with float32 variables.
- ``signals``: ``stop_requests``, SIGTERM / SIGINT as a stop request a loop polls between steps.
- ``summaries``: ``write_scalars`` and ``LazySummaryWriter`` (TensorBoard).
- ``console``: ``progress_bar``, ``log_line``, ``format_duration`` (ETAs).
- ``outputs``: ``atomic_write`` / ``atomic_directory`` (outputs appear whole or not at all) and
  ``check_writable`` (an output that could not be written is reported before the work, not after it).
- ``restore``: ``restore_checkpoint``, a restore that may not fit, reported in one line.

Every name is also importable from ``electra_tf.runtime`` itself, its module imported on first use: the
jobs that need no TensorFlow (building data from local text) import ``outputs`` without it.
"""

import importlib

_MODULE_OF = {
    "format_duration": "console", "log_line": "console", "progress_bar": "console",
    "is_chief": "devices", "select_strategy": "devices", "xla_choice": "devices", "GPU_XLA_FLAGS": "devices",
    "atomic_directory": "outputs", "atomic_write": "outputs", "check_writable": "outputs",
    "PRECISION_POLICIES": "precision", "set_precision_policy": "precision",
    "restore_checkpoint": "restore",
    "stop_requests": "signals",
    "LazySummaryWriter": "summaries", "write_scalars": "summaries",
}
__all__ = sorted(_MODULE_OF)


def __getattr__(name):
  if name in _MODULE_OF:
    return getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(_MODULE_OF))
