"""tests/conftest.py's rule for missing test dependencies: ``require_module`` / ``require_data`` skip outside
CI and fail with ``CI=true`` (also for a whole file skipped at import, and under pytest-xdist), a skip for the
machine itself stays a skip, and every run prints its skip count; and its garbage collection between files."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parent

# The files the inner runs collect; each replaces conftest's TensorFlow fixture (not needed here).
NO_TENSORFLOW = '''
import pytest

@pytest.fixture(scope="session", autouse=True)
def full_float32_matmuls():
  pass
'''

IN_TESTS = NO_TENSORFLOW + '''
from conftest import require_data, require_module

def test_a_missing_module():
  require_module("electra_tf_no_such_module")

def test_a_missing_data_file(tmp_path):
  require_data(tmp_path / "no_such_file.txt", "a data file")

def test_a_missing_gpu():
  pytest.skip("this machine has no GPU")

def test_a_bare_importorskip():
  pytest.importorskip("electra_tf_no_such_module")

def test_that_runs():
  assert require_module("json").dumps(1) == "1"
'''

AT_IMPORT = NO_TENSORFLOW + '''
from conftest import require_module

require_module("electra_tf_no_such_module")

def test_never_runs():
  pass
'''


# Automatic collection off, so only conftest's collection after the file can free the test's cycle.
FIRST_FILE = NO_TENSORFLOW + '''
import gc
import weakref

gc.disable()


class Node:
  pass


KEPT = Node()
KEPT.me = KEPT
REFS = {"kept": weakref.ref(KEPT)}


def test_leaves_a_cycle_behind():
  dead = Node()
  dead.me = dead
  REFS["dead"] = weakref.ref(dead)
'''

SECOND_FILE = NO_TENSORFLOW + '''
import gc
import sys


def test_the_first_files_garbage_is_gone_and_what_lives_is_frozen():
  first = sys.modules["test_first"]
  gc.enable()
  assert first.REFS["dead"]() is None and first.REFS["kept"]() is first.KEPT
  assert gc.get_freeze_count() > 0 and not any(o is first.KEPT for o in gc.get_objects())
'''


def _pytest(tmp_path, files, ci, workers=0):
  for name, text in files.items():
    (tmp_path / name).write_text(text, encoding="utf-8")
  (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
  env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "CI"}
  env.update(PYTHONPATH=os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")]), **({"CI": "true"} if ci else {}))
  return subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q",
                         "-n", str(workers), *files], cwd=tmp_path, env=env, capture_output=True, text=True,
                        timeout=300, check=False)


def _summary(result):
  counts = re.findall(r"(\d+) (passed|failed|skipped|errors?)", result.stdout.splitlines()[-1])
  return {what.rstrip("s") if what.startswith("error") else what: int(n) for n, what in counts}


def _skip_line(result):
  lines = [l for l in result.stdout.splitlines() if l.startswith("skipped: ")]
  assert len(lines) == 1, result.stdout
  return lines[0]


@pytest.mark.parametrize("workers", [0, 2])
def test_outside_ci_a_missing_dependency_skips_and_the_run_counts_its_skips(tmp_path, workers):
  result = _pytest(tmp_path, {"test_in_tests.py": IN_TESTS, "test_at_import.py": AT_IMPORT}, ci=False,
                   workers=workers)
  assert result.returncode == 0, result.stdout[-3000:]
  assert _summary(result) == {"passed": 1, "skipped": 5}, result.stdout[-3000:]
  line = _skip_line(result)
  assert line.startswith("skipped: 5 ("), line
  assert "2 x missing test dependency: module 'electra_tf_no_such_module' cannot be imported" in line, line
  assert "1 x this machine has no GPU" in line and "a data file not found at " in line, line
  assert "could not import 'electra_tf_no_such_module'" in line, line


@pytest.mark.parametrize("workers", [0, 2])
def test_under_ci_a_missing_dependency_fails_and_a_platform_skip_stays_a_skip(tmp_path, workers):
  result = _pytest(tmp_path, {"test_in_tests.py": IN_TESTS}, ci=True, workers=workers)
  assert result.returncode == 1, result.stdout[-3000:]
  assert _summary(result) == {"failed": 3, "passed": 1, "skipped": 1}, result.stdout[-3000:]
  assert _skip_line(result) == "skipped: 1 (1 x this machine has no GPU)"
  assert result.stdout.count("CI=true: a missing test dependency or data file fails the run") >= 3, \
      result.stdout[-3000:]


def test_under_ci_a_file_skipped_at_import_fails_the_run(tmp_path):
  result = _pytest(tmp_path, {"test_at_import.py": AT_IMPORT}, ci=True)
  assert result.returncode not in (0, 5), result.stdout[-3000:]
  assert "missing test dependency: module 'electra_tf_no_such_module'" in result.stdout, result.stdout[-3000:]
  assert "passed" not in result.stdout.splitlines()[-1] and _skip_line(result) == "skipped: 0"


def test_no_test_file_uses_a_bare_importorskip():
  """``pytest.importorskip(name, reason=...)`` would skip under CI too: tests use ``require_module``."""
  bare = [path.name for path in TESTS.glob("*.py")
          if path.name not in ("conftest.py", "test_conftest.py") and "importorskip(" in path.read_text("utf-8")]
  assert not bare, bare


def test_after_each_file_its_garbage_is_collected_and_the_survivors_frozen(tmp_path):
  result = _pytest(tmp_path, {"test_first.py": FIRST_FILE, "test_second.py": SECOND_FILE}, ci=False)
  assert result.returncode == 0 and _summary(result) == {"passed": 2}, result.stdout[-3000:]
