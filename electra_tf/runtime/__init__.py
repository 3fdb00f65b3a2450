"""What every job shares (pre-training, fine-tuning, export), one concept per module.

The training lifecycle (docs/architecture.md):
- ``runner``: ``Runner`` and ``Task``: a job is a task (model, inputs, objective, evaluation); the runner owns
  strategy, precision, loss scaling, the optimizer, checkpoints, dropout streams, summaries, progress, the
  evaluation schedule and the NaN stop.
- ``step``: ``ReplicaStep``, one optimizer step on every replica (accumulation, clipping, loss scale).
- ``loop``: the compiled training and evaluation loops (``iterations_per_loop`` steps per call).
- ``controller``: the host loop around the compiled loop: interval hooks, stop signals, the NaN line.
- ``checkpointing``: checkpoints that hold the input position (constant-time resume), chief and worker
  directories, the damaged-checkpoint fallback.
- ``loss_scale``: dynamic loss scaling for float16.

Around it:
- ``devices``: ``select_strategy`` / ``is_chief`` / ``xla_choice``, the ``tf.distribute`` strategy a
  ``RuntimeConfig`` asks for, whether this process writes the outputs (one writer per job) and whether the step
  is XLA-compiled (auto: on a GPU).
- ``precision``: ``set_precision_policy``, float32 / bfloat16 / float16 compute with float32 variables.
- ``signals``: ``stop_requests``, SIGTERM / SIGINT as a stop request a loop polls between steps.
- ``summaries``: ``write_scalars`` and ``LazySummaryWriter`` (TensorBoard).
- ``console``: ``progress_bar``, ``log_line``, ``format_duration`` (ETAs).
- ``atomic_files``: ``atomic_write`` / ``atomic_directory`` (outputs appear whole or not at all) and
  ``check_writable`` (an output that could not be written is reported before the work, not after it).
- ``restore``: ``restore_checkpoint``, the one restore of a checkpoint that may not fit, reported in one line.

The names of the modules "around it" are also importable from ``electra_tf.runtime`` itself, their module
imported on first use: the jobs that need no TensorFlow (building data from local text) import
``atomic_files`` without it.
"""

import importlib

_MODULE_OF = {
    "format_duration": "console", "log_line": "console", "progress_bar": "console",
    "is_chief": "devices", "select_strategy": "devices", "xla_choice": "devices", "GPU_XLA_FLAGS": "devices",
    "atomic_directory": "atomic_files", "atomic_write": "atomic_files", "check_writable": "atomic_files",
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
