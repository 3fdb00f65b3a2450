"""Where a step's time goes (``electra_tf.runtime.profiling``, ``benchmarks/step_profile.py``), read from a
profiler trace, and ``profile_steps`` in a real run.

A trace built by hand (a GPU's streams, the derived lines and the host's XLA operations beside them) checks the
arithmetic against values worked out by hand; a real trace of an XLA-compiled step on this CPU checks the
reading of what TensorFlow's profiler writes."""

import pathlib
import time

import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

from _data_prep_testlib import benchmark_module
from electra_tf.runtime import profiling

MS = 1_000_000_000  # picoseconds in a millisecond


def _add_plane(space, name, lines):
  """``lines``: [(line name, timestamp_ns, [(event name, offset_ps, duration_ps, {stat name: value})])]; a value
  given as ("ref", text) is stored as a reference to a stat metadata entry, as the profiler stores names."""
  plane = space.planes.add(name=name)
  events, stats = {}, {}

  def metadata(table, ids, text):
    if text not in ids:
      ids[text] = len(ids) + 1
      table[ids[text]].id, table[ids[text]].name = ids[text], text
    return ids[text]

  for line_name, timestamp_ns, line_events in lines:
    line = plane.lines.add(name=line_name, timestamp_ns=timestamp_ns)
    for name, offset, duration, event_stats in line_events:
      event = line.events.add(metadata_id=metadata(plane.event_metadata, events, name), offset_ps=offset,
                              duration_ps=duration)
      for key, value in event_stats.items():
        stat = event.stats.add(metadata_id=metadata(plane.stat_metadata, stats, key))
        if isinstance(value, tuple):
          stat.ref_value = metadata(plane.stat_metadata, stats, value[1])
        else:
          stat.str_value = value
  return plane


def _gpu_space():
  """Two streams, the second's clock 5 ms after the first's: kernels at [0, 10), [12, 15), [5, 20) and
  [30, 32) ms; a derived line and the host's XLA operations that must not count."""
  space = xplane_pb2.XSpace()
  _add_plane(space, "/host:CPU", [("tf_numa_-1_Eigen", 0, [("dot.1", 0, 500 * MS, {"hlo_op": "dot.1"})])])
  _add_plane(space, "/device:GPU:0", [
      ("Stream #7(Compute)", 1_000_000, [("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn", 0, 10 * MS, {}),
                                         ("loop_add_fusion_1", 12 * MS, 3 * MS, {"hlo_op": ("ref", "add.3")})]),
      ("Stream #9(Compute,Memcpy)", 6_000_000, [("input_reduce_fusion_3", 0, 15 * MS, {}),
                                                ("MemcpyD2D", 25 * MS, 2 * MS, {})]),
      ("XLA Ops", 1_000_000, [("fusion.3", 0, 100 * MS, {})])])
  return space


def test_a_gpu_trace_gives_kernels_busy_time_categories_and_the_costliest_kernels():
  s = profiling.summarize(_gpu_space(), steps=2, wall_s=0.1)
  assert s["source"] == "GPU:0"
  assert s["kernels_per_step"] == 2  # 4 kernels in 2 steps; the derived line and the host are left out
  assert abs(s["kernel_ms_per_step"] - 15) < 1e-9  # 30 ms of kernels
  assert abs(s["busy_ms_per_step"] - 11) < 1e-9  # [0, 20) and [30, 32): overlaps counted once
  assert abs(s["wall_ms_per_step"] - 50) < 1e-9 and abs(s["busy_fraction"] - 0.22) < 1e-12
  assert [(c["category"], round(c["ms_per_step"], 9), round(c["share"], 9)) for c in s["categories"]] == [
      ("matrix products", 5, round(1 / 3, 9)), ("XLA reductions", 7.5, 0.5),
      ("XLA element-wise", 1.5, 0.1), ("memory copies and sets", 1, round(1 / 15, 9))]
  assert [f["family"] for f in s["top_families"]] == [
      "input_reduce_fusion", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn", "loop_add_fusion", "MemcpyD2D"]
  assert [(k["kernel"], k["per_step"]) for k in s["top_kernels"][:2]] == [
      ("input_reduce_fusion_3", 0.5), ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn", 0.5)]
  text = profiling.markdown(s, "small bfloat16")
  assert text.splitlines()[0] == ("small bfloat16: GPU:0, 2 steps: 2 kernels per step, 15.00 ms of kernels and "
                                  "11.00 ms busy per step in 50.00 ms of wall time (busy 22%).")
  assert "| XLA reductions | 7.500 | 50.0% |" in text.splitlines()


def test_without_a_gpu_plane_the_host_xla_operations_are_read():
  space = xplane_pb2.XSpace()
  _add_plane(space, "/host:CPU", [
      ("tf_numa_-1_Eigen/1", 0, [("ThunkExecutor::Execute", 0, 40 * MS, {}),  # no hlo_op: not an XLA operation
                                 ("MatMul.344", 0, 8 * MS, {"hlo_op": ("ref", "MatMul.344")})]),
      ("tf_numa_-1_Eigen/2", 0, [("multiply_add_fusion.2", 4 * MS, 8 * MS, {"hlo_op": "multiply_add_fusion.2"})])])
  s = profiling.summarize(space, steps=1)
  assert s["source"] == "host CPU (XLA operations)" and s["kernels_per_step"] == 2
  assert abs(s["busy_ms_per_step"] - 12) < 1e-9 and "busy_fraction" not in s  # [0, 8) and [4, 12)
  assert [f["family"] for f in s["top_families"]] == ["MatMul", "multiply_add_fusion"]
  assert [c["category"] for c in s["categories"]] == ["matrix products", "XLA element-wise"]


def test_a_trace_of_an_xla_step_on_this_cpu():
  """The profiler's own trace: every call of a compiled step runs the same operations, so a trace of three
  calls has the same operations per step as a trace of one, and the matrix product is among them."""
  x = tf.random.stateless_normal([256, 256], seed=[1, 2])
  step = tf.function(lambda x: tf.reduce_sum(tf.tanh(tf.matmul(x, x))), jit_compile=True)
  step(x).numpy()  # compiled before the traces
  one = profiling.trace(lambda: step(x).numpy(), 1)
  three = profiling.trace(lambda: [step(x).numpy() for _ in range(3)], 3)
  assert one["source"] == three["source"] == "host CPU (XLA operations)"
  assert one["kernels_per_step"] == three["kernels_per_step"] > 0
  assert "matrix products" in [c["category"] for c in three["categories"]]
  assert 0 < three["busy_ms_per_step"] <= three["wall_ms_per_step"]


def test_the_command_reads_a_trace_directory_and_says_in_one_line_when_there_is_none(tmp_path, capsys):
  run = tmp_path / "plugins" / "profile" / "2026_01_01"
  run.mkdir(parents=True)
  (run / "host.xplane.pb").write_bytes(_gpu_space().SerializeToString())
  step_profile = benchmark_module("step_profile")
  assert step_profile.main([str(tmp_path), "--steps", "2"]) == 0
  assert capsys.readouterr().out.startswith("GPU:0, 2 steps: 2 kernels per step")
  assert step_profile.main([str(tmp_path / "plugins" / "nothing"), "--steps", "2"]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and err[0].startswith("error: no .xplane.pb under ")


def test_a_failed_or_empty_trace_says_so():
  assert profiling.markdown({"error": "RuntimeError: no CUPTI"}, "base bfloat16") == (
      "base bfloat16: no profile: RuntimeError: no CUPTI")
  empty = profiling.summarize(xplane_pb2.XSpace(), steps=3, wall_s=0.1)
  assert empty["kernels_per_step"] == 0 and "needs CUPTI" in profiling.markdown(empty)


def test_the_summary_line_names_the_steps_the_busy_share_and_the_costliest_work():
  s = profiling.summarize(_gpu_space(), steps=2, wall_s=0.1)
  assert profiling.summary_line(s, 7, 8) == (
      "profile of steps 7-8: GPU:0, 2 kernels per step, busy 22% of 50.0 ms per step (the rest: launches and host "
      "work between kernels); XLA reductions 50%, matrix products 33%, XLA element-wise 10%")
  assert "no GPU kernels or XLA operations" in profiling.summary_line(
      profiling.summarize(xplane_pb2.XSpace(), steps=1, wall_s=0.1), 1, 1)


def test_compiled_loops_end_where_a_profile_starts_and_ends():
  """``stops`` end the host loop's compiled loops at single steps, besides the hooks' intervals."""
  import numpy as np
  from electra_tf.runtime import controller
  step_var, lengths = tf.Variable(0, dtype=tf.int64), []

  def loop(iterator, n):
    lengths.append(n)
    step_var.assign_add(n)
    return {}, tf.constant(n), tf.constant(-1)

  host = controller.Controller(loop, step_var, 5, [controller.Hook(lambda r: None, every=4)], save=lambda s: None,
                               saved_at=lambda s: True, latest=lambda: None, stops=[6, 9])
  assert host.run(None, 13) == "finished"
  assert lengths == [4, 2, 2, 1, 3, 1] and np.cumsum(lengths).tolist() == [4, 6, 8, 9, 12, 13]


def test_profile_steps_traces_those_steps_of_a_run_and_changes_no_number(tmp_path, data_dir, bert_vocab, capsys):
  """Fine-tuning with ``profile_steps`` "7,9" (XLA on this CPU): the trace is in the trial's TensorBoard
  directory, one line says where those three steps' time went, and the trained weights are those of the same
  run without a profile, bit for bit (the trace only ends two compiled loops early)."""
  import numpy as np
  from tests._finetuning_testlib import rt_polarity_as_sst, tiny_config
  from electra_tf.finetuning import run as run_lib
  root = rt_polarity_as_sst(tmp_path, data_dir, 120, 16)
  weights = {}
  for name, steps in (("plain", ""), ("profiled", "7,9")):
    cfg = tiny_config(root, ["sst"], bert_vocab, iterations_per_loop=5, use_xla=True, learning_rate=1e-3,
                      profile_steps=steps)
    cfg.model_name = name
    run = run_lib.FinetuningRun(cfg, progress=False)
    run.run()
    reader = tf.train.load_checkpoint(run.model_dir(1))
    weights[name] = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map() if n != "global_step"}
    if steps:
      lines = [l for l in capsys.readouterr().out.splitlines() if l.startswith("profile of steps")]
      tensorboard = pathlib.Path(run.model_dir(1)) / "tensorboard"
  assert len(lines) == 1 and lines[0].startswith(
      "profile of steps 7-9: host CPU (XLA operations), ") and " kernels per step, busy " in lines[0]
  assert lines[0].endswith(f"trace in {tensorboard / 'plugins' / 'profile'} (TensorBoard's Profile tab; tables: "
                           f"python benchmarks/step_profile.py {tensorboard} --steps 3)")
  assert len(list(tensorboard.glob("plugins/profile/*/*.xplane.pb"))) == 1
  assert weights["plain"].keys() == weights["profiled"].keys()
  for n in weights["plain"]:
    np.testing.assert_array_equal(weights["profiled"][n], weights["plain"][n], err_msg=n)


def test_a_worker_that_is_not_the_chief_keeps_the_loop_edges_and_traces_nothing(tmp_path):
  from electra_tf.runtime import controller
  said = []
  worker = profiling.StepProfiler(3, 4, str(tmp_path), said.append, trace=False)
  assert worker.stops == [2, 4]
  worker.start_if_due(2)
  worker.after_loop(controller.LoopReport(step=4, totals={}, done=2, elapsed=0.5))
  assert worker.done and not worker.active and said == [] and not list(tmp_path.iterdir())


def test_where_a_first_call_s_seconds_went_on_a_gpu(tmp_path, capsys):
  """A GPU first call built by hand, with the events XLA's GPU compiler records: graph building (an inner one
  nested in the outer), XLA's HLO passes ("HLO Transforms") with two autotuning events inside and a kernel of
  the autotuner's trials, no event around code generation, then the step's kernel. Seconds: tracing [0, 10),
  HLO passes [20, 50) (autotuning [22, 30) and [28, 35): 13 s), code generation from 50 to the first kernel
  after the passes at 96, wall 100."""
  s = 1_000_000_000_000  # picoseconds in a second
  space = xplane_pb2.XSpace()
  _add_plane(space, "/host:CPU", [
      ("python", 0, [("tf.function-graph_building", 0, 10 * s, {}),
                     ("tf.function-graph_building", 2 * s, 5 * s, {})]),
      ("tf_Compute/1", 0, [("HLO Transforms:a_inference_step_1", 20 * s, 30 * s, {}),
                           ("gemm-algorithm-picker", 22 * s, 8 * s, {}),
                           ("AutotunerCompile", 28 * s, 7 * s, {}),
                           ("post-scheduling-passes", 55 * s, 2 * s, {})])])
  _add_plane(space, "/device:GPU:0", [("Stream #7(Compute)", 0, [("gemm_trial", 25 * s, 1 * s, {}),
                                                                 ("loop_add_fusion", 96 * s, 1 * s, {})])])
  phases = profiling.compile_phases(space, 100.0)
  assert phases == {"wall_s": 100.0, "tracing_s": 10.0, "to_hlo_s": 10.0, "hlo_passes_s": 30.0, "autotuning_s": 13.0,
                    "codegen_s": 46.0, "rest_s": 4.0, "compiled": True}
  assert profiling.first_call_line(phases) == (
      "100.0 s, of which tracing 10.0 s, graph passes and conversion to HLO 10.0 s, XLA's HLO passes 30.0 s "
      "(autotuning 13.0 s), XLA's code generation 46.0 s, the rest (running) 4.0 s")
  assert profiling.compile_phases(space)["wall_s"] == 57.0  # without a wall time: the host events' span
  run = tmp_path / "plugins" / "profile" / "2026_01_01"
  run.mkdir(parents=True)
  (run / "host.xplane.pb").write_bytes(space.SerializeToString())
  assert benchmark_module("step_profile").main([str(tmp_path), "--steps", "1", "--wall-s", "100"]) == 0
  out = capsys.readouterr().out.splitlines()  # the phases first; the kernels without a busy share
  assert out[2] == "| traced and compiled | 100.0 | 10.0 | 10.0 | 30.0 | 13.0 | 46.0 | 4.0 |"
  assert out[4] == "GPU:0, 1 steps: 2 kernels per step, 2000.00 ms of kernels and 2000.00 ms busy per step."
  nothing = profiling.compile_phases(_gpu_space(), 0.1)  # the steps of a compiled step alone
  assert not nothing["compiled"] and nothing["rest_s"] == 0.1 and profiling.first_call_line(nothing) == (
      "0.1 s, of which the rest (running) 0.1 s")


def test_a_first_call_on_this_cpu_is_traced_compiled_and_run_and_a_second_call_is_only_run(tmp_path):
  """The profiler's own events: the first call of an XLA step traces it, passes it through XLA's HLO passes and
  generates its code; a second call does none of that. A window from step 1 of ``StepProfiler`` says so in a
  line before its summary, which then gives no busy share (its wall time is mostly compiling)."""
  from electra_tf.runtime import controller
  x = tf.random.stateless_normal([64, 64], seed=[1, 2])
  step = tf.function(lambda x: tf.reduce_sum(tf.tanh(tf.matmul(x, x)) * 3.0), jit_compile=True)
  said = []
  window = profiling.StepProfiler(1, 1, str(tmp_path), said.append)
  window.start_if_due(0)
  start = time.perf_counter()
  step(x).numpy()
  window.after_loop(controller.LoopReport(step=1, totals={}, done=1, elapsed=time.perf_counter() - start))
  phases = profiling.compile_phases(profiling.read_trace(str(tmp_path)), window.wall_s)
  assert phases["compiled"] and phases["tracing_s"] > 0 and phases["hlo_passes_s"] > 0 and phases["codegen_s"] > 0
  assert phases["autotuning_s"] == 0  # no GPU
  assert abs(sum(phases[k] for k, _ in profiling.FIRST_CALL_PHASES) - phases["wall_s"]) < 1e-9
  assert len(said) == 2 and said[0] == ("profile of steps 1-1, which traced and compiled the step: "
                                        + profiling.first_call_line(phases))
  assert said[1].startswith("profile of steps 1-1: host CPU (XLA operations), ") and "busy" not in said[1]
  space, wall = profiling.record(lambda: step(x).numpy())
  again = profiling.compile_phases(space, wall)
  assert not again["compiled"] and again["tracing_s"] == again["hlo_passes_s"] == again["codegen_s"] == 0
