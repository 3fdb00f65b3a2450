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
