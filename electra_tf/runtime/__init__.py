"""What every job shares (pre-training, fine-tuning, export), one concept per module.

The training lifecycle (docs/architecture.md):
- ``runner``: ``Runner`` and ``Task``: a job is a task (model, inputs, objective, evaluation); the runner owns
  strategy, precision, loss scaling, the optimizer, checkpoints, dropout streams, summaries, progress, the
  evaluation schedule and the NaN stop.
- ``step``: ``ReplicaStep``, one optimizer step on every replica (accumulation, clipping, loss scale).
- ``loop``: the compiled training and evaluation loops (``iterations_per_loop`` steps per call).
- ``training_log``: what a run logs (metrics, learning rate, throughput, ETA) to TensorBoard, the progress
  bar and the log lines.
- ``controller``: the host loop around the compiled loop: interval hooks, stop signals, the NaN line.
- ``profiling``: ``profile_steps``, TensorFlow's profiler over chosen steps and a line on where their time went.
- ``checkpointing``: checkpoints that hold the input position (constant-time resume), chief and worker
  directories, the damaged-checkpoint fallback.
- ``loss_scale``: dynamic loss scaling for float16.

Around it:
- ``devices``: ``select_strategy`` / ``is_chief`` / ``xla_choice``, the ``tf.distribute`` strategy a
  ``RuntimeConfig`` asks for, whether this process writes the outputs (one writer per job) and whether the step
  is XLA-compiled (auto: on a GPU).
- ``precision``: ``set_precision_policy``, float32 / bfloat16 / float16 compute with float32 variables.
- ``signals``: ``stop_requests``, SIGTERM / SIGINT as a stop request a loop polls between steps;
  ``stop_signals_caught``.
- ``summaries``: ``write_scalars`` and ``LazySummaryWriter`` (TensorBoard).
- ``console``: ``progress_bar``, ``log_line``, ``format_duration`` (ETAs).
- ``atomic_files``: ``atomic_write`` / ``atomic_output`` / ``atomic_directory`` (outputs appear whole or not
  at all) and ``check_writable`` (an output that could not be written is reported before the work, not after it).
- ``restore``: ``restore_checkpoint``, the one restore of a checkpoint that may not fit, reported in one line.

The names of the modules "around it" are also importable from ``electra_tf.runtime`` itself, their module
imported on first use: the jobs that need no TensorFlow (building data from local text) import
``atomic_files`` without it.
"""

import os

from electra_tf.lazy_exports import lazy_exports


def _host_cores() -> int:
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # not Linux
    return os.cpu_count() or 1


# XLA flags the project sets for its own process, unless the user set XLA_FLAGS; they concern XLA's GPU back end
# only. No Triton GEMMs: their autotuner made a bfloat16 step's first compilation on an H200 take minutes
# (benchmarks/README.md, "On a GPU"). Code generation on every core of the host (PARALLEL_COMPILATION_FLAGS):
# TensorFlow hands XLA no thread pool for compiling, and without these flags XLA's GPU compiler turns the whole
# step's LLVM module into GPU code on one thread.
PARALLEL_COMPILATION_FLAGS = ("--xla_gpu_enable_llvm_module_compilation_parallelism=true "
                              f"--xla_gpu_force_compilation_parallelism={_host_cores()}")
GPU_XLA_FLAGS = f"--xla_gpu_enable_triton_gemm=false {PARALLEL_COMPILATION_FLAGS}"


def set_default_xla_flags() -> bool:
  """Sets ``XLA_FLAGS`` to ``GPU_XLA_FLAGS`` unless the variable is set; true if it set it. XLA reads the
  variable once, so the commands call this before TensorFlow starts."""
  if "XLA_FLAGS" in os.environ:
    return False
  os.environ["XLA_FLAGS"] = GPU_XLA_FLAGS
  return True


_MODULE_OF = {
    "format_duration": "console", "log_line": "console", "progress_bar": "console",
    "is_chief": "devices", "select_strategy": "devices", "xla_choice": "devices",
    "atomic_directory": "atomic_files", "atomic_output": "atomic_files", "atomic_write": "atomic_files",
    "check_writable": "atomic_files",
    "PRECISION_POLICIES": "precision", "set_precision_policy": "precision",
    "restore_checkpoint": "restore",
    "stop_requests": "signals", "stop_signals_caught": "signals",
    "LazySummaryWriter": "summaries", "write_scalars": "summaries",
}
__all__ = sorted(_MODULE_OF)
__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF)
