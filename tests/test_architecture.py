"""The package layering of docs/architecture.md, read from the source: who may import whom, no cycles,
and imports at the top of each file (function-level ones only for optional packages and CLI start-up)."""

import ast
import pathlib
import subprocess
import sys

from conftest import REPO_ROOT

LIBRARY = REPO_ROOT / "electra_tf"

# Each unit (a package, or a top-level module) and the units it may import. Core modules sit at the bottom.
CORE = {"errors", "lazy_exports", "fileio", "hparams", "presets", "configs", "runtime", "tokenization", "optimization",
        "modeling", "checkpoint_names", "reporting", "seed_comparison", "flops"}
ALLOWED = {
    "errors": set(), "fileio": set(), "hparams": {"errors"}, "presets": set(),
    "configs": {"errors", "hparams", "presets"},
    "runtime": {"configs", "errors", "fileio", "optimization", "modeling", "lazy_exports"},
    "tokenization": {"errors", "fileio"},
    "optimization": set(),
    "modeling": {"configs", "errors"}, "checkpoint_names": {"modeling"}, "reporting": {"errors", "runtime"},
    "seed_comparison": set(), "flops": set(), "lazy_exports": set(),
    "docs_gen": {"configs", "hparams"},
    "pretrain_data": CORE,
    "convert": CORE,
    "pretraining": CORE | {"pretrain_data", "convert"},
    "finetuning": CORE | {"convert"},
    "keras_encoder": CORE | {"convert"},
    "serving": CORE | {"convert", "finetuning"},
    "sample_data": CORE | {"pretrain_data"},
    "quickstart": CORE | {"cli", "sample_data", "pretraining", "finetuning"},
    "cli": CORE | {"cli", "sample_data", "pretrain_data", "pretraining", "finetuning", "convert", "serving"},
    "__main__": {"cli"},  # a package's __main__.py only hands over to its command line
}
# Function-level imports allowed: optional dependencies, and what a command loads after parsing its flags; and
# the packages only some paths use (tokenizer graphs, tfds sources, paragraph splitting), so that training and
# conversion start without them (test_training_and_conversion_import_without_the_text_packages).
TEXT_ONLY = ("tensorflow_text", "tensorflow_datasets", "blingfire")
# matplotlib: the sample extra's, imported where a plot is drawn (reporting.plot_panels).
LAZY_OK = {"torch", "safetensors", "apache_beam", "tqdm", "keras_hub", "matplotlib", *TEXT_ONLY}
# Building pre-training data from local text imports no TensorFlow (its import is seconds of a job that takes
# about one): the units on that path load it, and the modules that need it, where a graph, a remote path or
# the input pipeline is used (test_building_from_local_text_imports_no_tensorflow).
TF_LAZY_UNITS = {"fileio", "tokenization", "pretrain_data"}
TF_MODULES = {"tensorflow", "electra_tf.tokenization.graph", "electra_tf.pretrain_data.dataset"}


def _unit(path: pathlib.Path) -> str:
  """A package, or a top-level module; a package's ``__main__.py`` (``python -m electra_tf.<package>``) is an
  entry point like the console commands, not part of its package: the unit ``__main__``."""
  rel = path.relative_to(LIBRARY)
  if rel.name == "__main__.py":
    return "__main__"
  return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(path: pathlib.Path):
  """(module name, is at module level) for every import in the file."""
  tree = ast.parse(path.read_text(encoding="utf-8"))
  top = {id(n) for n in tree.body}
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        yield alias.name, id(node) in top
    elif isinstance(node, ast.ImportFrom) and node.level == 0:
      names = [f"{node.module}.{a.name}" for a in node.names] if node.module == "electra_tf" else [node.module]
      for name in names:
        yield name, id(node) in top


def _library_files():
  return sorted(LIBRARY.rglob("*.py"))


def test_every_unit_imports_only_what_the_layering_allows():
  wrong = []
  for path in _library_files():
    unit = _unit(path)
    if unit == "__init__":
      continue
    assert unit in ALLOWED, f"{path}: unit {unit!r} is not in the layering; add it to docs/architecture.md"
    for name, _ in _imports(path):
      parts = name.split(".")
      if parts[0] != "electra_tf" or len(parts) < 2:
        continue
      target = parts[1]
      if target != unit and target not in ALLOWED[unit]:
        wrong.append(f"{path.relative_to(REPO_ROOT)} ({unit}) imports {name}")
  assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_the_unit_graph_has_no_cycle():
  edges = {u: set() for u in ALLOWED}
  for path in _library_files():
    unit = _unit(path)
    for name, _ in _imports(path):
      parts = name.split(".")
      if parts[0] == "electra_tf" and len(parts) > 1 and parts[1] != unit and unit in edges:
        edges[unit].add(parts[1])
  state = {}

  def visit(u, trail):
    if state.get(u) == "open":
      raise AssertionError("import cycle: " + " -> ".join(trail + [u]))
    if state.get(u) == "done":
      return
    state[u] = "open"
    for v in edges.get(u, ()):
      visit(v, trail + [u])
    state[u] = "done"

  for u in edges:
    visit(u, [])


def test_imports_sit_at_the_top_of_each_file():
  lazy = []
  for path in _library_files():
    for name, at_top in _imports(path):
      if at_top or name.split(".")[0] in LAZY_OK:
        continue
      if _unit(path) == "cli" and name.startswith("electra_tf."):
        continue  # a command parses its flags before it loads TensorFlow
      if _unit(path) == "__init__" and name == "electra_tf.keras_encoder":
        continue  # electra_tf.load_encoder: TensorFlow loads on first use, not on ``import electra_tf``
      if _unit(path) in TF_LAZY_UNITS and name in TF_MODULES:
        continue
      lazy.append(f"{path.relative_to(REPO_ROOT)}: {name}")
  assert not lazy, "function-level imports of required packages:\n" + "\n".join(lazy)


def test_the_library_raises_no_system_exit():
  """A library call never ends the process: errors a user can fix are ``ElectraError``s, which the command lines
  (``cli.common.run_cli``) print as one line with exit status 2."""
  raised = []
  for path in _library_files():
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
      if isinstance(node, ast.Raise) and node.exc is not None:
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(target, ast.Name) and target.id == "SystemExit":
          raised.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
  assert not raised, "raise SystemExit in the library:\n" + "\n".join(raised)


def test_entry_points_only_call_a_command_and_nothing_imports_them():
  mains = [p for p in _library_files() if p.name == "__main__.py"]
  assert mains, "python -m electra_tf.convert needs electra_tf/convert/__main__.py"
  for path in mains:
    names = [n for n, _ in _imports(path) if n.startswith("electra_tf")]
    assert names and all(n.startswith("electra_tf.cli.") for n in names), f"{path}: imports {names}"
  importers = [f"{p.relative_to(REPO_ROOT)} imports {n}" for p in _library_files() for n, _ in _imports(p)
               if n.split(".")[-1] == "__main__"]
  assert not importers, "\n".join(importers)


def test_building_from_local_text_imports_no_tensorflow(tmp_path, bert_vocab):
  """The data command on a local text corpus runs with TensorFlow unimportable, and writes what TensorFlow
  reads (tests/test_tfrecord.py checks the bytes against TensorFlow's own writer)."""
  (tmp_path / "corpus").mkdir()
  (tmp_path / "corpus" / "a.txt").write_text("The first sentence.\nAnd a second one, longer.\n\nA new document.\n",
                                             encoding="utf-8")
  code = ("import sys\n"
          "sys.modules['tensorflow'] = None  # importing it now raises ImportError\n"
          "from electra_tf.cli.build_data import main\n"
          f"sys.exit(main(['--corpus-dir', {str(tmp_path / 'corpus')!r}, '--vocab-file', {str(bert_vocab)!r}, "
          f"'--output-dir', {str(tmp_path / 'out')!r}, '--num-shards', '2', '--no-progress']))\n")
  proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
  assert proc.returncode == 0, proc.stderr.strip().splitlines()[-3:]
  assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
      "metadata.json", "pretrain_data.tfrecord-0-of-2", "pretrain_data.tfrecord-1-of-2"]


def test_reading_user_files_imports_no_tensorflow(tmp_path):
  """A user's files are read and checked without TensorFlow (``electra_tf.finetuning`` loads its job lazily)."""
  (tmp_path / "train.csv").write_text("text,label\nfine film,pos\n\"dull, long\",neg\n", encoding="utf-8")
  code = ("import sys\n"
          "sys.modules['tensorflow'] = None  # importing it now raises ImportError\n"
          "from electra_tf.finetuning import user_files\n"
          f"rows = list(user_files.rows({str(tmp_path / 'train.csv')!r}))\n"
          "print(list(rows[0][1]), len(rows), rows[1][1]['text'])\n")
  proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
  assert proc.returncode == 0, proc.stderr.strip().splitlines()[-3:]
  assert proc.stdout.strip() == "['text', 'label'] 2 dull, long"


def test_training_and_conversion_import_without_the_text_packages():
  """Pre-training, fine-tuning and conversion import without tensorflow-text, tensorflow-datasets and Bling Fire
  (only tokenizer graphs, tfds sources and paragraph splitting load them): every process starts sooner, and the
  training steps run where they are not installed (benchmarks/README.md, "On a GPU": the steps ran without them)."""
  code = ("import sys\n"
          f"sys.modules.update(dict.fromkeys({TEXT_ONLY!r}))  # importing any of them now raises ImportError\n"
          "import electra_tf.pretraining.trainer, electra_tf.finetuning.run, electra_tf.convert\n")
  proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
  assert proc.returncode == 0, proc.stderr.strip().splitlines()[-3:]
