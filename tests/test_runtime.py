"""The shared runtime (``runtime.py``): atomic outputs, TensorBoard scalars read back, strategy choice."""

import os

import pytest
import tensorflow as tf

from electra_tf import reporting, runtime
from electra_tf.configs import FinetuningConfig, PretrainingConfig
from electra_tf.errors import ElectraError, OutputExistsError


def test_atomic_write_replaces_whole_files_and_leaves_nothing_on_failure(tmp_path, monkeypatch):
  path = tmp_path / "sub" / "results.json"
  runtime.atomic_write(str(path), "first")
  runtime.atomic_write(str(path), b"second")
  assert path.read_text() == "second"

  real_fdopen = os.fdopen

  def fdopen_that_fails_on_write(*args, **kwargs):
    f = real_fdopen(*args, **kwargs)
    f.write = lambda data: (_ for _ in ()).throw(OSError("disk full"))
    return f

  monkeypatch.setattr(os, "fdopen", fdopen_that_fails_on_write)
  with pytest.raises(OSError, match="disk full"):
    runtime.atomic_write(str(path), "third")
  monkeypatch.undo()
  assert path.read_text() == "second"  # the old file is intact and no temporary is left behind
  assert sorted(p.name for p in path.parent.iterdir()) == ["results.json"]


def test_atomic_directory_swaps_in_complete_outputs_only(tmp_path):
  dest = tmp_path / "model"
  with runtime.atomic_directory(dest) as tmp:
    assert not dest.exists()  # nothing at the destination until the block completes
    open(os.path.join(tmp, "a.txt"), "w").write("1")
  assert (dest / "a.txt").read_text() == "1"
  with pytest.raises(OutputExistsError, match="already exists; pass --overwrite"):
    runtime.atomic_directory(dest)
  with pytest.raises(RuntimeError):
    with runtime.atomic_directory(dest, overwrite=True) as tmp:
      open(os.path.join(tmp, "b.txt"), "w").write("2")
      raise RuntimeError("interrupted")
  assert sorted(os.listdir(dest)) == ["a.txt"]  # the old output survives a failed replacement
  assert sorted(os.listdir(tmp_path)) == ["model"]  # and no temporary is left behind
  with runtime.atomic_directory(dest, overwrite=True) as tmp:
    open(os.path.join(tmp, "b.txt"), "w").write("2")
  assert sorted(os.listdir(dest)) == ["b.txt"]
  assert issubclass(OutputExistsError, ElectraError)


def test_scalars_read_back_with_their_tags_steps_and_values(tmp_path):
  writer = tf.summary.create_file_writer(str(tmp_path))
  runtime.write_scalars(writer, 10, {"loss": 2.5, "disc_auc_real": 0.75, "note": "skipped", "flag": True})
  runtime.write_scalars(writer, 20, {"loss": 1.5}, prefix="eval/")
  runtime.write_scalars(None, 30, {"loss": 0.0})  # no writer: nothing happens
  writer.flush()
  curves = reporting.read_scalars(str(tmp_path))
  assert curves == {"loss": [(10, 2.5)], "disc_auc_real": [(10, 0.75)], "eval/loss": [(20, 1.5)]}


def test_format_duration():
  assert runtime.format_duration(247) == "4m07s"
  assert runtime.format_duration(3900) == "1h05m"
  assert runtime.format_duration(float("inf")) == "?"


@pytest.mark.parametrize("config_cls", [PretrainingConfig, FinetuningConfig])
def test_both_jobs_select_their_strategy_from_the_shared_runtime_fields(config_cls, monkeypatch):
  monkeypatch.delenv("TF_CONFIG", raising=False)
  cfg = config_cls.create("m", "/nonexistent", strategy="auto")
  strategy = runtime.select_strategy(cfg)
  assert isinstance(strategy, tf.distribute.OneDeviceStrategy)  # no GPU here, no TF_CONFIG cluster
  assert runtime.is_chief(strategy)
  monkeypatch.setenv("TF_CONFIG", "{not json")
  with pytest.raises(ElectraError, match="TF_CONFIG is not valid JSON"):
    runtime.select_strategy(cfg)
