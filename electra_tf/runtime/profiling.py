"""Where a training step's time goes: TensorFlow's profiler over chosen steps, read back and summarized.

``profile_steps`` ("A,B", every job) traces training steps A to B into the run's TensorBoard directory
(``plugins/profile/``: TensorBoard's Profile tab) and logs a summary line when B is done (``StepProfiler``).
``summarize`` reads a trace (an ``XSpace``: ``read_trace``): on a GPU every kernel, copy and memset on every
stream of the first GPU; without one, the host's XLA operations (the events that carry an ``hlo_op``), so
the same summary describes a CPU step compiled with XLA.

- ``busy``: the time in which at least one kernel ran (overlaps across streams counted once). Busy against the
  wall time of the traced steps says whether the device waits for its host: a step whose kernels fill half of
  its wall time is launch-bound, however fast each kernel is.
- ``kernels per step``: kernel launches, copies and memsets per step (each XLA fusion and library call is one).
- categories (``CATEGORIES``): matrix products (cuBLAS, cuBLASLt, CUTLASS), cuDNN (attention, convolutions),
  XLA's reductions, XLA's transposes and copies, XLA's other fusions (element-wise work), memory copies and
  sets, other.
- the kernels and kernel families (a name without its instance numbers: ``loop_add_fusion``) that take the
  most time.
``benchmarks/step_profile.py`` prints the tables of any trace directory; ``benchmarks/pretrain.py
--profile-steps`` uses ``trace`` and ``benchmarks/gpu_suite.py`` prints its summaries. The trace is read with the
protobuf module TensorFlow ships (``tensorflow.tsl.profiler.protobuf.xplane_pb2``).
"""

import collections
import glob
import os
import re
import tempfile
import time
import typing

import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

_GPU_PLANE = "/device:GPU:"
_HOST_PLANE = "/host:CPU"
# lines of a device plane that repeat the streams' events grouped another way
_DERIVED_LINES = {"XLA Modules", "XLA Ops", "TensorFlow Ops", "TensorFlow Name Scope", "Steps", "Source code",
                  "XLA TraceMe", "Launch Stats", "Framework Name Scope", "Framework Ops"}
# what an empty trace means, in the tables and in the log line
_NO_EVENTS = ("holds no GPU kernels or XLA operations (a CPU step without XLA: open the trace in TensorBoard; on "
              "a GPU the profiler needs CUPTI: nvidia-cuda-cupti-cu12, or libcupti from the CUDA toolkit, on the "
              "library path)")
CATEGORIES = ("matrix products", "cuDNN", "XLA reductions", "XLA transposes and copies", "XLA element-wise",
              "memory copies and sets", "other")


def category(name: str) -> str:
  """Which of ``CATEGORIES`` a kernel (or XLA operation) of this name belongs to."""
  n = name.lower()
  if n.startswith(("memcpy", "memset")) or n in ("memcpyh2d", "memcpyd2h", "memcpyd2d"):
    return "memory copies and sets"
  if any(k in n for k in ("gemm", "cublas", "cutlass", "xmma", "gemv", "matmul", "dot")) or re.match(
      r"^(sm\d+|ampere|hopper|volta|turing)_", n):
    return "matrix products"
  if any(k in n for k in ("cudnn", "fmha", "flash_", "convolution")):
    return "cuDNN"
  if "reduce" in n or "reduction" in n:
    return "XLA reductions"
  if "transpose" in n or n.startswith("copy") or "_copy" in n:
    return "XLA transposes and copies"
  if "fusion" in n or n.startswith(("wrapped_", "loop_", "input_")):
    return "XLA element-wise"
  return "other"


def family(name: str) -> str:
  """A kernel's name without its instance numbers: ``loop_add_fusion_12``, ``loop_add_fusion.3`` and
  ``MatMul_1.344`` -> ``loop_add_fusion``, ``loop_add_fusion`` and ``MatMul``."""
  return re.sub(r"([._]\d+)+$", "", name)


def _stat(plane, event, stat_name: str) -> typing.Optional[str]:
  for s in event.stats:
    if plane.stat_metadata[s.metadata_id].name != stat_name:
      continue
    if s.HasField("ref_value"):
      return plane.stat_metadata[s.ref_value].name
    if s.HasField("str_value"):
      return s.str_value
  return None


def _events(space) -> typing.Tuple[str, list]:
  """(what was read, [(start_ps, end_ps, kernel name)]) of the first GPU's plane, else the host's XLA ops."""
  planes = {p.name: p for p in space.planes}
  gpu = sorted(n for n in planes if n.startswith(_GPU_PLANE))
  if gpu:
    plane = planes[gpu[0]]
    lines = [l for l in plane.lines if l.name not in _DERIVED_LINES]
    streams = [l for l in lines if l.name.startswith("Stream")]
    out = []
    for line in streams or lines:
      base = line.timestamp_ns * 1000
      for e in line.events:
        md = plane.event_metadata[e.metadata_id]
        out.append((base + e.offset_ps, base + e.offset_ps + e.duration_ps, md.display_name or md.name))
    return gpu[0].lstrip("/").replace("device:", ""), out
  plane = planes.get(_HOST_PLANE)
  out = []
  if plane is not None:
    for line in plane.lines:
      base = line.timestamp_ns * 1000
      for e in line.events:
        op = _stat(plane, e, "hlo_op")
        if op is not None:
          out.append((base + e.offset_ps, base + e.offset_ps + e.duration_ps, op))
  return "host CPU (XLA operations)", out


def _busy_ps(intervals) -> int:
  """The length of the union of [start, end) intervals."""
  total, end = 0, None
  for s, e in sorted(intervals):
    if end is None or s > end:
      total += e - s
      end = e
    elif e > end:
      total += e - end
      end = e
  return total


def summarize(space, steps: int, wall_s: typing.Optional[float] = None, top: int = 12) -> dict:
  """The summary of a trace (an ``XSpace`` message) of ``steps`` training steps that took ``wall_s`` seconds.

  Times are milliseconds per step; shares are of the kernels' summed time (``kernel_ms_per_step``)."""
  source, events = _events(space)
  per_step = lambda ps: ps / 1e9 / steps
  kernel_ps = sum(e - s for s, e, _ in events)
  by_name, by_family, by_category = collections.Counter(), collections.Counter(), collections.Counter()
  counts = collections.Counter()
  for s, e, name in events:
    by_name[name] += e - s
    by_family[family(name)] += e - s
    by_category[category(name)] += e - s
    counts[name] += 1

  def rows(counter, key):
    return [{key: n, "ms_per_step": per_step(ps), "share": ps / kernel_ps if kernel_ps else 0.0}
            for n, ps in counter.most_common(top)]

  out = {"source": source, "steps": steps, "kernels_per_step": len(events) / steps,
         "kernel_ms_per_step": per_step(kernel_ps), "busy_ms_per_step": per_step(_busy_ps(
             (s, e) for s, e, _ in events)),
         "categories": [{"category": c, "ms_per_step": per_step(by_category[c]),
                         "share": by_category[c] / kernel_ps if kernel_ps else 0.0}
                        for c in CATEGORIES if by_category[c]],
         "top_families": rows(by_family, "family"), "top_kernels": rows(by_name, "kernel")}
  for r in out["top_kernels"]:
    r["per_step"] = counts[r["kernel"]] / steps
  if wall_s is not None:
    out["wall_ms_per_step"] = wall_s * 1e3 / steps
    out["busy_fraction"] = out["busy_ms_per_step"] / out["wall_ms_per_step"]
  return out


def trace(run, steps: int) -> dict:
  """``summarize`` of one call of ``run`` (``steps`` training steps, finished when it returns: fetch a result)
  under TensorFlow's profiler; the wall time is the call's."""
  with tempfile.TemporaryDirectory() as logdir:
    tf.profiler.experimental.start(logdir)
    try:
      start = time.perf_counter()
      run()
      wall = time.perf_counter() - start
    finally:
      tf.profiler.experimental.stop()
    return summarize(read_trace(logdir), steps, wall)


def read_trace(logdir: str):
  """The newest ``.xplane.pb`` under ``logdir`` (the profiler writes ``plugins/profile/<run>/<host>.xplane.pb``),
  parsed."""
  found = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True), key=os.path.getmtime)
  if not found:
    raise FileNotFoundError(f"no .xplane.pb under {logdir}: give the directory the profiler wrote")
  space = xplane_pb2.XSpace()
  with open(found[-1], "rb") as f:
    space.ParseFromString(f.read())
  return space


def markdown(summary: dict, title: str = "") -> str:
  """The summary as Markdown: one line of totals, the categories, then the top families and kernels."""
  title = f"{title}: " if title else ""
  if "error" in summary:
    return f"{title}no profile: {summary['error']}"
  if not summary["kernels_per_step"]:
    return f"{title}the trace of {summary['steps']} steps {_NO_EVENTS}"
  head = (f"{summary['source']}, {summary['steps']} steps: {summary['kernels_per_step']:,.0f} kernels per step, "
          f"{summary['kernel_ms_per_step']:.2f} ms of kernels and {summary['busy_ms_per_step']:.2f} ms busy per step")
  if "wall_ms_per_step" in summary:
    head += (f" in {summary['wall_ms_per_step']:.2f} ms of wall time (busy "
             f"{100 * summary['busy_fraction']:.0f}%)")
  lines = [f"{title}{head}.", "", "| category | ms per step | share |", "|---|---:|---:|"]
  lines += [f"| {r['category']} | {r['ms_per_step']:.3f} | {100 * r['share']:.1f}% |" for r in summary["categories"]]
  lines += ["", "| kernel family | ms per step | share |", "|---|---:|---:|"]
  lines += [f"| `{r['family'][:90]}` | {r['ms_per_step']:.3f} | {100 * r['share']:.1f}% |"
            for r in summary["top_families"]]
  lines += ["", "| kernel | per step | ms per step | share |", "|---|---:|---:|---:|"]
  lines += [f"| `{r['kernel'][:90]}` | {r['per_step']:g} | {r['ms_per_step']:.3f} | {100 * r['share']:.1f}% |"
            for r in summary["top_kernels"]]
  return "\n".join(lines)


def summary_line(summary: dict, first: int, last: int) -> str:
  """One log line: kernels per step, the busy share of the wall time, the three costliest categories."""
  head = f"profile of steps {first}-{last}"
  if "error" in summary:
    return f"{head}: no summary ({summary['error']})"
  if not summary["kernels_per_step"]:
    return f"{head}: the trace {_NO_EVENTS}"
  text = f"{head}: {summary['source']}, {summary['kernels_per_step']:,.0f} kernels per step"
  if "busy_fraction" in summary:
    text += (f", busy {100 * summary['busy_fraction']:.0f}% of {summary['wall_ms_per_step']:.1f} ms per step "
             "(the rest: launches and host work between kernels)")
  top = sorted(summary["categories"], key=lambda c: -c["share"])[:3]
  return text + "; " + ", ".join(f"{c['category']} {100 * c['share']:.0f}%" for c in top)


class StepProfiler:
  """Traces training steps ``first`` to ``last`` of a run into ``logdir`` (TensorBoard's Profile tab reads its
  ``plugins/profile``) and says ``summary_line`` when ``last`` is done.

  The host loop ends its compiled loops at ``stops`` (so the trace holds exactly those steps), calls
  ``start_if_due(step)`` before a compiled loop that starts after ``step``, ``after_loop(report)`` after each,
  and ``finish()`` when it stops early (a signal, early stopping). The wall time is the compiled loops' own;
  a window that holds the first step includes tracing and compilation. With ``trace`` false (the workers of a
  job but its chief) it traces nothing but keeps the same loop edges, so every worker runs the same loops."""

  def __init__(self, first: int, last: int, logdir: typing.Optional[str], say: typing.Callable[[str], typing.Any],
               trace: bool = True):
    self.first, self.last, self.logdir, self.say, self.trace = first, last, logdir, say, trace
    self.active = self.done = False
    self.start_step, self.steps, self.wall_s = first, 0, 0.0

  @property
  def stops(self) -> typing.List[int]:
    return [self.first - 1, self.last]

  def start_if_due(self, step: int):
    if self.active or self.done or not self.first - 1 <= step < self.last:
      return
    if self.trace:
      tf.profiler.experimental.start(self.logdir)
    self.active, self.start_step = True, step + 1

  def after_loop(self, report):
    if not self.active:
      return
    self.steps += report.done
    self.wall_s += report.elapsed
    if report.step >= self.last:
      self.finish()

  def finish(self):
    if not self.active:
      return
    if self.trace:
      tf.profiler.experimental.stop()
    self.active, self.done = False, True
    if not self.steps or not self.trace:
      return
    try:
      summary = summarize(read_trace(self.logdir), self.steps, self.wall_s)
    except (OSError, ValueError) as e:  # a trace that cannot be read leaves the run alone
      summary = {"error": f"{type(e).__name__}: {e}"}
    self.say(f"{summary_line(summary, self.start_step, self.start_step + self.steps - 1)}; trace in "
             f"{os.path.join(self.logdir, 'plugins', 'profile')} (TensorBoard's Profile tab; tables: python "
             f"benchmarks/step_profile.py {self.logdir} --steps {self.steps})")
