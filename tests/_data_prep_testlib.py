"""Shared by the data-prep tests: the real Wikipedia dump excerpt as a fixture, the check that a command
fails with exactly one ``error:`` line and exit status 2, and importing a benchmark's module (for its input
writers) without leaving ``benchmarks/`` on ``sys.path``."""

import importlib
import pathlib
import sys

import pytest

from conftest import require_data
from electra_tf.cli import build_data


@pytest.fixture
def dump(data_dir):
  return require_data(data_dir / "wikipedia" / "enwiki-table-markup.xml.bz2", "the Wikipedia dump")


def one_error_line(capsys, argv):
  """Runs build_data with ``argv``; asserts exit status 2 and one ``error:`` line on stderr, returns it."""
  assert build_data.main(argv) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and err[0].startswith("error: "), err
  return err[0]


def benchmark_module(name: str):
  """``benchmarks/<name>.py`` imported with ``sys.path`` restored afterwards: the benchmarks put their own
  directory first on the path, where its ``finetune.py`` would shadow the ``finetune/`` scripts for every later
  test in the process."""
  saved = list(sys.path)
  sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
  try:
    return importlib.import_module(name)
  finally:
    sys.path[:] = saved
