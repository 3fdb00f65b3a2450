"""benchmarks/gpu_suite.py on a machine without a GPU: where it cannot run (without TensorFlow, without a GPU)
it says so in one line, exits with status 2 and writes no report; its plan, time budget, targets and report;
and every figure's flags are ones its script accepts."""

import importlib.util
import pathlib
import sys
import time

import pytest

from conftest import REPO_ROOT


def _suite():
  spec = importlib.util.spec_from_file_location("gpu_suite", REPO_ROOT / "benchmarks" / "gpu_suite.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _default_args(suite):
  """The flags of ``python benchmarks/gpu_suite.py`` with none given."""
  return suite.argparse.Namespace(parts="pretrain,tests,finetune,squad,accumulation,input", sizes="small,base",
                                  dtypes="bfloat16,float32", quick=False)


def test_without_tensorflow_it_says_how_to_install_it(tmp_path, monkeypatch, capsys):
  monkeypatch.setitem(sys.modules, "tensorflow", None)  # `import tensorflow` raises ImportError
  out = tmp_path / "gpu_suite.md"
  assert _suite().main(["--out", str(out)]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and err[0].startswith("error: TensorFlow is not installed for ")
  assert 'pip install "tensorflow[and-cuda]==2.21.*"' in err[0] and not out.exists()


def test_without_a_gpu_it_says_so(tmp_path, capsys):
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  if tf.config.list_physical_devices("GPU"):
    pytest.skip("this machine has a GPU: the suite would run")
  out = tmp_path / "gpu_suite.md"
  assert _suite().main(["--out", str(out)]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err == ["error: no GPU on this machine (TensorFlow sees none): the GPU suite needs one; CPU figures are "
                 "in benchmarks/README.md"] and not out.exists()


def test_a_figure_runs_with_its_own_xla_flags_or_the_suite_s():
  suite = _suite()
  code = "import os; print(os.environ.get('XLA_FLAGS'))"
  assert suite._run(["-c", code], timeout=60, xla_flags="--xla_gpu_autotune_level=0").stdout.strip() == (
      "--xla_gpu_autotune_level=0")
  assert suite._run(["-c", code], timeout=60).stdout.strip() == str(suite.os.environ.get("XLA_FLAGS"))


def test_a_figure_past_its_timeout_is_stopped_with_what_it_started_and_its_row_says_so(tmp_path):
  suite = _suite()
  child = tmp_path / "child.pid"
  code = ("import subprocess, sys, time\n"
          f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
          f"open({str(child)!r}, 'w').write(str(p.pid))\n"
          "print('started', flush=True)\ntime.sleep(60)\n")
  proc = suite._run(["-c", code], timeout=3)
  assert proc.returncode == 124 and proc.stderr == "no result within 3 s" and "started" in proc.stdout
  pid = int(child.read_text())
  for _ in range(50):  # the grandchild is gone too (a zombie until reaped reads as gone)
    try:
      with open(f"/proc/{pid}/stat") as f:
        if f.read().split()[2] == "Z":
          break
    except FileNotFoundError:
      break
    time.sleep(0.1)
  else:
    raise AssertionError("the figure's child process outlived it")


def test_the_plan_runs_the_defaults_first_then_the_tests_and_the_rest():
  """One GPU: Small and Base with the defaults (XLA auto) in bfloat16 with their profiles, the GPU tests, Small
  again without parallel code generation, then float32, Small without XLA, fine-tuning on sst and squad,
  accumulation, the input pipeline; several GPUs add mirrored rows."""
  suite = _suite()
  args = _default_args(suite)
  labels = [f.label for f in suite.plan(args, 1, "/w")]
  serial = "--xla_gpu_enable_triton_gemm=false"
  assert suite.SERIAL_XLA_FLAGS == serial and suite.runtime.GPU_XLA_FLAGS.startswith(serial + " ")
  assert labels == ["pre-training small bfloat16 XLA auto one_device", "pre-training base bfloat16 XLA auto one_device",
                    "GPU tests", f"pre-training small bfloat16 XLA auto one_device, XLA_FLAGS={serial}",
                    "pre-training small float32 XLA auto one_device",
                    "pre-training base float32 XLA auto one_device", "pre-training small float32 XLA off one_device",
                    "fine-tuning sst small", "fine-tuning sst base", "fine-tuning squad small",
                    "fine-tuning squad base", "gradient accumulation, base", "input pipeline"]
  figures = suite.plan(args, 1, "/w")
  tests = figures[2].argv
  assert tests[:2] == ["-m", "pytest"] and all((REPO_ROOT / t).is_file() for t in suite.GPU_TESTS)
  profiled = [f.label for f in figures if "--profile-steps" in f.argv]
  assert profiled == labels[:2]  # the targets' rows say where their time goes
  assert [f.label for f in figures if "--profile-first-call" in f.argv] == labels[:2] + [labels[3]]
  assert [f.xla_flags for f in figures[:4]] == [None, None, None, serial]
  mirrored = [f for f in suite.plan(args, 2, "/w") if "mirrored" in f.label]
  assert [f.label for f in mirrored] == ["pre-training small bfloat16 XLA auto mirrored",
                                         "pre-training base bfloat16 XLA auto mirrored"]
  batch = lambda f: f.argv[f.argv.index("--batch") + 1]
  assert [batch(f) for f in mirrored] == ["256", "256"] and batch(figures[0]) == "128"  # 128 per GPU


def test_rows_on_several_gpus_give_their_scaling_against_one_gpu():
  suite = _suite()
  row = lambda strategy, replicas, seqs, **kw: {"size": "small", "dtype": "bfloat16", "xla_setting": "auto",
                                                "strategy": strategy, "replicas": replicas, "seq_per_s": seqs, **kw}
  rows = suite.with_scaling([row("one_device", 1, 8000.0), row("mirrored", 2, 14400.0),
                             row("mirrored", 4, 9000.0, size="base"),  # no one-GPU row of its size
                             row("one_device", 1, 5000.0, xla_flags="--x")])
  assert [r.get("scaling") for r in rows] == [None, "90% of one GPU per GPU", None, None]
  env = {"date": "2026-01-01", "commit": "abc1234", "gpus": ["H200"] * 2, "cpu_cores": 16, "tensorflow": "2.21.0",
         "cuda": "12.5", "cudnn": "9", "xla_flags": ""}
  text = suite.report(env, {"pretrain": rows}, "python x", 400.0)
  header = next(line for line in text.splitlines() if line.startswith("| strategy"))
  assert header.endswith("| target | scaling |") and "| 90% of one GPU per GPU |" in text
  single = suite.report(env, {"pretrain": rows[:1]}, "python x", 400.0)
  assert "scaling" not in single  # one GPU: no scaling column


def test_figures_past_the_budget_are_not_started_and_a_failure_keeps_its_row(monkeypatch):
  """Each figure is a process of its own with what is left of the budget as its timeout; once less than
  MIN_FIGURE_S is left the rest are rows saying they were not run; a failed figure's row names it."""
  suite = _suite()
  now, timeouts = [0.0], []

  def fake_run(args, timeout, xla_flags):
    timeouts.append(timeout)
    now[0] += 100.0  # each figure takes 100 s
    if args == ["fails"]:
      return suite.subprocess.CompletedProcess(args, 124, "", f"no result within {timeout} s")
    return suite.subprocess.CompletedProcess(args, 0, '{"seq_per_s": 1.0}\n', "")

  monkeypatch.setattr(suite, "_run", fake_run)
  figures = [suite.Figure("p", f"figure {i}", ["fails"] if i == 1 else ["ok"], suite._json_lines,
                          "--flags" if i == 0 else None) for i in range(4)]
  rows = suite.run_figures(figures, 220.0, 1800, clock=lambda: now[0])
  assert timeouts == [220, 120]  # the third would start with 20 s left
  assert rows["p"][0] == {"seq_per_s": 1.0, "xla_flags": "--flags"}  # a figure's own XLA_FLAGS are in its rows
  assert rows["p"][1] == {"label": "figure 1", "error": "stopped after 120 s, when the suite's time budget ran out "
                                                       "(--budget 0 runs every figure)"}
  assert [r["error"].startswith("not run: the suite's time budget was spent") for r in rows["p"][2:]] == [True, True]
  unlimited = suite.run_figures(figures, None, 1800, clock=lambda: now[0])["p"]
  assert len(unlimited) == 4 and unlimited[1]["error"] == "no result within 1800 s"  # a figure's own timeout


def test_the_defaults_rows_are_held_to_their_targets():
  suite = _suite()
  rows = suite.with_targets([
      {"size": "small", "dtype": "bfloat16", "xla_setting": "auto", "strategy": "one_device", "seq_per_s": 8100.0,
       "first_call_s": 40.0},
      {"size": "base", "dtype": "bfloat16", "xla_setting": "auto", "strategy": "one_device", "seq_per_s": 2600.0,
       "first_call_s": 75.0},
      {"size": "small", "dtype": "float32", "xla_setting": False, "strategy": "one_device", "seq_per_s": 190.0}])
  assert rows[0]["target"] == ">= 8,000 seq/s, first call < 60 s: met"
  assert rows[1]["target"] == ">= 2,500 seq/s, first call < 60 s: not met"  # the compile took too long
  assert "target" not in rows[2]
  untimed = suite.with_targets([{"size": "small", "dtype": "bfloat16", "xla_setting": "auto", "strategy": "one_device",
                                 "seq_per_s": 9000.0, "first_call_s": None}])
  assert untimed[0]["target"].endswith("not met")  # a first call not timed is no first call within 60 s
  other_flags = suite.with_targets([{"size": "small", "dtype": "bfloat16", "xla_setting": "auto", "seq_per_s": 9000.0,
                                     "strategy": "one_device", "first_call_s": 30.0, "xla_flags": "--x"}])
  assert "target" not in other_flags[0]  # the targets hold the defaults


def test_the_tables_give_the_peak_as_a_percentage_and_failures_as_rows():
  table = _suite()._table([{"seq_per_s": 3821.04, "peak_fraction": 0.0713},
                           {"label": "pre-training base", "error": "no result within 7 s"}],
                          ["seq_per_s", "peak_fraction"])
  assert table.splitlines()[2:] == ["| 3,821.0 | 7.1% |", "| failed: pre-training base: no result within 7 s | |"]


def test_the_report_names_the_commit_and_versions():
  env = {"date": "2026-01-01", "commit": "abc1234", "gpus": ["H200, 570.1, 143771 MiB (name, driver, memory)"],
         "cpu_cores": 16, "tensorflow": "2.21.0", "cuda": "12.5", "cudnn": "9",
         "xla_flags": "--xla_gpu_enable_triton_gemm=false (the project's)"}
  text = _suite().report(env, {"tests": [{"tests": "a.py", "result": "12 passed in 30.0s"}]}, "python x", 420.4)
  assert text.startswith("# GPU suite, 2026-01-01\n\nCommand: `python x`, 420 s in all. Commit abc1234. GPUs: H200")
  assert "CUDA 12.5, cuDNN 9. XLA_FLAGS: `--xla_gpu_enable_triton_gemm=false (the project's)`." in text
  assert "| a.py | 12 passed in 30.0s |" in text


def test_the_report_says_where_the_profiled_rows_time_goes():
  env = {"date": "2026-01-01", "commit": "abc1234", "gpus": ["H200"], "cpu_cores": 16, "tensorflow": "2.21.0",
         "cuda": "12.5", "cudnn": "9", "xla_flags": ""}
  profile = {"source": "GPU:0", "steps": 3, "kernels_per_step": 2400.0, "kernel_ms_per_step": 20.0,
             "busy_ms_per_step": 19.0, "wall_ms_per_step": 33.0, "busy_fraction": 19 / 33,
             "categories": [{"category": "matrix products", "ms_per_step": 8.0, "share": 0.4}],
             "top_families": [{"family": "loop_add_fusion", "ms_per_step": 3.0, "share": 0.15}],
             "top_kernels": [{"kernel": "loop_add_fusion_3", "per_step": 1.0, "ms_per_step": 0.5, "share": 0.025}]}
  phases = {"wall_s": 100.0, "tracing_s": 12.0, "to_hlo_s": 9.5, "hlo_passes_s": 30.0, "autotuning_s": 20.3,
            "codegen_s": 40.0, "rest_s": 8.5, "compiled": True}
  rows = [{"strategy": "one_device", "size": "small", "dtype": "bfloat16", "xla_setting": "auto", "xla": True,
           "batch": 128, "seq_per_s": 3900.0, "first_call_s": 100.0, "profile": profile, "first_call_phases": phases},
          {"strategy": "one_device", "size": "base", "dtype": "bfloat16", "xla_setting": "auto", "xla": True,
           "seq_per_s": 1000.0, "first_call_s": 150.0, "profile": {"error": "RuntimeError: no CUPTI"}}]
  lines = _suite().report(env, {"pretrain": rows}, "python x", 400.0).splitlines()
  where = lines.index("## Where the time goes")
  assert ("small bfloat16 (XLA True): GPU:0, 3 steps: 2,400 kernels per step, 20.00 ms of kernels and 19.00 ms "
          "busy per step in 33.00 ms of wall time (busy 58%).") in lines[where:]
  assert "| matrix products | 8.000 | 40.0% |" in lines[where:]
  assert "base bfloat16 (XLA True): no profile: RuntimeError: no CUPTI" in lines[where:]
  assert lines[lines.index("## Pre-training throughput (synthetic ids, batch 128 per GPU, length 128)") + 4].startswith(
      "| one_device | small | bfloat16 | auto | True | the project's | 128 | 3,900.0 |")
  first = lines.index("## Where the first call goes")
  assert lines[first + 4:first + 7] == [
      "| | in all | tracing | graph passes and conversion to HLO | XLA's HLO passes | of which autotuning | "
      "XLA's code generation | the rest (running) |", "|---|---:|---:|---:|---:|---:|---:|---:|",
      "| small bfloat16 (XLA True) | 100.0 | 12.0 | 9.5 | 30.0 | 20.3 | 40.0 | 8.5 |"]
  assert not [l for l in lines[first:] if l.startswith("| base")]  # Base's row has no phases: no row


def test_every_figure_s_command_line_is_one_its_script_accepts(monkeypatch):
  """Each figure's flags, parsed by its own script's parser (nothing runs): a flag a script renamed would
  otherwise first show on a GPU, as a failed row."""
  import argparse
  suite = _suite()
  args = _default_args(suite)

  class Parsed(Exception):
    pass

  original = argparse.ArgumentParser.parse_args

  def parse_only(self, argv=None, namespace=None):
    raise Parsed(original(self, argv, namespace))

  monkeypatch.delenv("XLA_FLAGS", raising=False)  # the scripts set it on import: put back as it was after
  monkeypatch.syspath_prepend(str(REPO_ROOT / "benchmarks"))
  monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_only)
  figures = [f for f in suite.plan(args, 2, "/w") if f.part != "tests"]
  assert {f.argv[0] for f in figures} == {str(REPO_ROOT / "benchmarks" / f"{name}.py") for name in
                                          ("pretrain", "finetune", "accumulation_memory", "input_pipeline")}
  for fig in figures:
    spec = importlib.util.spec_from_file_location(f"figure_{pathlib.Path(fig.argv[0]).stem}", fig.argv[0])
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)  # by path: the checkout's finetune/ scripts share benchmarks/finetune.py's name
    monkeypatch.setattr(sys, "argv", fig.argv)
    with pytest.raises(Parsed) as parsed:
      script.main() if script.main.__code__.co_argcount == 0 else script.main(fig.argv[1:])
    flags = vars(parsed.value.args[0])
    if fig.part == "pretrain":
      assert flags["batch"] == 128 * (2 if flags["strategy"] == "mirrored" else 1)  # 128 per GPU (two here)
      assert flags["compare"] == "" and flags["sizes"] in ("small", "base")
      profiled = fig.label.endswith("bfloat16 XLA auto one_device")
      assert flags["profile_steps"] == (suite.PROFILE_STEPS if profiled else 0)
      assert flags["profile_first_call"] == (profiled or fig.xla_flags is not None)


def test_the_profiled_rows_run_on_this_cpu_and_reach_the_report(tmp_path):
  """The suite's first figure and its serial-compilation twin, run for real at the tiny size with XLA (a CPU):
  the rows the script writes carry what the report reads (the first call's phases, the step profile), so a
  renamed key fails here rather than in a GPU run's report."""
  suite = _suite()
  args = suite.argparse.Namespace(parts="pretrain", sizes="tiny", dtypes="float32", quick=True)
  figures = suite.plan(args, 1, str(tmp_path))
  figures = [figures[0], next(f for f in figures if f.xla_flags is not None)]
  for fig in figures:  # later flags win: the tiny model, short sequences, XLA on although there is no GPU
    fig.argv += ["--vocab-size", "8000", "--batch", "8", "--seq-len", "32", "--xla", "on"]
  rows = suite.run_figures(figures, None, 600)
  assert [r.get("error") for r in rows["pretrain"]] == [None, None], rows
  default, serial = rows["pretrain"]
  assert "xla_flags" not in default and serial["xla_flags"] == suite.SERIAL_XLA_FLAGS
  assert default["first_call_phases"]["compiled"] and default["first_call_phases"]["codegen_s"] > 0
  assert default["profile"]["kernels_per_step"] > 0 and "profile" not in serial
  env = {"date": "2026-01-01", "commit": "abc1234", "gpus": ["none"], "cpu_cores": 2, "tensorflow": "2.21.0",
         "cuda": "-", "cudnn": "-", "xla_flags": ""}
  lines = suite.report(env, rows, "python benchmarks/gpu_suite.py", 1.0).splitlines()
  first = lines.index("## Where the first call goes")
  assert lines[first + 6].startswith("| tiny float32 (XLA True) | ")
  assert lines[first + 7].startswith(f"| tiny float32 (XLA True), XLA_FLAGS `{suite.SERIAL_XLA_FLAGS}` | ")
  assert any(l.startswith("tiny float32 (XLA True): host CPU (XLA operations), 3 steps: ") for l in lines)
