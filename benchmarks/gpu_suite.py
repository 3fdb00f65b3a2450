"""Every GPU figure in one command: pre-training, fine-tuning, accumulation memory and the input pipeline.

    python benchmarks/gpu_suite.py                 # writes gpu_suite.md (and prints it)
    python benchmarks/gpu_suite.py --quick         # fewer timed steps, for a first look

On a machine with GPUs it runs, each figure in its own process (so one failure or memory peak does not
spoil the rest):
- pre-training throughput of Small and Base (``benchmarks/pretrain.py``), float32 / bfloat16 / float16,
  XLA on and off, on one GPU and on every GPU (``--strategy mirrored``, when there are several);
- fine-tuning throughput of Small and Base on a classification task (``benchmarks/finetune.py``), float32
  and bfloat16, XLA on;
- peak GPU memory of Base pre-training with and without gradient accumulation
  (``benchmarks/accumulation_memory.py``);
- the input pipeline on the host's cores (``benchmarks/input_pipeline.py``);
and writes one Markdown file: the device, driver and versions, then a table per figure. Without a GPU, or
without TensorFlow, it says so in one line and exits with status 2.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def gpus() -> list:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.config.list_physical_devices("GPU")


def environment() -> dict:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  info = {"date": datetime.date.today().isoformat(), "host": platform.node(), "cpu_cores": os.cpu_count(),
          "tensorflow": tf.__version__}
  build = tf.sysconfig.get_build_info()
  info["cuda"], info["cudnn"] = build.get("cuda_version", "?"), build.get("cudnn_version", "?")
  try:
    out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                         capture_output=True, text=True, check=True, timeout=60).stdout.strip().splitlines()
    info["gpus"] = out
  except (OSError, subprocess.SubprocessError):
    info["gpus"] = [str(d) for d in gpus()]
  return info


def _run(args: list, timeout: int) -> subprocess.CompletedProcess:
  """One figure's process; one that runs past ``timeout`` seconds is killed and reads as a failure that says so."""
  try:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
  except subprocess.TimeoutExpired as e:
    out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
    return subprocess.CompletedProcess(e.cmd, 124, out, f"no result within {timeout} s")


def _last_line(*texts: str) -> str:
  """The last line of the first text that has one ("?" when none has): a figure's result or its error."""
  for text in texts:
    if text.strip():
      return text.strip().splitlines()[-1]
  return "?"


def pretraining_rows(args, several: bool, work: str) -> list:
  rows = []
  strategies = ["one_device"] + (["mirrored"] if several else [])
  for strategy in strategies:
    for size in args.sizes.split(","):
      for dtype in args.dtypes.split(","):
        for xla in (["on", "off"] if args.xla == "both" else [args.xla]):
          # one process per figure: a slow compile or a memory peak spoils only its own row
          out = os.path.join(work, f"pretrain_{size}_{strategy}_{dtype}_{xla}.json")
          proc = _run([os.path.join(HERE, "pretrain.py"), "--sizes", size, "--dtypes", dtype, "--xla", xla,
                       "--batch", "128", "--steps", "5" if args.quick else "20", "--compare", "",
                       "--strategy", strategy, "--json", out], timeout=args.figure_timeout)
          print(f"pre-training {strategy} {size} {dtype} XLA {xla}: {_last_line(proc.stdout, proc.stderr)}",
                flush=True)
          if proc.returncode or not os.path.exists(out):
            rows.append({"size": size, "strategy": strategy, "dtype": dtype, "xla": xla,
                         "error": _last_line(proc.stderr)})
            continue
          with open(out) as f:
            result = json.load(f)
          rows.extend(dict(r, strategy=strategy) for r in result["rows"])
  return rows


def finetuning_rows(args) -> list:
  rows = []
  for precision in [d for d in args.dtypes.split(",") if d != "float16"]:
    proc = _run([os.path.join(HERE, "finetune.py"), "--sizes", args.sizes, "--task", "sst", "--seq-len", "128",
                 "--batch-size", "32", "--steps", "5" if args.quick else "30", "--mixed-precision", precision,
                 "--xla"], timeout=args.figure_timeout)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    rows.extend(dict(r, precision=precision) for r in lines)
    if proc.returncode:
      rows.append({"precision": precision, "error": _last_line(proc.stderr)})
  return rows


def accumulation_rows(args) -> list:
  proc = _run([os.path.join(HERE, "accumulation_memory.py"), "--model-size", "base", "--batch", "256",
               "--accumulation", "1,8"], timeout=args.figure_timeout)
  rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
  if proc.returncode:
    rows.append({"error": _last_line(proc.stderr)})
  return rows


def input_pipeline_text(args) -> str:
  proc = _run([os.path.join(HERE, "input_pipeline.py"), "--seconds", "3" if args.quick else "10"],
              timeout=args.figure_timeout)
  return proc.stdout.strip() if proc.returncode == 0 else f"failed: {proc.stderr.strip().splitlines()[-1:]}"


def _table(rows: list, columns: list) -> str:
  lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
  for r in rows:
    if "error" in r:
      lines.append(f"| failed: {r['error']} |" + " |" * (len(columns) - 1))
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


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--out", default="gpu_suite.md")
  ap.add_argument("--quick", action="store_true", help="fewer timed steps")
  ap.add_argument("--sizes", default="small,base", help="model sizes of the pre-training and fine-tuning figures")
  ap.add_argument("--dtypes", default="float32,bfloat16,float16",
                  help="pre-training dtypes (fine-tuning takes those other than float16)")
  ap.add_argument("--xla", default="both", choices=("on", "off", "both"), help="pre-training with XLA, without, both")
  ap.add_argument("--parts", default="pretrain,finetune,accumulation,input",
                  help="which figures: pretrain, finetune, accumulation, input")
  ap.add_argument("--figure-timeout", type=int, default=1800,
                  help="seconds each figure's process may take before it is stopped and its row says so")
  args = ap.parse_args(argv)
  parts = set(args.parts.split(","))
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
    pre = pretraining_rows(args, len(found) > 1, work) if "pretrain" in parts else []
  fine = finetuning_rows(args) if "finetune" in parts else []
  acc = accumulation_rows(args) if "accumulation" in parts else []
  pipeline = input_pipeline_text(args) if "input" in parts else "not run"
  text = "\n".join([
      f"# GPU suite, {env['date']}",
      "",
      f"Command: `python benchmarks/gpu_suite.py {' '.join(sys.argv[1:] if argv is None else argv)}`"
      + (f" with XLA_FLAGS={os.environ['XLA_FLAGS']}" if os.environ.get("XLA_FLAGS") else "") + ". GPUs: "
      + "; ".join(env["gpus"]) + f". Host: {env['cpu_cores']} CPU cores. TensorFlow {env['tensorflow']}, "
      f"CUDA {env['cuda']}, cuDNN {env['cudnn']}.",
      "",
      "## Pre-training throughput (synthetic ids, batch 128, length 128)",
      "",
      _table(pre, ["strategy", "size", "dtype", "xla", "seq_per_s", "tflops", "peak_fraction", "first_call_s"]),
      "",
      "## Fine-tuning throughput (sst head, batch 32, length 128, XLA)",
      "",
      _table(fine, ["precision", "size", "train_examples_per_s", "predict_examples_per_s", "first_step_s"]),
      "",
      "## Gradient accumulation, Base, global batch 256",
      "",
      _table(acc, ["micro_batch", "accumulation", "gpu_peak_mib", "peak_rss_mib", "sequences_per_sec"]),
      "",
      "## Input pipeline (host CPU)",
      "",
      pipeline,
      ""])
  with open(args.out, "w") as f:
    f.write(text)
  print(text)
  return 0


if __name__ == "__main__":
  sys.exit(main())
