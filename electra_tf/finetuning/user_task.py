"""A user's own task, read from their files by column name: classification (one text or a pair, any label
set), regression, multi-label classification, token tagging and extractive QA.

``TaskSpec`` says what the task is: its name, type, columns and label set. ``infer_spec`` reads the training
file once to fill in what the user did not say (the type, the labels, the regression range) and checks every
training row on the way; the spec is written beside each fine-tuned model (``task.json``), so prediction reads
new files exactly as training read its own. ``make_task`` builds the task object the fine-tuning run trains.

Type inference from the training file: a ``.txt`` / ``.conll`` file, or ``tokens_column`` / ``tags_column``
given, is tagging; a SQuAD-layout ``.json`` is QA; labels that are lists (JSON Lines) or a ``label_separator``
make multi-label; labels that are all integers (or all text) are classes; numbers with a fraction make
regression. ``task_type`` overrides the guess (``classification`` then takes numbers as class names).
"""

import dataclasses
import json
import math
import os
import typing

import numpy as np

from electra_tf import fileio
from electra_tf.errors import DataError, HParamError
from electra_tf.finetuning import user_files
from electra_tf.finetuning.base import FeatureSpec, PredictionFiles, Task, common_feature_specs, log
from electra_tf.finetuning.classification import Columns, GlueTask, InputExample, RegressionTask
from electra_tf.finetuning.result_files import write_json
from electra_tf.finetuning.qa import SQuADTask
from electra_tf.finetuning.tagging import TaggingExample, featurize_tagging, tagging_feature_specs
from electra_tf.finetuning.scorers.classification import RegressionScorer
from electra_tf.finetuning.scorers.multilabel import MultiLabelScorer
from electra_tf.finetuning.scorers.tagging import TaggingScorer

TASK_TYPES = ("auto", "classification", "regression", "multilabel", "tagging", "qa")
SPEC_FILE = "task.json"
SAVED_MODEL_SPEC = "electra_task.json"  # the spec in an exported SavedModel's assets
SPLITS = ("train", "dev", "test")


@dataclasses.dataclass
class TaskSpec:
  """A user task: what ``--task-name``, ``--task-type`` and the column flags said, plus what the training
  file showed (``labels``, ``label_kind``, the regression range). JSON-serialisable (``to_json``)."""
  name: str
  type: str = "auto"
  text_column: typing.Optional[str] = None
  text_pair_column: typing.Optional[str] = None
  label_column: typing.Optional[str] = None
  tokens_column: typing.Optional[str] = None
  tags_column: typing.Optional[str] = None
  id_column: typing.Optional[str] = None
  label_separator: typing.Optional[str] = None
  labels: typing.List = dataclasses.field(default_factory=list)
  label_kind: str = "text"  # text | integer (class names as the training file gave them)
  min_value: float = 0.0  # regression: the training labels' range, mapped to [0, 1] for the head
  max_value: float = 1.0
  squad_v2: bool = False  # QA: some training questions are unanswerable

  def to_json(self) -> dict:
    return dataclasses.asdict(self)

  @classmethod
  def from_json(cls, data: dict) -> "TaskSpec":
    known = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in known})

  def describe(self) -> str:
    if self.type in ("classification", "multilabel"):
      shown = ", ".join(str(label) for label in self.labels[:8]) + (", ..." if len(self.labels) > 8 else "")
      pair = f" and {self.text_pair_column!r}" if self.text_pair_column else ""
      return f"{self.type} of {self.text_column!r}{pair} into {len(self.labels)} labels ({shown})"
    if self.type == "regression":
      return f"regression of {self.text_column!r} on {self.label_column!r} (training range {self.min_value:g} to " \
             f"{self.max_value:g})"
    if self.type == "tagging":
      return f"tagging with {len(self.labels)} tags"
    return "extractive QA" + (" with unanswerable questions" if self.squad_v2 else "")


def write_spec(directory: str, spec: TaskSpec, config: dict):
  """``task.json`` beside a fine-tuned model: the spec, and the fine-tuning config that featurized its input."""
  write_json(os.path.join(directory, SPEC_FILE), {"task": spec.to_json(), "finetuning": config})


def read_spec(directory: str) -> typing.Tuple[TaskSpec, dict]:
  """(spec, fine-tuning config dict) of a fine-tuned model directory; a DataError when it has none."""
  path = os.path.join(directory, SPEC_FILE)
  if not fileio.isfile(path):
    raise DataError(directory, None, f"no {SPEC_FILE}: not a model fine-tuned on a task from your own files "
                    "(finetuning_models/<task>_model_<trial>)")
  with fileio.open_file(path) as f:
    data = json.load(f)
  return TaskSpec.from_json(data["task"]), data["finetuning"]


# ---- inference ------------------------------------------------------------------------------------------

def _missing(value) -> bool:
  return value is None or (isinstance(value, str) and not value.strip()) or value == []


def _kind(value) -> str:
  """A JSON label's kind: integer, number, text, list or bool."""
  if isinstance(value, bool):
    return "bool"
  if isinstance(value, int):
    return "integer"
  if isinstance(value, float):
    return "integer" if value.is_integer() else "number"
  if isinstance(value, list):
    return "list"
  return "text"


def _text_kind(value: str) -> str:
  """A CSV / TSV label's kind: integer, number or text."""
  try:
    number = float(value)
  except ValueError:
    return "text"
  if not math.isfinite(number):
    return "text"
  return "integer" if number.is_integer() and "." not in value and "e" not in value.lower() else "number"


KIND_WORDS = {"integer": "an integer", "number": "a number", "text": "text", "list": "a list", "bool": "true/false"}


def default_column(path: str, first_row: dict, given, candidates, flag: str) -> str:
  """``given``, else the first of ``candidates`` the file has; a DataError naming the flag otherwise."""
  if given is not None:
    return given
  for name in candidates:
    if name in first_row:
      return name
  raise DataError(path, None, f"no column named {' or '.join(repr(c) for c in candidates)}; say which column "
                  f"with {flag} (the file's columns are {', '.join(repr(c) for c in first_row)})")


def infer_spec(spec: TaskSpec, train_file: str) -> TaskSpec:
  """``spec`` completed from the training file (type, columns, labels); every training row checked."""
  spec = dataclasses.replace(spec)
  if spec.type not in TASK_TYPES:
    raise HParamError(f"task_type {spec.type!r} is not one of {', '.join(TASK_TYPES)}")
  fmt = user_files.file_format(train_file)
  if fmt == "json" and user_files.is_squad_file(train_file):
    fmt = "squad"
  if spec.type == "auto":
    if fmt == "squad":
      spec.type = "qa"
    elif fmt == "conll" or spec.tokens_column or spec.tags_column or _has_token_lists(train_file, fmt):
      spec.type = "tagging"
  if spec.type == "qa":
    if fmt != "squad":
      raise DataError(train_file, None, "QA reads SQuAD-layout JSON (a top-level 'data' list of articles with "
                      "'paragraphs'); convert the file or choose another --task-type")
    return _infer_qa(spec, train_file)
  if spec.type == "tagging":
    return _infer_tagging(spec, train_file, fmt)
  if fmt in ("conll", "squad"):
    raise DataError(train_file, None, f"a {fmt} file holds no text/label columns for {spec.type}; use a .csv, "
                    ".tsv or .jsonl file")
  return _infer_sentence_task(spec, train_file, fmt)


def _has_token_lists(path: str, fmt: str) -> bool:
  """A JSON Lines file whose first row has a ``tokens`` (or ``words``) list and no ``text`` column."""
  if fmt not in ("jsonl", "json"):
    return False
  _, first = next(user_files.rows(path, fmt))
  return any(isinstance(first.get(c), list) for c in ("tokens", "words")) and "text" not in first


def _infer_sentence_task(spec: TaskSpec, path: str, fmt: str) -> TaskSpec:
  rows = user_files.rows(path, fmt)
  line, first = next(rows)
  spec.text_column = default_column(path, first, spec.text_column, ("text", "sentence", "sentence1"),
                                    "--text-column")
  if spec.text_pair_column is None and spec.text_column == "sentence1" and "sentence2" in first:
    spec.text_pair_column = "sentence2"
  spec.label_column = default_column(path, first, spec.label_column, ("label", "labels"), "--label-column")
  user_files.require_columns(path, first, {"--text-column": spec.text_column,
                                           "--text-pair-column": spec.text_pair_column,
                                           "--label-column": spec.label_column, "--id-column": spec.id_column})
  kinds, labels, n = {}, set(), 0
  is_json = fmt in ("jsonl", "json")
  for line, row in _chain_first(line, first, rows):
    n += 1
    value = row.get(spec.label_column)
    if _missing(value):
      raise DataError(path, line, f"no label in column {spec.label_column!r}; fill it in or drop the row")
    if _missing(row.get(spec.text_column)) and spec.text_column not in row:
      raise DataError(path, line, f"no column {spec.text_column!r} in this row")
    if spec.label_separator or (is_json and isinstance(value, list)):
      values = _split_labels(path, line, value, spec.label_separator)
      kinds.setdefault("list", line)
      for v in values:
        kinds.setdefault(_kind(v) if is_json else "text", line)
      labels.update(values)
      continue
    kind = _kind(value) if is_json else _text_kind(value)
    kinds.setdefault(kind, line)
    labels.add(value if is_json else value.strip())
  if spec.type == "auto":
    spec.type = _type_from_kinds(path, kinds, spec)
  if spec.type == "multilabel" and "list" not in kinds and not spec.label_separator:
    raise HParamError("task_type multilabel needs each label cell to be a list (JSON Lines) or several labels "
                      "joined by a separator (--label-separator)")
  if spec.type == "regression":
    numbers = []
    for value in labels:
      try:
        numbers.append(float(value))
      except (TypeError, ValueError):
        raise DataError(path, kinds.get("text"), f"label {value!r} is not a number, and regression needs "
                        "numbers") from None
    spec.min_value, spec.max_value = min(numbers), max(numbers)
    if spec.max_value == spec.min_value:
      raise DataError(path, None, f"every training label is {spec.min_value:g}: nothing to learn")
    spec.labels = []
  else:
    spec.label_kind = "integer" if set(kinds) <= {"integer", "list"} and "integer" in kinds else "text"
    spec.labels = sorted(labels, key=lambda v: (float(v), str(v)) if spec.label_kind == "integer" else str(v))
    if spec.label_kind == "integer" and not is_json:
      spec.labels = [int(v) for v in spec.labels]
    if len(spec.labels) < 2 and spec.type == "classification":
      raise DataError(path, None, f"every training row has the label {spec.labels[0]!r}: a classifier needs at "
                      "least two labels")
  log.info("%s: %s, %d training rows (%s)", spec.name, spec.describe(), n, path)
  return spec


def _chain_first(line, first, rest):
  yield line, first
  yield from rest


def _split_labels(path, line, value, separator) -> list:
  if isinstance(value, list):
    return [v.strip() if isinstance(v, str) else v for v in value]
  if not isinstance(value, str):
    raise DataError(path, line, f"multi-label needs a list or separated labels, got {value!r}")
  if separator is None:
    return [value.strip()]
  return [v.strip() for v in value.split(separator) if v.strip()]


def _type_from_kinds(path: str, kinds: dict, spec: TaskSpec) -> str:
  if "list" in kinds:
    return "multilabel"
  present = sorted(kinds, key=kinds.get)
  if set(present) <= {"integer", "number"}:
    return "regression" if "number" in present else "classification"
  if len(present) > 1:
    a, b = present[0], present[1]
    raise DataError(path, kinds[b], f"mixed label types: line {kinds[a]} has {KIND_WORDS[a]} label, line "
                    f"{kinds[b]} {KIND_WORDS[b]}; make the labels one type, or pass --task-type classification "
                    "to read them all as class names")
  return "classification"


def _infer_tagging(spec: TaskSpec, path: str, fmt: str) -> TaskSpec:
  tags = set()
  for line, _, sentence_tags in tagged_sentences(spec, path, fmt, labelled=True):
    tags.update(sentence_tags)
  spec.labels = sorted(tags)
  spec.label_kind = "text"
  log.info("%s: %s (%s)", spec.name, spec.describe(), path)
  return spec


def tagged_sentences(spec: TaskSpec, path: str, fmt: typing.Optional[str] = None, labelled: bool = True):
  """Yields ``(line, words, tags)`` of a CoNLL file or of a JSON Lines file's token and tag list columns (tags
  None where ``labelled`` is false and the row has none)."""
  fmt = fmt or user_files.file_format(path)
  if fmt == "conll":
    yield from user_files.conll_sentences(path)
    return
  first = True
  for line, row in user_files.rows(path, fmt):
    if first:
      spec.tokens_column = default_column(path, row, spec.tokens_column, ("tokens", "words"), "--tokens-column")
      if labelled or spec.tags_column in row or (spec.tags_column is None and "tags" in row):
        spec.tags_column = default_column(path, row, spec.tags_column, ("tags", "ner_tags", "pos_tags"),
                                          "--tags-column")
      user_files.require_columns(path, row, {"--id-column": spec.id_column})
      first = False
    words = row.get(spec.tokens_column)
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
      raise DataError(path, line, f"column {spec.tokens_column!r} must be a list of words")
    tags = row.get(spec.tags_column) if spec.tags_column else None
    if tags is None and not labelled:
      yield line, tuple(words), None
      continue
    if not isinstance(tags, list):
      raise DataError(path, line, f"column {spec.tags_column!r} must be a list of tags")
    if len(tags) != len(words):
      raise DataError(path, line, f"{len(words)} tokens but {len(tags)} tags; give one tag per token")
    yield line, tuple(words), tuple(str(t) for t in tags)


def _infer_qa(spec: TaskSpec, path: str) -> TaskSpec:
  with fileio.open_file(path, "rb") as f:
    try:
      data = json.loads(f.read().decode("utf-8-sig"))["data"]
    except UnicodeDecodeError:
      raise DataError(path, None, "not UTF-8 text; save the file as UTF-8") from None
    except (json.JSONDecodeError, KeyError, TypeError):
      raise DataError(path, None, "not a SQuAD file (one JSON document with a top-level 'data' list)") from None
  spec.squad_v2 = any(q.get("is_impossible") for a in data for p in a.get("paragraphs", []) for q in p.get("qas", []))
  spec.labels = []
  log.info("%s: %s (%s)", spec.name, spec.describe(), path)
  return spec


# ---- tasks ----------------------------------------------------------------------------------------------

class UserFilesMixin:
  """Where a user task's splits are: ``config.train_file`` / ``dev_file`` / ``test_file`` (the reference's
  ``<raw_data_dir>/<task>/<split>`` layout for the reference's tasks), or any file given for prediction."""

  spec: TaskSpec

  def split_path(self, split: str) -> str:
    path = getattr(self.config, f"{split}_file", None) if split in SPLITS else None
    if path is None:
      path = self.extra_files.get(split)
    if not path:
      raise DataError(f"--{split}-file", None, f"no {split} file given")
    return path

  @property
  def extra_files(self) -> dict:
    if not hasattr(self, "_extra_files"):
      self._extra_files = {}
    return self._extra_files

  def add_file(self, split: str, path: str):
    """Reads ``path`` as split ``split`` (prediction on a new file)."""
    self.extra_files[split] = path
    self.read_cache.pop(split, None)

  @property
  def read_cache(self) -> dict:
    """split -> its examples: each file is read into one list, once (training is read again only to infer
    the spec, which keeps just the labels)."""
    if not hasattr(self, "_read_cache"):
      self._read_cache = {}
    return self._read_cache

  def get_examples(self, split, doubled=True):  # pylint: disable=unused-argument  (GlueTask's signature)
    if split not in self.read_cache:
      self.read_cache[split] = self.read_examples(split)
    return self.read_cache[split]


def _label_value(spec: TaskSpec, value):
  """A file's label cell as the spec's labels hold it."""
  if isinstance(value, str):
    value = value.strip()
    if spec.label_kind == "integer" and _text_kind(value) == "integer":
      return int(value)
  elif isinstance(value, float) and value.is_integer() and spec.label_kind == "integer":
    return int(value)
  return value


def row_texts(spec: TaskSpec, path: str, line: int, row: dict) -> typing.Tuple[str, typing.Optional[str]]:
  """A row's text and text pair (None without a pair column); a missing column or a JSON null is an error
  naming the line."""
  texts = []
  for column in (spec.text_column, spec.text_pair_column):
    if column is None:
      texts.append(None)
      continue
    if column not in row:
      raise DataError(path, line, f"no column {column!r}; the file's columns are "
                      f"{', '.join(repr(c) for c in row)}")
    if row[column] is None:
      raise DataError(path, line, f"the text in column {column!r} is null; give a string (\"\" for no text) "
                      "or drop the row")
    texts.append(str(row[column]))
  return texts[0], texts[1]


class UserClassification(UserFilesMixin, GlueTask):
  """One text (or a pair) -> one of the labels the training file holds."""

  def __init__(self, config, tokenizer, spec: TaskSpec):
    self.name = spec.name
    super().__init__(config, tokenizer)
    self.spec = spec
    self.label_list = list(spec.labels)
    self.ids = {}  # split -> the id column's values, in example order

  @classmethod
  def columns(cls, split):
    return Columns(0, None, None, True)

  def test_output_splits(self):
    return ("test",) if getattr(self.config, "test_file", None) else ()

  def read_examples(self, split):
    path = self.split_path(split)
    examples, ids = [], []
    for eid, (line, row) in enumerate(user_files.rows(path)):
      text_a, text_b = row_texts(self.spec, path, line, row)
      label = self._label(path, line, row, split)
      examples.append(InputExample(eid, self.name, text_a, text_b, label))
      ids.append(row.get(self.spec.id_column) if self.spec.id_column else line)  # no id: null
    self.ids[split] = ids
    return examples

  def has_labels(self, split: str) -> bool:
    return split != "test" or self._file_has_label(self.split_path(split))

  def _file_has_label(self, path):
    return self.spec.label_column in user_files.columns(path)

  def _label(self, path, line, row, split):
    spec = self.spec
    if spec.label_column not in row:
      if split in ("train", "dev"):
        raise DataError(path, line, f"no column {spec.label_column!r} (--label-column); the file's columns are "
                        f"{', '.join(repr(c) for c in row)}")
      return self.dummy_label()
    value = row[spec.label_column]
    if _missing(value):
      if split == "train" or split == "dev":
        raise DataError(path, line, f"no label in column {spec.label_column!r}; fill it in or drop the row")
      return self.dummy_label()
    return self.parse_user_label(path, line, value, split)

  def parse_user_label(self, path, line, value, split):
    label = _label_value(self.spec, value)
    if label not in self.label_list:
      raise DataError(path, line, f"label {label!r} never occurs in the training file (its labels: "
                      f"{', '.join(repr(v) for v in self.label_list[:20])}); fix the label or add training rows "
                      "with it")
    return label

  def test_outputs(self, split, outs):
    return PredictionFiles({int(e): v for e, v in zip(outs["eid"], outs["logits"])}, "pkl")


class UserRegression(UserClassification, RegressionTask):
  """One text (or a pair) -> a number; the head learns the label mapped from the training range to [0, 1]
  (``RegressionTask``'s features and head)."""

  def __init__(self, config, tokenizer, spec):
    super().__init__(config, tokenizer, spec)
    self.label_list = []

  def dummy_label(self):
    return self.spec.min_value

  def parse_user_label(self, path, line, value, split):
    try:
      label = float(value)
    except (TypeError, ValueError):
      raise DataError(path, line, f"label {value!r} is not a number (the task is a regression)") from None
    if not math.isfinite(label):
      raise DataError(path, line, f"label {value!r} is not a finite number")
    return label

  def split_examples(self, split: str) -> list:
    examples = super().split_examples(split)
    distinct = len({e.label for e in examples})
    if split in ("dev", "validation") and distinct < 2:
      where = self.split_path("dev") if split == "dev" else f"the validation split of {self.split_path('train')}"
      raise DataError(where, None, f"{len(examples)} row(s), {distinct} distinct label(s): "
                      "scoring a regression (Pearson and Spearman correlation) needs two different labels; add "
                      "rows" + (" or raise validation_size" if split == "validation" else ""))
    return examples

  def to_unit(self, value: float) -> float:
    return (float(value) - self.spec.min_value) / (self.spec.max_value - self.spec.min_value)

  def from_unit(self, value: float) -> float:
    return float(value) * (self.spec.max_value - self.spec.min_value) + self.spec.min_value

  def label_features(self, example):
    return {f"{self.name}_targets": self.to_unit(example.label)}

  def get_scorer(self, split="dev", output_dir=None):
    return RegressionScorer(scale=self.spec.max_value - self.spec.min_value)

  def test_outputs(self, split, outs):
    return PredictionFiles({int(e): self.from_unit(v) for e, v in zip(outs["eid"], outs["predictions"])}, "pkl")


class UserMultiLabel(UserClassification):
  """One text (or a pair) -> any subset of the labels (a sigmoid per label)."""
  head_type = "multilabel"

  def dummy_label(self):
    return ()

  def parse_user_label(self, path, line, value, split):
    values = [_label_value(self.spec, v) for v in _split_labels(path, line, value, self.spec.label_separator)]
    for label in values:
      if label not in self.label_list:
        raise DataError(path, line, f"label {label!r} never occurs in the training file (its labels: "
                        f"{', '.join(repr(v) for v in self.label_list[:20])}); fix the label or add training "
                        "rows with it")
    return tuple(sorted(set(values), key=self.label_list.index))

  def label_features(self, example):
    targets = [0.0] * len(self.label_list)
    for label in example.label:
      targets[self.label_list.index(label)] = 1.0
    return {f"{self.name}_label_ids": targets}

  def feature_specs(self):
    return common_feature_specs(self.config.max_seq_length) + [
        FeatureSpec(f"{self.name}_eid", ()),
        FeatureSpec(f"{self.name}_label_ids", (len(self.label_list),), np.float32)]

  def get_scorer(self, split="dev", output_dir=None):
    return MultiLabelScorer()

  def test_outputs(self, split, outs):
    return PredictionFiles({int(e): v for e, v in zip(outs["eid"], outs["logits"])}, "pkl")


class UserTagging(UserFilesMixin, Task):
  """Words -> one tag each, from a CoNLL file or JSON Lines token and tag lists. The tags are the user's own
  (no conversion); scored by word accuracy, and by span F1 when every tag is ``O`` or ``B-``/``I-``/``E-``/
  ``S-`` prefixed."""
  head_type = "tagging"

  def __init__(self, config, tokenizer, spec: TaskSpec):
    self.name = spec.name
    super().__init__(config, tokenizer)
    self.spec = spec
    self.label_mapping = {t: i for i, t in enumerate(spec.labels)}
    self.ids = {}

  def read_examples(self, split):
    path = self.split_path(split)
    labelled = split in ("train", "dev")
    examples, ids = [], []
    for eid, (line, words, tags) in enumerate(tagged_sentences(self.spec, path, labelled=labelled)):
      if tags is None:
        labels = [0] * len(words)
      else:
        unknown = [t for t in tags if t not in self.label_mapping]
        if unknown and labelled:
          raise DataError(path, line, f"tag {unknown[0]!r} never occurs in the training file; fix the tag or add "
                          "training sentences with it")
        labels = [self.label_mapping.get(t, 0) for t in tags]
      examples.append(TaggingExample(eid, self.name, words, tags or (), labels))
      ids.append(line)
    self.ids[split] = ids
    return examples

  def featurize(self, examples, is_training):
    features = featurize_tagging(self, examples, cased=not self.config.do_lower_case, fill=True)
    kept = [int(sum(f[f"{self.name}_labels_mask"])) for f in features]
    cut = [len(e.words) - k for e, k in zip(examples, kept) if k < len(e.words)]
    if cut:
      log.warning("%s: %d of %d words (in %d of %d sentences) do not fit in max_seq_length %d word pieces: they "
                  "get no tag (scored as wrong); raise max_seq_length to tag them", self.name, sum(cut),
                  sum(len(e.words) for e in examples), len(cut), len(examples), self.config.max_seq_length)
    return features

  def feature_specs(self):
    return tagging_feature_specs(self)

  @property
  def num_outputs(self):
    return len(self.label_mapping)

  def get_scorer(self, split="dev", output_dir=None):
    return TaggingScorer(self.label_mapping, {e.eid: e.labels for e in self.split_examples(split)})

  def test_output_splits(self):
    return ()


class UserQA(UserFilesMixin, SQuADTask):
  """Extractive QA on the user's own SQuAD-layout files; SQuAD 2.0 scoring when the training file has
  unanswerable questions."""

  def __init__(self, config, tokenizer, spec: TaskSpec):
    self.name = spec.name
    super().__init__(config, tokenizer)
    self.spec, self.v2 = spec, spec.squad_v2

  def get_examples(self, split):
    return SQuADTask.get_examples(self, split)  # QATask keeps each split's examples, gold and features

  def add_file(self, split, path):
    super().add_file(split, path)
    for cache in (self._examples, self._gold, self._eval_features):
      cache.pop(split, None)

  def test_output_splits(self):
    return ("test",) if getattr(self.config, "test_file", None) else ()


TASK_CLASSES = {"classification": UserClassification, "regression": UserRegression, "multilabel": UserMultiLabel,
                "tagging": UserTagging, "qa": UserQA}


def make_task(config, tokenizer, spec: TaskSpec) -> Task:
  """The task object for a completed ``spec``."""
  return TASK_CLASSES[spec.type](config, tokenizer, spec)


def spec_from_config(config) -> TaskSpec:
  """The user task the config's ``train_file`` and column fields describe (not yet inferred)."""
  names = list(config.task_names or [])
  if len(names) != 1:
    raise HParamError("a task from your own files (--train-file) trains alone; give one --task-name")
  return TaskSpec(name=names[0], type=config.task_type, text_column=config.text_column,
                  text_pair_column=config.text_pair_column, label_column=config.label_column,
                  tokens_column=config.tokens_column, tags_column=config.tags_column, id_column=config.id_column,
                  label_separator=config.label_separator)
