"""Where a training step's time goes, from a TensorFlow profiler trace: its tables as Markdown.

    python benchmarks/step_profile.py LOGDIR --steps N [--wall-s S]

LOGDIR is the directory the profiler wrote (or any directory above its ``.xplane.pb``): a run's TensorBoard
directory after ``profile_steps`` ("A,B": N = B - A + 1), or a trace of your own. The summary and what its
figures mean: ``electra_tf/runtime/profiling.py``. A trace that holds a first call starts with where its tracing
and compilation went, in seconds. ``benchmarks/pretrain.py --profile-steps N`` and ``benchmarks/gpu_suite.py``
print the same tables for the steps they time.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from electra_tf.runtime import profiling  # pylint: disable=wrong-import-position


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("logdir", help="the directory the profiler wrote (or any directory above its .xplane.pb)")
  ap.add_argument("--steps", type=int, required=True, help="training steps the trace holds")
  ap.add_argument("--wall-s", type=float, help="their wall seconds (gives the busy share)")
  ap.add_argument("--top", type=int, default=12)
  args = ap.parse_args(argv)
  try:
    space = profiling.read_trace(args.logdir)
  except FileNotFoundError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  phases = profiling.compile_phases(space, args.wall_s)
  if phases["compiled"]:  # a trace that holds a first call: its tracing and compilation first, in seconds
    print(profiling.phases_markdown([("traced and compiled", phases)]) + "\n")
  print(profiling.markdown(profiling.summarize(space, args.steps, None if phases["compiled"] else args.wall_s,
                                               args.top)))
  return 0


if __name__ == "__main__":
  sys.exit(main())
