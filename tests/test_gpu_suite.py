"""benchmarks/gpu_suite.py where it cannot run: without TensorFlow, and without a GPU (this machine), it says
so in one line, exits with status 2 and writes no report."""

import importlib.util
import sys

import pytest

from conftest import REPO_ROOT


def _suite():
  spec = importlib.util.spec_from_file_location("gpu_suite", REPO_ROOT / "benchmarks" / "gpu_suite.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


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


def test_a_figure_past_its_timeout_is_stopped_and_its_row_says_so():
  suite = _suite()
  proc = suite._run(["-c", "import time; print('started', flush=True); time.sleep(60)"], timeout=2)
  assert proc.returncode == 124 and proc.stderr == "no result within 2 s" and "started" in proc.stdout


def test_each_pretraining_figure_runs_in_its_own_process(tmp_path, monkeypatch):
  """A figure that fails (a compile past the timeout, say) leaves a row naming its size, dtype and XLA setting;
  the others still run."""
  suite = _suite()
  calls = []

  def fake_run(args, timeout):
    calls.append(args)
    dtype, xla = args[args.index("--dtypes") + 1], args[args.index("--xla") + 1]
    if dtype == "bfloat16" and xla == "on":
      return suite.subprocess.CompletedProcess(args, 124, "", f"no result within {timeout} s")
    out = args[args.index("--json") + 1]
    with open(out, "w") as f:
      suite.json.dump({"rows": [{"size": "small", "dtype": dtype, "xla": xla == "on", "seq_per_s": 1.0}]}, f)
    return suite.subprocess.CompletedProcess(args, 0, "ok\n", "")

  monkeypatch.setattr(suite, "_run", fake_run)
  args = suite.argparse.Namespace(sizes="small", dtypes="float32,bfloat16", xla="both", quick=True,
                                  figure_timeout=7)
  rows = suite.pretraining_rows(args, several=False, work=str(tmp_path))
  assert len(calls) == 4
  assert [r.get("error") for r in rows] == [None, None, "no result within 7 s", None]
  assert rows[2]["dtype"] == "bfloat16" and rows[2]["xla"] == "on"


def test_the_tables_give_the_peak_as_a_percentage_and_failures_as_rows():
  table = _suite()._table([{"seq_per_s": 3821.04, "peak_fraction": 0.0713}, {"error": "no result within 7 s"}],
                          ["seq_per_s", "peak_fraction"])
  assert table.splitlines()[2:] == ["| 3,821.0 | 7.1% |", "| failed: no result within 7 s | |"]
