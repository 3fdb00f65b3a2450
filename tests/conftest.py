"""Shared test fixtures: the real-data directory, the tiny model and quiet TensorFlow."""

import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent

# The one tiny transformer the tests train (pre-training and fine-tuning): a step traces in seconds.
TINY_MODEL = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
# The same without dropout, for tests comparing topologies (dropout masks are drawn per replica).
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
  missing: half the suite skipping silently would read as a pass."""
  del config
  needing = [item for item in items if "data_dir" in getattr(item, "fixturenames", ())]
  path = real_data_dir()
  if needing and not (path / "README.md").exists() and os.environ.get(ALLOW_MISSING_DATA_ENV) != "1":
    raise pytest.UsageError(
        f"real test data not found at {path}, and {len(needing)} of the {len(items)} collected tests need it; "
        f"set ELECTRA_TEST_DATA to the shared data directory, or {ALLOW_MISSING_DATA_ENV}=1 to skip those tests")


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
