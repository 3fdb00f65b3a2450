"""Shared test fixtures: the real-data directory, the tiny model and quiet TensorFlow; and the rule that a
missing test dependency or data file skips a test only outside CI.

Tests ask for an optional module with ``require_module("torch")`` and for a data file with
``require_data(path)`` (never a bare ``pytest.importorskip`` or ``pytest.skip``): without it the test (or the
whole file, at module level) is skipped, but with ``CI=true`` (scripts/test.sh under .ci/run) the skip is a
failure, so a CI run cannot pass with part of the suite silently left out. A skip for the machine itself
(a GPU-only check on a machine without one) stays a plain ``pytest.skip``. Every run ends with its skip count
and the reasons.
"""

import collections
import gc
import importlib
import os
import pathlib
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# cuBLAS and cuDNN in full float32 for the processes the tests start too (see full_float32_matmuls)
os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")


def _share_the_cores_between_workers():
  """Under pytest-xdist (``scripts/test.sh`` runs one worker per core), each worker's TensorFlow, and the
  processes its tests start, get an equal share of the cores as their intra-op pool: two workers each running a
  pool as large as the machine would oversubscribe it. The inter-op pools stay TensorFlow's default: the
  two-replica tests' collectives need both replicas' ops to run at once."""
  workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
  if os.environ.get("PYTEST_XDIST_WORKER") and workers > 1:
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))


_share_the_cores_between_workers()

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent

# The one tiny transformer the tests train (pre-training and fine-tuning): a step traces in seconds.
TINY_MODEL = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
# The same without dropout, for tests that compare runs whose dropout masks differ by design.
DROPOUT_FREE_TINY_MODEL = dict(TINY_MODEL, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def use_two_logical_cpus():
  """Splits the CPU into two logical devices for MirroredStrategy; call it in a fresh process, before
  TensorFlow initialises its devices (the distribution tests' subprocess workers)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)


def run_on_two_logical_cpus(body: str, timeout: int = 600) -> str:
  """Runs the Python source ``body`` in a process of its own whose CPU is split into two logical devices
  (``use_two_logical_cpus``, before TensorFlow starts; the tests' modules importable) and returns the last line
  it printed. A failing process fails the test with the end of its stderr."""
  code = (f"import sys\nsys.path[:0] = [{str(REPO_ROOT / 'tests')!r}, {str(REPO_ROOT)!r}]\n"
          "from conftest import use_two_logical_cpus\nuse_two_logical_cpus()\n" + body)
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
  assert proc.returncode == 0, proc.stderr[-3000:]
  return proc.stdout.strip().splitlines()[-1]


BERT_VOCAB = "bert-base-uncased-vocab.txt"  # under <data>/vocab/


def real_data_dir() -> pathlib.Path:
  """``ELECTRA_TEST_DATA``, default ``../shared/data`` beside the checkout."""
  return pathlib.Path(os.environ.get("ELECTRA_TEST_DATA", REPO_ROOT.parent / "shared" / "data"))


# A developer without the shared data may run the rest of the suite with this set to 1; CI never sets it.
ALLOW_MISSING_DATA_ENV = "ELECTRA_ALLOW_MISSING_TEST_DATA"

# How a skip for a missing test dependency or data file begins (the hooks below find it by this).
MISSING = "missing test dependency: "


def ci() -> bool:
  """``CI=true`` (as CI services set it, and .ci/run): a missing test dependency fails the run."""
  return os.environ.get("CI", "").strip().lower() in ("true", "1")


def skip_missing(what: str):
  """Skips the calling test, or at module level the whole file, because ``what`` (a module, a data file, an
  installed package) is missing; with ``CI=true`` the test fails instead (``pytest_runtest_makereport``)."""
  raise pytest.skip.Exception(MISSING + what, allow_module_level=True)


def require_module(name: str, why: str = ""):
  """``import name``, else :func:`skip_missing` (``pytest.importorskip`` that fails under ``CI=true``)."""
  try:
    return importlib.import_module(name)
  except ImportError as e:
    skip_missing(f"module {name!r} cannot be imported ({e}){'; ' + why if why else ''}")


def require_data(path, what: str = "test data") -> pathlib.Path:
  """``path`` if it exists, else :func:`skip_missing` (a failure under ``CI=true``)."""
  path = pathlib.Path(path)
  if not path.exists():
    skip_missing(f"{what} not found at {path}; set ELECTRA_TEST_DATA to the shared data directory")
  return path


def _missing_reason(report):
  """The reason of a skip for a missing dependency or data file (``require_*``, ``skip_missing``, or a bare
  ``pytest.importorskip``); None for any other report."""
  if not report.skipped or not isinstance(report.longrepr, (tuple, list)):
    return None
  reason = str(report.longrepr[2]).removeprefix("Skipped: ")
  return reason if reason.startswith((MISSING, "could not import ")) else None


def _fail_in_ci(report):
  reason = _missing_reason(report)
  if reason is not None and ci():
    report.outcome = "failed"
    report.longrepr = (f"{reason}\nCI=true: a missing test dependency or data file fails the run instead of "
                       f"skipping (install requirements-test.txt; set ELECTRA_TEST_DATA)")
  return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
  del item, call
  return _fail_in_ci((yield))


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
  """A whole file skipped at import (``require_module`` at module level): a collection error under CI."""
  del collector
  return _fail_in_ci((yield))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
  """After each file's last test (its module fixtures gone): collect the file's garbage, then freeze what is
  left alive (TensorFlow and the imports, caches, session fixtures) out of the garbage collector's reach.

  A worker runs dozens of files in one process, and every test leaves TensorFlow graphs and Keras objects
  behind; without this each full collection walks millions of objects that never die, and one took 40 s late in
  a chain of seven training files (about a tenth of that chain's time). Objects that the reference counts free
  are still freed; only a cycle of frozen objects that dies later stays."""
  result = yield
  if nextitem is None or nextitem.path != item.path:
    gc.collect()
    gc.freeze()
  return result


def pytest_terminal_summary(terminalreporter):
  """The skip count, always, with each reason and how many it skipped (on the pytest-xdist controller too,
  where the workers' reports arrive)."""
  skipped = terminalreporter.stats.get("skipped", [])
  reasons = collections.Counter()
  for report in skipped:
    longrepr = report.longrepr
    reason = str(longrepr[2]) if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3 else str(longrepr)
    reasons[reason.removeprefix("Skipped: ")] += 1
  line = f"skipped: {len(skipped)}"
  if reasons:
    line += " (" + "; ".join(f"{n} x {reason}" for reason, n in reasons.most_common()) + ")"
  terminalreporter.write_line(line)


def pytest_collection_modifyitems(config, items):
  """A run that collects tests needing the real data (or the BERT vocab in it) fails here, before any test
  runs, when it is missing: half the suite skipping silently would read as a pass.

  Files holding a ``long`` test come first, then those holding ``slow`` ones, and a ``long`` test first in its
  file: pytest-xdist hands out whole files in this order (``--dist loadfile --no-loadscope-reorder``,
  scripts/test.sh; without the last flag xdist sorts the files by their number of tests), so the longest
  work starts first and the short files fill in around it."""
  del config
  weight, own = {}, {}
  for item in items:
    marks = {m.name for m in item.iter_markers()}
    own[item.nodeid] = 0 if "long" in marks else 1 if "slow" in marks else 2
    weight[item.path] = min(weight.get(item.path, 2), own[item.nodeid])
  # stable: otherwise the order within a file is kept
  items.sort(key=lambda item: (weight[item.path], own[item.nodeid] != 0))
  path = real_data_dir()
  vocab = path / "vocab" / BERT_VOCAB
  # (the fixture, what it needs, where that is, the file that must exist)
  for fixture, what, where, needed in (("data_dir", "real test data", path, path / "README.md"),
                                       ("bert_vocab", "the BERT vocab", vocab, vocab)):
    needing = [item for item in items if fixture in getattr(item, "fixturenames", ())]
    if needing and not needed.exists() and os.environ.get(ALLOW_MISSING_DATA_ENV) != "1":
      raise pytest.UsageError(
          f"{what} not found at {where}, and {len(needing)} of the {len(items)} collected tests need it; set "
          f"ELECTRA_TEST_DATA to the shared data directory, or {ALLOW_MISSING_DATA_ENV}=1 to skip those tests")


@pytest.fixture(scope="session", autouse=True)
def full_float32_matmuls():
  """On Ampere and later GPUs TensorFlow computes float32 matrix products in TF32 (a 10-bit mantissa) unless
  told otherwise; the tests compare float32 results with independent references at about 1e-5, which TF32 does
  not reach (on an H200 the transformers parity tests differed by up to 5.8e-3 with it and passed without).
  No effect on a CPU."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  tf.config.experimental.enable_tensor_float_32_execution(False)


@pytest.fixture(scope="session")
def command_server():
  """The checkout's commands, each in a child forked from one process of this worker that imported TensorFlow
  and the package once (``_forked_commands.CommandServer``): ``command_server.run(argv, cwd)`` in place of
  ``subprocess.run([python, *argv], cwd=cwd, capture_output=True, text=True)``."""
  import _forked_commands  # pylint: disable=import-outside-toplevel
  server = _forked_commands.CommandServer()
  try:
    yield server
  finally:
    server.close()


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
  path = real_data_dir()
  require_data(path / "README.md", "the real test data")
  return path


@pytest.fixture(scope="session")
def bert_vocab(data_dir) -> pathlib.Path:
  return require_data(data_dir / "vocab" / BERT_VOCAB, "the BERT vocab")
