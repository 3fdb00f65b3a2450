"""Shared pieces of the fine-tuning tasks: errors, TSV reading, the Task interface, feature stacking.

Every task turns raw files into ``Example`` objects, featurizes them into flat dicts of ints/floats and
fixed-length lists (the reference's ``feature_spec``), and names its head and scorer. Features of all
tasks share ``input_ids``, ``input_mask``, ``segment_ids`` and ``task_id``; task-specific keys are
prefixed with the task name, so a multi-task batch can carry every task's labels (zeros where unused).
"""

import logging
import os
import typing

import numpy as np

from electra_tf import fileio
from electra_tf.errors import DataError  # re-exported: tasks raise it from here
from electra_tf.finetuning import carving

log = logging.getLogger("electra_tf.finetuning")



class FeatureSpec(typing.NamedTuple):
  """One model input: name, per-example shape ([] scalar) and numpy dtype."""
  name: str
  shape: tuple
  dtype: type = np.int32


def common_feature_specs(max_seq_length: int):
  return [FeatureSpec("input_ids", (max_seq_length,)), FeatureSpec("input_mask", (max_seq_length,)),
          FeatureSpec("segment_ids", (max_seq_length,)), FeatureSpec("task_id", ())]


def read_tsv(path: str) -> typing.List[typing.Tuple[int, list]]:
  """[(1-based line number, columns)] of a tab-separated file; raises DataError if it is missing.

  Lines end at "\n" only and fields split at tabs with no quoting (the reference reads GLUE files with
  ``quotechar=None``); other Unicode line separators (U+0085, U+2028) stay inside the text, as in the data.
  """
  if not fileio.isfile(path):
    raise DataError(path, None, "file not found")
  rows = []
  with fileio.open_file(path, "r", newline="") as f:
    for line_no, line in enumerate(f, 1):
      rows.append((line_no, line.rstrip("\r\n").split("\t")))
  return rows


def truncate_seq_pair(tokens_a: list, tokens_b: list, max_length: int):
  """The reference's heuristic: pop from the longer sequence until the pair fits (in place)."""
  while len(tokens_a) + len(tokens_b) > max_length:
    (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()


def pad(values: list, length: int, value=0) -> list:
  return list(values) + [value] * (length - len(values))


class PredictionFiles(typing.NamedTuple):
  """The files a task writes for one test split (``FinetuningRun.write_test_outputs`` places them):
  ``predictions`` as ``test_predictions/<task>_<split>_<trial>_predictions.<predictions_format>``, and
  for GLUE ``submission`` = (server file stem, eids, labels) as ``glue_submission/<tasks>_<trial>/<stem>.tsv``."""
  predictions: dict
  predictions_format: str  # "pkl" (GLUE: eid -> logits, or the STS-B score) | "json" (QA: id -> answer text)
  submission: typing.Optional[tuple] = None


class Task:
  """A fine-tuning task. Subclasses set ``name``, ``head_type`` and implement the reading,
  featurization and scoring. ``task_index`` is the task's position in ``config.task_names``."""

  name = "task"
  head_type = "classification"  # classification | regression | qa | tagging
  test_splits = ("test",)

  def __init__(self, config, tokenizer):
    self.config = config
    self.tokenizer = tokenizer
    self.task_index = config.task_names.index(self.name) if self.name in config.task_names else 0
    self.source = None  # a tfds_source.TFDSSource when data_source == "tfds"

  @property
  def data_dir(self) -> str:
    return os.path.join(self.config.raw_data_dir, self.name)

  def get_examples(self, split: str) -> list:
    raise NotImplementedError

  # ---- the validation split carved from training ----------------------------------------------------------

  @property
  def carves_validation(self) -> bool:
    """Whether the network trains on the training data less a validation split (scored instead of dev, or to
    keep the best epoch)."""
    return self.config.evaluate_on == "validation" or self.config.keep_best_model

  def unit_text(self, example) -> str:
    """What decides that two examples are the same (carving never splits them, nor takes a dev text)."""
    for attr in ("text_a", "words", "question_text"):
      if hasattr(example, attr):
        value = getattr(example, attr)
        text = " ".join(value) if isinstance(value, (list, tuple)) else str(value)
        if getattr(example, "text_b", None) is not None:
          text += "\t" + example.text_b
        if getattr(example, "paragraph_text", None):
          text += "\t" + example.paragraph_text
        return text
    return repr(example)

  def has_split(self, split: str) -> bool:
    try:
      return fileio.exists(self.split_path(split))
    except (AttributeError, DataError, NotImplementedError):
      return False

  def carved(self) -> typing.Tuple[list, list]:
    """(training examples less the validation split, the validation split): a seeded deal of the training
    examples (``validation_seed``, the same for every trial), ``validation_size`` of them (a fraction below 1,
    else a count) to validation. An example whose text occurs in dev, or twice in training, stays in training."""
    if getattr(self, "_carved", None) is None:
      train = self.training_examples_for_carving()
      size = self.config.validation_size
      n = int(round(size * len(train))) if size < 1 else int(size)
      dev = None
      if self.has_split("dev"):
        dev_texts = [self.unit_text(e) for e in self.get_examples("dev")]
        dev = carving.Units("", [""] * len(dev_texts), dev_texts)
      texts = [self.unit_text(e) for e in train]
      dealt = carving.carve(carving.Units("", [""] * len(train), texts), max(1, n), self.config.validation_seed,
                            dev)
      rest = [train[i] for i in sorted(dealt.pool)]
      validation = [train[i] for i in sorted(dealt.validation)]
      self._carved = (self.after_carving(rest), validation)
    return self._carved

  def training_examples_for_carving(self) -> list:
    return self.get_examples("train")

  def after_carving(self, rest: list) -> list:
    """The training examples the network sees, from the carving's rest (GLUE pair tasks add swapped pairs)."""
    return rest

  def training_examples(self) -> list:
    """What the network trains on: the training split, less the validation split when it carves one."""
    return self.carved()[0] if self.carves_validation else self.get_examples("train")

  def split_examples(self, split: str) -> list:
    """A split's examples; ``validation`` is the carved validation split."""
    return self.carved()[1] if split == "validation" else self.get_examples(split)

  def featurize(self, examples: list, is_training: bool) -> list:
    """Examples -> list of feature dicts (QA may give several per example)."""
    raise NotImplementedError

  def feature_specs(self) -> typing.List[FeatureSpec]:
    raise NotImplementedError

  def eval_features(self, split: str) -> list:
    """The featurized evaluation/test split, in the order the scorer expects."""
    return self.featurize(self.split_examples(split), False)

  def get_scorer(self, split: str = "dev", output_dir: typing.Optional[str] = None):
    """A fresh scorer for ``split``. Scorers that write files (QA: predictions, null odds, metrics) put
    them in ``output_dir``; the others ignore it."""
    raise NotImplementedError

  def test_output_splits(self) -> typing.Sequence[str]:
    """The splits ``test_outputs`` writes predictions for; none by default (chunking writes no test files)."""
    return ()

  def test_outputs(self, split: str, outs: dict) -> PredictionFiles:
    """What to write for test split ``split`` given the head's outputs ``outs`` on ``eval_features(split)``."""
    raise NotImplementedError


def format_feature(feature: dict, tokenizer) -> str:
  """One feature dict as the reference's ``log_examples`` shows it: the word pieces, then every input."""
  length = int(sum(feature.get("input_mask", ()))) or len(feature.get("input_ids", ()))
  lines = ["  tokens: " + " ".join(tokenizer.convert_ids_to_tokens(list(feature["input_ids"][:length])))]
  for key in sorted(feature):
    value = feature[key]
    if isinstance(value, (list, tuple, np.ndarray)):
      value = " ".join(str(v) for v in value)
    lines.append(f"  {key}: {value}")
  return "\n".join(lines)


def stack_features(features: list, specs: typing.Sequence[FeatureSpec], n_tasks: int,
                   pad_to_multiple: int = 1) -> typing.Dict[str, np.ndarray]:
  """Feature dicts -> {name: array [N, ...]}; keys a feature lacks are zero. With ``pad_to_multiple``,
  dummy rows (task_id = n_tasks, zero loss, skipped when scoring) pad N up to a multiple, as the
  reference pads its TFRecords to a batch multiple."""
  n = len(features)
  n_padded = -(-n // pad_to_multiple) * pad_to_multiple if n else pad_to_multiple
  arrays = {s.name: np.zeros((n_padded,) + tuple(s.shape), s.dtype) for s in specs}
  for i, feature in enumerate(features):
    for key, value in feature.items():
      if key in arrays:
        arrays[key][i] = value
  arrays["task_id"][n:] = n_tasks
  return arrays
