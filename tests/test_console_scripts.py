"""The console commands ``pip install .`` gives, and the reference-style scripts that need no sys.path."""

import importlib
import importlib.metadata
import os
import pathlib
import runpy
import subprocess
import sys

import pytest
import setuptools

from conftest import REPO_ROOT

COMMANDS = {"electra-build-vocab", "electra-build-data", "electra-pretrain", "electra-finetune", "electra-convert"}


def _declared_console_scripts(monkeypatch) -> dict:
  """``name -> "module:function"`` as setup.py declares them (setup.py run with setup() captured)."""
  captured = {}
  monkeypatch.setattr(setuptools, "setup", lambda **kwargs: captured.update(kwargs))
  runpy.run_path(str(REPO_ROOT / "setup.py"), run_name="__main__")
  scripts = captured["entry_points"]["console_scripts"]
  return dict(s.replace(" ", "").split("=", 1) for s in scripts)


def test_console_scripts_resolve_to_the_cli_mains(monkeypatch):
  declared = _declared_console_scripts(monkeypatch)
  assert set(declared) == COMMANDS
  for name, target in declared.items():
    module, attr = target.split(":")
    assert module.startswith("electra_tf.cli."), (name, target)
    fn = getattr(importlib.import_module(module), attr)
    assert callable(fn), (name, target)
  try:  # an installed copy (pip install -e . after this setup.py) declares the same commands
    installed = importlib.metadata.distribution("electra-tf").entry_points
  except importlib.metadata.PackageNotFoundError:
    return
  installed = {ep.name: ep.value.replace(" ", "") for ep in installed if ep.group == "console_scripts"}
  if installed:
    assert installed == declared


def test_no_script_changes_sys_path():
  scripts = [*REPO_ROOT.glob("pretrain/*.py"), *REPO_ROOT.glob("finetune/*.py"), *REPO_ROOT.glob("data_prep/*.py"),
             REPO_ROOT / "electra_tf" / "convert" / "__main__.py"]
  assert len(scripts) >= 5
  for path in scripts:
    assert "sys.path" not in path.read_text(encoding="utf-8"), path


def test_script_runs_from_a_checkout_without_sys_path(tmp_path):
  try:
    importlib.metadata.distribution("electra-tf")
  except importlib.metadata.PackageNotFoundError:
    pytest.skip("electra-tf is not installed (scripts/setup_env.sh runs pip install -e .)")
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed package, nothing else
  result = subprocess.run([sys.executable, str(REPO_ROOT / "pretrain" / "run_pretraining.py"), "--help"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.startswith("usage: run_pretraining.py") and "--model-size" in result.stdout
  assert not list(pathlib.Path(tmp_path).iterdir())  # --help writes nothing
