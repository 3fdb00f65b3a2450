"""The console commands ``pip install .`` gives, and the reference-style scripts that need no sys.path."""

import importlib
import importlib.metadata
import os
import pathlib
import subprocess
import sys
import tomllib

import pytest

from conftest import REPO_ROOT

COMMANDS = {"electra-build-vocab", "electra-build-data", "electra-pretrain", "electra-finetune", "electra-convert"}


def _pyproject() -> dict:
  return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _requirement_lines(name) -> list:
  lines = (REPO_ROOT / name).read_text(encoding="utf-8").splitlines()
  return [l.strip() for l in lines if l.strip() and not l.startswith(("#", "-r"))]


def test_console_scripts_resolve_to_the_cli_mains():
  declared = _pyproject()["project"]["scripts"]
  assert set(declared) == COMMANDS
  for name, target in declared.items():
    module, attr = target.split(":")
    assert module.startswith("electra_tf.cli."), (name, target)
    fn = getattr(importlib.import_module(module), attr)
    assert callable(fn), (name, target)
  try:  # an installed copy (pip install -e . after this pyproject.toml) declares the same commands
    installed = importlib.metadata.distribution("electra-tf").entry_points
  except importlib.metadata.PackageNotFoundError:
    return
  installed = {ep.name: ep.value.replace(" ", "") for ep in installed if ep.group == "console_scripts"}
  if installed:
    assert installed == declared


def test_test_extra_matches_requirements_test_txt():
  """scripts/setup_env.sh installs requirements-test.txt; ``pip install .[test]`` installs the same pins."""
  extras = _pyproject()["project"]["optional-dependencies"]
  assert sorted(extras["test"]) == sorted(_requirement_lines("requirements-test.txt"))
  assert extras["beam"] == [l for l in extras["test"] if l.startswith("apache-beam")]
  assert extras["keras-hub"] == [l for l in extras["test"] if l.startswith("keras-hub")]


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
