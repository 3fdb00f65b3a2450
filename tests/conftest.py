"""Shared test fixtures: the real-data directory, the tiny model and quiet TensorFlow."""

import os
import pathlib

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


def real_data_dir() -> pathlib.Path:
  """``ELECTRA_TEST_DATA``, default ``../shared/data`` beside the checkout."""
  return pathlib.Path(os.environ.get("ELECTRA_TEST_DATA", REPO_ROOT.parent / "shared" / "data"))


# A developer without the shared data may run the rest of the suite with this set to 1; CI never sets it.
ALLOW_MISSING_DATA_ENV = "ELECTRA_ALLOW_MISSING_TEST_DATA"


def pytest_collection_modifyitems(config, items):
  """A run that collects tests needing the real data fails here, before any test runs, when the data is
  missing: half the suite skipping silently would read as a pass.

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
  needing = [item for item in items if "data_dir" in getattr(item, "fixturenames", ())]
  path = real_data_dir()
  if needing and not (path / "README.md").exists() and os.environ.get(ALLOW_MISSING_DATA_ENV) != "1":
    raise pytest.UsageError(
        f"real test data not found at {path}, and {len(needing)} of the {len(items)} collected tests need it; "
        f"set ELECTRA_TEST_DATA to the shared data directory, or {ALLOW_MISSING_DATA_ENV}=1 to skip those tests")


@pytest.fixture(scope="session", autouse=True)
def full_float32_matmuls():
  """On Ampere and later GPUs TensorFlow computes float32 matrix products in TF32 (a 10-bit mantissa) unless
  told otherwise; the tests compare float32 results with independent references at about 1e-5, which TF32 does
  not reach (on an H200 the transformers parity tests differed by up to 5.8e-3 with it and passed without).
  No effect on a CPU."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  tf.config.experimental.enable_tensor_float_32_execution(False)


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
  path = real_data_dir()
  if not (path / "README.md").exists():
    pytest.skip(f"real test data not found at {path} ({ALLOW_MISSING_DATA_ENV}=1); set ELECTRA_TEST_DATA to the "
                "shared/data directory")
  return path


@pytest.fixture(scope="session")
def bert_vocab(data_dir) -> pathlib.Path:
  path = data_dir / "vocab" / "bert-base-uncased-vocab.txt"
  if not path.exists():
    pytest.skip(f"BERT vocab not found at {path}")
  return path
