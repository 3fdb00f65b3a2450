"""Every GPU figure in one command, within eight minutes on one GPU, with the GPU tests.

    python benchmarks/gpu_suite.py                 # writes gpu_suite.md (and prints it)
    python benchmarks/gpu_suite.py --budget 0      # every figure, however long it takes

On a machine with GPUs it runs, in this order, each figure in its own process (so one failure, slow compile
or memory peak spoils only its own row):
- pre-training throughput of Small and Base with the defaults (``use_xla`` auto: XLA on a GPU, with the
  project's XLA flags) in bfloat16, each with its first (compiling) call's seconds, the target it is held to,
  where that call's seconds went (tracing, graph passes and conversion to HLO, XLA's HLO passes and autotuning,
  code generation) and where a step's time goes (``PROFILE_STEPS`` more steps under TensorFlow's profiler,
  ``electra_tf/runtime/profiling.py``: kernels per step, the GPU's busy share, the costliest kernels);
- the GPU tests (``GPU_TESTS``: the keyed random numbers, the sampler, parity with transformers, float16 loss
  scaling, the XLA choice) under pytest;
- Small's first row again with the project's XLA flags less parallel code generation (``SERIAL_XLA_FLAGS``),
  with its first call's phases: what compiling on every host core changes;
- Small and Base with the defaults in float32 (TF32), Small in float32 without XLA, and Small and Base in
  bfloat16 on every GPU (``--strategy mirrored``, batch 128 per GPU) when there are several, with their scaling:
  sequences/s per GPU against the one-GPU row's (``benchmarks/pretrain.py``);
- fine-tuning throughput of Small and Base on ``sst`` (length 128) and ``squad`` (length 384), bfloat16 with
  XLA (``benchmarks/finetune.py``);
- peak GPU memory of Base pre-training with and without gradient accumulation
  (``benchmarks/accumulation_memory.py``);
- the input pipeline on the host's cores (``benchmarks/input_pipeline.py``).
A figure starts only while the time budget (``--budget``, 450 s) lasts, and stops when it runs out; a figure
not run says so in its row. It writes one Markdown file: the date, commit, GPUs with their driver, CUDA and
cuDNN, TensorFlow, the XLA flags, then a table per part. Without a GPU, or without TensorFlow, it says so in
one line and exits with status 2.
"""

import argparse
import dataclasses
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import typing

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
from electra_tf import runtime  # pylint: disable=wrong-import-position  (no TensorFlow)

BUDGET_S = 450  # with start-up, the whole command within 8 minutes on one GPU
MIN_FIGURE_S = 30  # a figure does not start with less of the budget left
GPU_TESTS = ["tests/test_pretraining_random_ops.py", "tests/test_pretraining_sampling.py",
             "tests/test_modeling_parity.py", "tests/test_runtime_loss_scale.py", "tests/test_runtime.py"]
# (size, dtype): sequences/s one H200 should reach with the defaults; every default first call within 60 s
TARGETS = {("small", "bfloat16"): 8000, ("base", "bfloat16"): 2500}
FIRST_CALL_TARGET_S = 60
# the project's XLA flags without parallel code generation: a row beside the defaults shows what that changes
SERIAL_XLA_FLAGS = " ".join(f for f in runtime.GPU_XLA_FLAGS.split()
                            if f not in runtime.PARALLEL_COMPILATION_FLAGS.split())
PROFILE_STEPS = 3  # steps the defaults' rows trace after their timed ones (electra_tf/runtime/profiling.py)


@dataclasses.dataclass
class Figure:
  part: str  # the table it goes to
  label: str  # what it is, in the progress lines and in a failed row
  argv: list  # after ``python``
  parse: typing.Callable[[subprocess.CompletedProcess], list]  # the finished process -> rows
  xla_flags: typing.Optional[str] = None  # XLA_FLAGS for its process instead of the project's (in its rows)


def gpus() -> list:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.config.list_physical_devices("GPU")


def _commit() -> str:
  try:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                          check=True, timeout=30).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                           text=True, check=True, timeout=30).stdout.strip()
    return head + (" with uncommitted changes" if dirty else "")
  except (OSError, subprocess.SubprocessError):
    return "unknown (not a git checkout)"


def environment() -> dict:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  info = {"date": datetime.date.today().isoformat(), "host": platform.node(), "cpu_cores": os.cpu_count(),
          "tensorflow": tf.__version__, "commit": _commit(),
          "xla_flags": os.environ.get("XLA_FLAGS", "") + (" (the project's)" if os.environ.get("XLA_FLAGS") ==
                                                          runtime.GPU_XLA_FLAGS else "")}
  build = tf.sysconfig.get_build_info()
  info["cuda"], info["cudnn"] = build.get("cuda_version", "?"), build.get("cudnn_version", "?")
  try:
    out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                         capture_output=True, text=True, check=True, timeout=60).stdout.strip().splitlines()
    info["gpus"] = [f"{line} (name, driver, memory)" for line in out]
  except (OSError, subprocess.SubprocessError):
    info["gpus"] = [str(d) for d in gpus()]
  return info


def _run(args: list, timeout: int, xla_flags: typing.Optional[str] = None) -> subprocess.CompletedProcess:
  """One figure's process (its own process group); one that runs past ``timeout`` seconds is killed with every
  process it started and reads as a failure that says so."""
  env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **({"XLA_FLAGS": xla_flags} if xla_flags is not None else {})}
  with subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        cwd=REPO, env=env, start_new_session=True) as proc:
    try:
      out, err = proc.communicate(timeout=timeout)
      return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    except subprocess.TimeoutExpired:
      os.killpg(proc.pid, signal.SIGKILL)
      out, _ = proc.communicate()
      return subprocess.CompletedProcess(proc.args, 124, out or "", f"no result within {timeout} s")


def _last_line(*texts: str) -> str:
  """The last line of the first text that has one ("?" when none has): a figure's result or its error."""
  for text in texts:
    if text.strip():
      return text.strip().splitlines()[-1]
  return "?"


def _json_rows(path):
  with open(path) as f:
    return json.load(f)["rows"]


def _json_lines(proc):
  return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _pytest_summary(proc):
  return [{"tests": " ".join(GPU_TESTS), "result": _last_line(proc.stdout).strip("= ")}]


def _text(proc):
  return [{"text": proc.stdout.strip()}]


def plan(args, n_gpus: int, work: str) -> typing.List[Figure]:
  """The figures of ``--parts`` in the order they run: the most asked-for first."""
  parts, sizes, dtypes = set(args.parts.split(",")), args.sizes.split(","), args.dtypes.split(",")
  steps = "5" if args.quick else "20"
  figures = []

  def pretraining(size, dtype, xla, strategy="one_device", profile=False, phases=False, xla_flags=None, gpus=1):
    out = os.path.join(work, f"pretrain_{size}_{dtype}_{xla}_{strategy}{'_flags' if xla_flags else ''}.json")
    label = f"pre-training {size} {dtype} XLA {xla} {strategy}" + (f", XLA_FLAGS={xla_flags}" if xla_flags else "")
    figures.append(Figure("pretrain", label, [
        os.path.join(HERE, "pretrain.py"), "--sizes", size, "--dtypes", dtype, "--xla", xla, "--batch", str(128 * gpus),
        "--steps", steps, "--compare", "", "--strategy", strategy, "--json", out]
        + (["--profile-steps", str(PROFILE_STEPS)] if profile else [])
        + (["--profile-first-call"] if profile or phases else []), lambda proc: _json_rows(out), xla_flags))

  if "pretrain" in parts:  # the first dtype's defaults (the targets) with their profile, then the GPU tests
    for size in sizes:
      pretraining(size, dtypes[0], "auto", profile=True)
  if "tests" in parts:
    figures.append(Figure("tests", "GPU tests", ["-m", "pytest", "-q", "-p", "no:cacheprovider", *GPU_TESTS],
                          _pytest_summary))
  if "pretrain" in parts:  # the first call without parallel code generation: what those flags do
    pretraining(sizes[0], dtypes[0], "auto", phases=True, xla_flags=SERIAL_XLA_FLAGS)
    for dtype in dtypes[1:]:
      for size in sizes:
        pretraining(size, dtype, "auto")
    if "float32" in dtypes:
      pretraining(sizes[0], "float32", "off")  # what the step costs without XLA
    if n_gpus > 1:
      for size in sizes:
        pretraining(size, dtypes[0], "auto", "mirrored", gpus=n_gpus)  # the same batch per GPU
  for task, seq_len, part in (("sst", "128", "finetune"), ("squad", "384", "squad")):
    if part in parts:
      for size in sizes:
        figures.append(Figure("finetune", f"fine-tuning {task} {size}", [
            os.path.join(HERE, "finetune.py"), "--sizes", size, "--task", task, "--seq-len", seq_len,
            "--batch-size", "32", "--steps", "5" if args.quick else "30", "--mixed-precision", "bfloat16", "--xla"],
            _json_lines))
  if "accumulation" in parts:
    figures.append(Figure("accumulation", "gradient accumulation, base", [
        os.path.join(HERE, "accumulation_memory.py"), "--model-size", "base", "--batch", "256",
        "--accumulation", "1,8"], _json_lines))
  if "input" in parts:
    figures.append(Figure("input", "input pipeline", [
        os.path.join(HERE, "input_pipeline.py"), "--seconds", "3"], _text))
  return figures


def run_figures(figures: typing.List[Figure], budget: typing.Optional[float], figure_timeout: int,
                clock=time.monotonic) -> typing.Dict[str, list]:
  """{part: rows}. A figure starts only with ``MIN_FIGURE_S`` of ``budget`` seconds left (None: no budget) and
  is stopped when the budget runs out; each failed or skipped figure leaves a row with its label and why."""
  rows, start = {}, clock()
  for fig in figures:
    left = budget - (clock() - start) if budget is not None else None
    if left is not None and left < MIN_FIGURE_S:
      rows.setdefault(fig.part, []).append({"label": fig.label, "error": "not run: the suite's time budget was "
                                            "spent (--budget 0 runs every figure)"})
      print(f"{fig.label}: not run (budget spent)", flush=True)
      continue
    timeout = int(min(figure_timeout, left) if left is not None else figure_timeout)
    proc = _run(fig.argv, timeout, fig.xla_flags)
    print(f"{fig.label}: {_last_line(proc.stdout, proc.stderr)}", flush=True)
    try:  # the tests report failures with a non-zero status
      found = fig.parse(proc) if proc.returncode == 0 or (fig.part == "tests" and proc.returncode != 124) else []
    except (OSError, ValueError, KeyError):
      found = []
    error = _last_line(proc.stderr, proc.stdout)
    if proc.returncode == 124 and timeout < figure_timeout:
      error = f"stopped after {timeout} s, when the suite's time budget ran out (--budget 0 runs every figure)"
    if fig.xla_flags is not None:
      found = [dict(r, xla_flags=fig.xla_flags) for r in found]
    rows.setdefault(fig.part, []).extend(found or [{"label": fig.label, "error": error}])
  return rows


def with_targets(rows: list) -> list:
  """Pre-training rows with the target each is held to, and whether it is met (defaults, one GPU)."""
  out = []
  for r in rows:
    target = TARGETS.get((r.get("size"), r.get("dtype")))
    if ("error" in r or r.get("xla_setting") != "auto" or r.get("strategy") != "one_device" or target is None
        or "xla_flags" in r):
      out.append(r)
      continue
    first_call = r.get("first_call_s")
    met = r["seq_per_s"] >= target and first_call is not None and first_call < FIRST_CALL_TARGET_S
    out.append(dict(r, target=f">= {target:,} seq/s, first call < {FIRST_CALL_TARGET_S} s: "
                              f"{'met' if met else 'not met'}"))
  return out


def with_scaling(rows: list) -> list:
  """Rows on several GPUs with their scaling: sequences/s per GPU against the one-GPU row of the same size,
  dtype and XLA setting (100%: N GPUs do N times the work of one)."""
  one = {(r.get("size"), r.get("dtype"), r.get("xla_setting")): r["seq_per_s"] for r in rows
         if "error" not in r and r.get("strategy") == "one_device" and "xla_flags" not in r}
  out = []
  for r in rows:
    single = one.get((r.get("size"), r.get("dtype"), r.get("xla_setting")))
    if "error" in r or (r.get("replicas") or 1) < 2 or not single:
      out.append(r)
      continue
    out.append(dict(r, scaling=f"{r['seq_per_s'] / r['replicas'] / single:.0%} of one GPU per GPU"))
  return out


def _table(rows: list, columns: list) -> str:
  lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
  for r in rows:
    if "error" in r:
      what = f"{r['label']}: " if r.get("label") else ""
      lines.append(f"| failed: {what}{r['error']} |" + " |" * (len(columns) - 1))
      continue
    cells = []
    for c in columns:
      v = r.get(c, "")
      if c == "peak_fraction" and isinstance(v, float):
        cells.append(f"{100 * v:.1f}%")
      else:
        cells.append(f"{v:,.1f}" if isinstance(v, float) else str(v))
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)


def report(env: dict, rows: dict, command: str, seconds: float) -> str:
  text = [f"# GPU suite, {env['date']}", "",
          f"Command: `{command}`, {seconds:.0f} s in all. Commit {env['commit']}. GPUs: " + "; ".join(env["gpus"])
          + f". Host: {env['cpu_cores']} CPU cores. TensorFlow {env['tensorflow']}, CUDA {env['cuda']}, cuDNN "
          f"{env['cudnn']}. XLA_FLAGS: `{env['xla_flags']}`.", ""]
  if "pretrain" in rows:
    rated = with_scaling(with_targets(rows["pretrain"]))
    text += ["## Pre-training throughput (synthetic ids, batch 128 per GPU, length 128)", "",
             _table([dict(r, xla_flags=r.get("xla_flags", "the project's"), global_batch=r.get("batch", ""))
                     for r in rated],
                    ["strategy", "size", "dtype", "xla_setting", "xla", "xla_flags", "global_batch", "seq_per_s",
                     "tflops", "peak_fraction", "first_call_s", "target"]
                    + (["scaling"] if any("scaling" in r for r in rated) else [])), ""]
    profiled = [r for r in rows["pretrain"] if r.get("profile")]
    flags = lambda r: f", XLA_FLAGS `{r['xla_flags']}`" if "xla_flags" in r else ""
    phased = [(f"{r['size']} {r['dtype']} (XLA {r['xla']}){flags(r)}", r["first_call_phases"])
              for r in rows["pretrain"] if r.get("first_call_phases")]
    if profiled or phased:
      from electra_tf.runtime import profiling  # pylint: disable=g-import-not-at-top  (loads TensorFlow)
    if profiled:
      text += ["## Where the time goes", "",
               f"TensorFlow's profiler over {PROFILE_STEPS} steps after the timed ones "
               "(`electra_tf/runtime/profiling.py`); busy: the time in which at least one kernel ran.", ""]
      for r in profiled:
        text += [profiling.markdown(r["profile"], f"{r['size']} {r['dtype']} (XLA {r['xla']})"), ""]
    if phased:
      text += ["## Where the first call goes", "",
               "Seconds of the first (tracing and compiling) call with its warm-up steps, traced by TensorFlow's "
               "profiler (`electra_tf/runtime/profiling.py`, `compile_phases`); autotuning is within the HLO "
               "passes.", "", profiling.phases_markdown(phased), ""]
  if "tests" in rows:
    text += ["## GPU tests", "", _table(rows["tests"], ["tests", "result"]), ""]
  if "finetune" in rows:
    text += ["## Fine-tuning throughput (bfloat16, XLA, batch 32)", "",
             _table(rows["finetune"], ["task", "seq_len", "size", "train_examples_per_s", "predict_examples_per_s",
                                       "first_step_s"]), ""]
  if "accumulation" in rows:
    text += ["## Gradient accumulation, Base, global batch 256", "",
             _table(rows["accumulation"], ["micro_batch", "accumulation", "gpu_peak_mib", "peak_rss_mib",
                                           "sequences_per_sec"]), ""]
  if "input" in rows:
    text += ["## Input pipeline (host CPU)", ""] + [r.get("text") or f"failed: {r.get('error')}" for r in rows["input"]]
    text.append("")
  return "\n".join(text)


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--out", default="gpu_suite.md")
  ap.add_argument("--quick", action="store_true", help="fewer timed steps")
  ap.add_argument("--sizes", default="small,base", help="model sizes of the pre-training and fine-tuning figures")
  ap.add_argument("--dtypes", default="bfloat16,float32", help="pre-training dtypes, in the order they run")
  ap.add_argument("--parts", default="pretrain,tests,finetune,squad,accumulation,input",
                  help="which figures: pretrain, tests, finetune (sst), squad, accumulation, input")
  ap.add_argument("--budget", type=float, default=BUDGET_S,
                  help="seconds the figures may take in all (0: no limit); a figure past it is not started")
  ap.add_argument("--figure-timeout", type=int, default=1800,
                  help="seconds each figure's process may take before it is stopped and its row says so")
  args = ap.parse_args(argv)
  started = time.monotonic()
  runtime.set_default_xla_flags()  # the figures' processes run as the commands do
  try:
    found = gpus()
  except ImportError:  # e.g. a GPU machine whose image brings another framework but not TensorFlow
    print(f"error: TensorFlow is not installed for {sys.executable}; the GPU suite times this project's "
          f"TensorFlow code: pip install \"tensorflow[and-cuda]==2.21.*\" and this checkout (pip install -e .), "
          "then rerun", file=sys.stderr)
    return 2
  if not found:
    print("error: no GPU on this machine (TensorFlow sees none): the GPU suite needs one; CPU figures are in "
          "benchmarks/README.md", file=sys.stderr)
    return 2
  env = environment()
  with tempfile.TemporaryDirectory() as work:
    figures = plan(args, len(found), work)
    budget = args.budget - (time.monotonic() - started) if args.budget else None
    rows = run_figures(figures, budget, args.figure_timeout)
  command = "python benchmarks/gpu_suite.py" + "".join(f" {a}" for a in (sys.argv[1:] if argv is None else argv))
  text = report(env, rows, command, time.monotonic() - started)
  with open(args.out, "w") as f:
    f.write(text)
  print(text)
  return 0


if __name__ == "__main__":
  sys.exit(main())
