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
- a trace that holds a first call also tells where its tracing and compilation went (``compile_phases``):
  tracing Python into graphs, TensorFlow's graph passes and the conversion to HLO, XLA's HLO passes (autotuning
  among them on a GPU), XLA's code generation, and the rest.
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
# Host events TensorFlow and XLA (2.21; the CPU and GPU back ends) record while a call traces and compiles its step
_TRACING = ("tf.function-graph_building",)
_HLO_PASSES = ("HLO Transforms:", "HLO passes through layout assignment", "HLO passes after layout assignment")
_CODEGEN = ("CpuCompiler::RunBackend",)  # XLA's GPU compiler records none around its code generation
_AUTOTUNING = ("autotun", "algorithm-picker", "algorithm_picker")  # within a name, any case: XLA's GPU autotuners
FIRST_CALL_PHASES = (("tracing_s", "tracing"), ("to_hlo_s", "graph passes and conversion to HLO"),
                     ("hlo_passes_s", "XLA's HLO passes"), ("codegen_s", "XLA's code generation"),
                     ("rest_s", "the rest (running)"))
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


def record(run) -> typing.Tuple[typing.Any, float]:
  """(the trace, the wall seconds) of one call of ``run`` (finished when it returns: fetch a result) under
  TensorFlow's profiler."""
  with tempfile.TemporaryDirectory() as logdir:
    tf.profiler.experimental.start(logdir)
    try:
      start = time.perf_counter()
      run()
      wall = time.perf_counter() - start
    finally:
      tf.profiler.experimental.stop()
    return read_trace(logdir), wall


def trace(run, steps: int) -> dict:
  """``summarize`` of one call of ``run`` (``steps`` training steps) under TensorFlow's profiler; the wall time
  is the call's."""
  space, wall = record(run)
  return summarize(space, steps, wall)


def _host_plane(space):
  return next((p for p in space.planes if p.name == _HOST_PLANE), None)


def _host_intervals(space, names: typing.Tuple[str, ...], contains: bool = False) -> list:
  """[(start_ps, end_ps)] of the host's events whose name starts with (``contains``: holds, in any case) one of
  ``names``."""
  plane = _host_plane(space)
  if plane is None:
    return []
  wanted = {}
  for key, md in plane.event_metadata.items():
    wanted[key] = any(n in md.name.lower() for n in names) if contains else md.name.startswith(names)
  out = []
  for line in plane.lines:
    base = line.timestamp_ns * 1000
    out += [(base + e.offset_ps, base + e.offset_ps + e.duration_ps) for e in line.events if wanted.get(e.metadata_id)]
  return out


def _host_span_ps(space) -> int:
  every = _host_intervals(space, ("",))  # every name starts with ""
  return max(e for _, e in every) - min(s for s, _ in every) if every else 0


def compile_phases(space, wall_s: typing.Optional[float] = None) -> dict:
  """Where a traced call that traced and compiled its step spent its seconds, from the host's events
  (``FIRST_CALL_PHASES``; ``wall_s``: the call's seconds, else the span of the host's events):
  - ``tracing_s``: Python traced into TensorFlow graphs (every ``tf.function``'s graph building, nested ones once);
  - ``to_hlo_s``: from the end of tracing to XLA's first HLO pass: TensorFlow's graph passes and the conversion of
    the graph to HLO, which record no events of their own;
  - ``hlo_passes_s``: XLA's HLO passes, of which ``autotuning_s`` choose the matrix products' (and convolutions')
    algorithms on a GPU;
  - ``codegen_s``: XLA's code generation (LLVM; on a GPU also PTX and the GPU's binary). XLA's GPU compiler
    records no event around it: there it is the time from the end of the HLO passes to the first GPU kernel
    after them (the compiled step's), which also holds loading the code onto the GPU;
  - ``rest_s``: the wall time less all of these: running the steps, and TensorFlow's graph passes without XLA.
  ``compiled``: whether anything was traced or compiled (a call of a step already compiled: every phase 0)."""
  tracing = _host_intervals(space, _TRACING)
  passes = _host_intervals(space, _HLO_PASSES)
  codegen = _host_intervals(space, _CODEGEN)
  out = {"wall_s": wall_s if wall_s is not None else _host_span_ps(space) / 1e12,
         "tracing_s": _busy_ps(tracing) / 1e12, "to_hlo_s": 0.0, "hlo_passes_s": _busy_ps(passes) / 1e12,
         "autotuning_s": _busy_ps(_host_intervals(space, _AUTOTUNING, contains=True)) / 1e12,
         "codegen_s": _busy_ps(codegen) / 1e12}
  if passes and not codegen:
    passes_end = max(e for _, e in passes)
    source, kernels = _events(space)
    after = [s for s, _, _ in kernels if s >= passes_end] if source.startswith("GPU") else []
    if after:
      out["codegen_s"] = (min(after) - passes_end) / 1e12
  if passes:
    first_pass = min(s for s, _ in passes)
    traced_before = [e for _, e in tracing if e <= first_pass]
    if traced_before:
      out["to_hlo_s"] = (first_pass - max(traced_before)) / 1e12
  out["rest_s"] = max(0.0, out["wall_s"] - sum(out[k] for k in ("tracing_s", "to_hlo_s", "hlo_passes_s",
                                                                 "codegen_s")))
  out["compiled"] = bool(tracing or passes or codegen)
  return out


def first_call_line(phases: dict) -> str:
  """``compile_phases`` in words: the wall seconds, then each phase that took any time."""
  parts = []
  for key, what in FIRST_CALL_PHASES:
    if phases[key] or key == "rest_s":
      parts.append(f"{what} {phases[key]:.1f} s" + (f" (autotuning {phases['autotuning_s']:.1f} s)"
                                                     if key == "hlo_passes_s" and phases["autotuning_s"] else ""))
  return f"{phases['wall_s']:.1f} s, of which " + ", ".join(parts)


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


def phases_markdown(rows: typing.Sequence[typing.Tuple[str, dict]]) -> str:
  """[(label, ``compile_phases``)] as one Markdown table of seconds (each row's autotuning is within its HLO
  passes)."""
  keys = ["wall_s"] + [k for k, _ in FIRST_CALL_PHASES[:3]] + ["autotuning_s"] + [k for k, _ in FIRST_CALL_PHASES[3:]]
  names = dict(FIRST_CALL_PHASES, wall_s="in all", autotuning_s="of which autotuning")
  lines = ["| | " + " | ".join(names[k] for k in keys) + " |", "|---|" + "---:|" * len(keys)]
  lines += [f"| {label} | " + " | ".join(f"{phases[k]:.1f}" for k in keys) + " |" for label, phases in rows]
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
  a window that holds the first call (from step 1) traced and compiled the step too, and a line before the summary
  says where those seconds went (``compile_phases``). With ``trace`` false (the workers of a job but its chief) it
  traces nothing but keeps the same loop edges, so every worker runs the same loops."""

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
    last = self.start_step + self.steps - 1
    try:
      space = read_trace(self.logdir)
      phases = compile_phases(space, self.wall_s)
      # a window that holds the first call: no busy share of a wall time mostly spent tracing and compiling
      summary = summarize(space, self.steps, None if phases["compiled"] else self.wall_s)
    except (OSError, ValueError) as e:  # a trace that cannot be read leaves the run alone
      summary, phases = {"error": f"{type(e).__name__}: {e}"}, {"compiled": False}
    if phases["compiled"]:
      self.say(f"profile of steps {self.start_step}-{last}, which traced and compiled the step: "
               f"{first_call_line(phases)}")
    self.say(f"{summary_line(summary, self.start_step, last)}; trace in "
             f"{os.path.join(self.logdir, 'plugins', 'profile')} (TensorBoard's Profile tab; tables: python "
             f"benchmarks/step_profile.py {self.logdir} --steps {self.steps})")
