"""``init_checkpoint``: continued pre-training from released or converted weights.

The weights come through ``convert.load_pretrained_weights``, the loader every command uses, so any format
it reads works: a checkpoint in the reference's TF1 layout (Google's released files, with or without Adam
slots), this project's model directory or a pre-training run, a transformers directory or a keras-hub
preset. Only weights are loaded: the optimizer and the step start fresh. Whatever the checkpoint lacks (the
generator of a transformers discriminator, the heads of a keras-hub backbone) keeps its fresh
initialisation, and ``summary_line`` says which parts were loaded and which were not.
"""

import json
import typing

from electra_tf import fileio
from electra_tf.checkpoint_names import reference_variables
from electra_tf.convert import (HF, KERAS_HUB, MODEL_DIR, PRETRAINING_RUN, TF1, TF2, Architecture, LoadReport,
                                infer_architecture, load_pretrained_weights, read_source)
from electra_tf.errors import ElectraError, PretrainingError, first_line

FORMAT_NAMES = {TF1: "reference TF1 checkpoint", MODEL_DIR: "electra-tf model directory",
                HF: "transformers directory", KERAS_HUB: "keras-hub preset",
                PRETRAINING_RUN: "pre-training run", TF2: "TF2 pre-training checkpoint"}

SOURCES_HINT = ("a released checkpoint (its directory or model.ckpt prefix), a transformers directory, a "
                "keras-hub preset or an electra-tf model directory")

_SIZES = (("V", "vocab_size"), ("E", "embedding_size"), ("H", "hidden_size"), ("L", "num_hidden_layers"),
          ("FFN", "intermediate_size"), ("positions", "max_position_embeddings"))


def part_of(name: str, networks) -> typing.Tuple[str, str]:
  """(network, part) of a reference-named weight: ("discriminator" | "generator", "encoder" | "head").

  The ``electra`` encoder is the discriminator's, or the generator's when there is no discriminator (the
  MLM objective)."""
  scope = name.split("/", 1)[0]
  part = "head" if scope.endswith("_predictions") else "encoder"
  if scope == "electra":
    return ("discriminator" if networks.discriminator is not None else "generator"), part
  return ("discriminator" if scope.startswith("discriminator") else "generator"), part


def _count_by_network(names, networks) -> dict:
  counts = {}
  for name in names:
    network = part_of(name, networks)[0]
    counts[network] = counts.get(network, 0) + 1
  return counts


def _fresh_parts(report: LoadReport, networks) -> typing.List[str]:
  """What keeps its fresh initialisation: a whole network (``generator 23 weights``) when none of it came
  from the checkpoint, else its parts (``discriminator head 4 weights``)."""
  total = {}
  for name in reference_variables(networks):
    total.setdefault(part_of(name, networks)[0], []).append(name)
  fresh = set(report.missing)
  parts = []
  for network, names in total.items():
    missing = [n for n in names if n in fresh]
    if not missing:
      continue
    if len(missing) == len(names):
      parts.append(f"{network} {len(missing)} weights")
      continue
    by_part = {}
    for name in missing:
      part = part_of(name, networks)[1]
      by_part[part] = by_part.get(part, 0) + 1
    parts.extend(f"{network} {part} {count} weights" for part, count in by_part.items())
  return parts


def summary_line(path: str, report: LoadReport, networks) -> str:
  """The log line: ``init_checkpoint <path> (reference TF1 checkpoint saved at step 1000000): loaded
  discriminator 25 weights, generator 23 weights; freshly initialised: none; the optimizer and the step
  start fresh (step 0)``; weights of the checkpoint that the networks have no place for are listed too."""
  what = FORMAT_NAMES.get(report.format, report.format)
  if report.global_step is not None:
    what += f" saved at step {report.global_step}"
  loaded = _count_by_network(report.loaded, networks)
  loaded_text = ", ".join(f"{network} {n} weights" for network, n in loaded.items()) or "nothing"
  fresh = _fresh_parts(report, networks)
  line = (f"init_checkpoint {path} ({what}): loaded {loaded_text}; freshly initialised: "
          f"{', '.join(fresh) if fresh else 'none'}")
  if report.unused:
    line += f"; not used (this run's networks have no place for them): {_abbrev(report.unused)}"
  return line + "; the optimizer and the step start fresh (step 0)"


def _abbrev(names, n=3) -> str:
  names = sorted(names)
  return f"{len(names)} weights (" + ", ".join(names[:n]) + (", ..." if len(names) > n else "") + ")"


def check_exists(path: str):
  """Raises ``PretrainingError`` naming the fix when nothing is at ``path`` (a directory, a file or a
  checkpoint prefix)."""
  path = str(path)
  if not (fileio.exists(path) or fileio.exists(path + ".index")):
    raise PretrainingError(f"init_checkpoint {path}: no such file or directory; pass {SOURCES_HINT}, or "
                           "leave init_checkpoint out to start from random weights")


def load(path: str, networks) -> LoadReport:
  """Loads ``path`` into the pre-training ``networks`` (weights only); returns the loader's report.

  Raises ``PretrainingError`` (one line naming the problem and the fix) for a path that does not exist or
  a checkpoint of another model size; the loader's own one-line errors (an unreadable or damaged file,
  something that is not ELECTRA) pass through."""
  path = str(path)
  check_exists(path)
  ours = _networks_architecture(networks)
  try:
    report = load_pretrained_weights(path, networks)
  except ElectraError as error:  # a weight of another shape: say which sizes differ and how to match them
    theirs = _checkpoint_architecture(path)
    differences = size_differences(theirs, ours) if theirs and ours else []
    if not differences:
      raise
    raise PretrainingError(_size_message(path, theirs, differences, error)) from None
  # Same widths but another depth loads without a shape error: a layer left fresh or one left unused.
  differences = size_differences(report.architecture, ours) if report.architecture and ours else []
  if differences:
    raise PretrainingError(_size_message(path, report.architecture, differences))
  return report


def _networks_architecture(networks) -> typing.Optional[Architecture]:
  try:
    return infer_architecture({n: v.shape for n, v in reference_variables(networks).items()}, source="the run")
  except ElectraError:
    return None


def _checkpoint_architecture(path: str) -> typing.Optional[Architecture]:
  try:
    return read_source(path).architecture
  except ElectraError:
    return None


def size_differences(theirs: Architecture, ours: Architecture) -> typing.List[str]:
  """``["H 64 (this run: 32)", "generator L 2 (this run: 1)"]``: the sizes in which a checkpoint's networks
  differ from a run's."""
  out = []
  for label, field in _SIZES:
    a, b = getattr(theirs.discriminator, field), getattr(ours.discriminator, field)
    if a != b:
      out.append(f"{label} {a} (this run: {b})")
  if theirs.generator is not None and ours.generator is not None and not (theirs.tied_generator or
                                                                          ours.tied_generator):
    for label, field in _SIZES[1:5]:
      a, b = getattr(theirs.generator, field), getattr(ours.generator, field)
      if a != b:
        out.append(f"generator {label} {a} (this run: {b})")
  return out


def _size_message(path: str, theirs: Architecture, differences, error: typing.Optional[Exception] = None) -> str:
  hparams = theirs.pretraining_hparams()
  text = (f"init_checkpoint {path} is a model of another size: {', '.join(differences)}; continue it with "
          f"its own sizes: --hparams '{json.dumps(hparams, sort_keys=True)}' plus your other hparams "
          f"(python -m electra_tf.convert inspect {path} prints them)")
  if any(d.startswith("V ") for d in differences):
    text += ", and pre-training data built with the checkpoint's own vocab"
  return text if error is None else f"{text} ({first_line(error)})"
