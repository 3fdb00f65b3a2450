"""GLUE tasks: the reference's readers (column indexes, headers, labels), featurization and scorers.

Input: ``[CLS] a [SEP] (b [SEP])``, segment 0 for the first sentence and 1 for the second; pairs are
truncated by popping from the longer side. MRPC and STS-B add a swapped copy of the training set
(``double_unordered``). STS-B is a regression on label / 5.
"""

import typing

import numpy as np

from electra_tf.finetuning.base import (DataError, FeatureSpec, PredictionFiles, Task, common_feature_specs, log,
                                        pad, read_tsv, truncate_seq_pair)
from electra_tf.finetuning.scorers.classification import AccuracyScorer, MCCScorer, RegressionScorer


# GLUE server file stems of the test splits that are not the task's own (``GlueTask.glue_name``).
GLUE_SUBMISSION_NAMES = {("mnli", "test_matched"): "MNLI-m", ("mnli", "test_mismatched"): "MNLI-mm",
                         ("mnli", "diagnostic"): "AX"}


class InputExample(typing.NamedTuple):
  eid: int
  task_name: str
  text_a: str
  text_b: typing.Optional[str]
  label: typing.Union[str, float]


class Columns(typing.NamedTuple):
  """Where a split's fields are: column indexes (negative = from the end), label column (None = test
  split, dummy label) and whether the first line is a header."""
  text_a: int
  text_b: typing.Optional[int]
  label: typing.Optional[int]
  header: bool


class GlueTask(Task):
  """A single-output GLUE task read from ``<raw_data_dir>/<name>/<split>.tsv``."""

  label_list: typing.Sequence[str] = ("0", "1")
  file_names: typing.Dict[str, str] = {}
  glue_name = ""  # the GLUE server's file stem (SST-2, MNLI-m, ...)
  test_prediction_key = "logits"  # the head output kept per example in test_predictions/*.pkl

  @classmethod
  def columns(cls, split: str) -> Columns:
    """The split's layout; it depends on the split's name only (``splits`` reads it from the class)."""
    raise NotImplementedError

  @classmethod
  def is_test(cls, split: str) -> bool:
    return "test" in split or "diagnostic" in split

  @classmethod
  def file_stem(cls, split: str) -> str:
    """The split's file name without ``.tsv`` (MNLI's dev is ``dev_matched``)."""
    return cls.file_names.get(split, split)

  def split_path(self, split: str) -> str:
    return f"{self.data_dir}/{self.file_stem(split)}.tsv"

  def get_examples(self, split: str, doubled: bool = True) -> typing.List[InputExample]:
    if self.source is not None:
      rows, path = self.source.rows(self, split), f"tfds:{self.name}/{split}"
    else:
      path = self.split_path(split)
      rows = read_tsv(path)
    examples = self.load_rows(rows, split, path)
    if doubled and split == "train":
      examples = self.after_carving(examples, len(examples))
    return examples

  double_unordered = False

  def training_examples_for_carving(self):
    return self.get_examples("train", doubled=False)

  def after_carving(self, rest, eid_offset=None):
    """MRPC and STS-B also train on each pair swapped (``double_unordered``)."""
    if not (self.double_unordered and self.config.double_unordered):
      return rest
    offset = (max((e.eid for e in rest), default=-1) + 1) if eid_offset is None else eid_offset
    return rest + [e._replace(eid=e.eid + offset, text_a=e.text_b, text_b=e.text_a) for e in rest]

  def load_rows(self, rows, split, path, eid_offset=0, swap=False) -> typing.List[InputExample]:
    """The reference's ``_load_glue``, except a malformed row raises (file and line) instead of being
    logged and skipped; ``skip_bad_rows`` restores skipping, with a warning per row."""
    cols = self.columns(split)
    examples, expected = [], None
    for i, (line, row) in enumerate(rows):
      if i == 0:
        expected = len(row)
        if cols.header:
          continue
      eid = i - (1 if cols.header else 0) + eid_offset
      try:
        if len(row) != expected:
          raise ValueError(f"{len(row)} columns where the {'header' if cols.header else 'first row'} "
                           f"has {expected}")
        needed = [c for c in (cols.text_a, cols.text_b, cols.label) if c is not None]
        if any(c >= len(row) or -c > len(row) for c in needed):
          raise ValueError(f"{len(row)} columns, but the {self.name} reader needs column(s) {needed}")
        text_a = row[cols.text_a]
        text_b = row[cols.text_b] if cols.text_b is not None else None
        label = self.dummy_label() if cols.label is None else self.parse_label(row[cols.label])
      except ValueError as e:
        if getattr(self.config, "skip_bad_rows", False):
          log.warning("%s:%s: skipped: %s", path, line, e)
          continue
        raise DataError(path, line, f"{self.name} {split}: {e}") from None
      if swap:
        text_a, text_b = text_b, text_a
      examples.append(InputExample(eid, self.name, text_a, text_b, label))
    if not examples:
      raise DataError(path, None, f"no {self.name} examples in split {split!r}")
    return examples

  def dummy_label(self):
    return self.label_list[0]

  def parse_label(self, value: str):
    if value not in self.label_list:
      raise ValueError(f"unknown label {value!r} (expected one of {', '.join(self.label_list)})")
    return value

  # ---- featurization ----------------------------------------------------------------------------------

  def _ids(self, texts: typing.List[str]) -> typing.List[list]:
    """Token ids per text, through the tokenizer's batched path where it has one (same ids)."""
    if hasattr(self.tokenizer, "batch_ids") and texts:
      out = []
      for start in range(0, len(texts), 8192):
        flat, splits = self.tokenizer.batch_ids(texts[start:start + 8192])
        out.extend(flat[splits[j]:splits[j + 1]].tolist() for j in range(len(splits) - 1))
      return out
    return [self.tokenizer.convert_tokens_to_ids(self.tokenizer.tokenize(t)) for t in texts]

  def featurize(self, examples, is_training):
    max_len = self.config.max_seq_length
    cls_id, sep_id = self.tokenizer.vocab["[CLS]"], self.tokenizer.vocab["[SEP]"]
    ids_a = self._ids([e.text_a for e in examples])
    pair_idx = [i for i, e in enumerate(examples) if e.text_b is not None]
    ids_b = dict(zip(pair_idx, self._ids([examples[i].text_b for i in pair_idx])))
    features = []
    for i, example in enumerate(examples):
      a, b = list(ids_a[i]), list(ids_b.get(i, []))
      if i in ids_b:
        truncate_seq_pair(a, b, max_len - 3)
      else:
        a = a[:max_len - 2]
      input_ids = [cls_id] + a + [sep_id]
      segment_ids = [0] * len(input_ids)
      if i in ids_b:
        input_ids += b + [sep_id]
        segment_ids += [1] * (len(b) + 1)
      feature = {"input_ids": pad(input_ids, max_len), "input_mask": pad([1] * len(input_ids), max_len),
                 "segment_ids": pad(segment_ids, max_len), "task_id": self.task_index,
                 f"{self.name}_eid": example.eid}
      feature.update(self.label_features(example))
      features.append(feature)
    return features

  def label_features(self, example) -> dict:
    return {f"{self.name}_label_ids": self.label_list.index(example.label)}

  def feature_specs(self):
    return common_feature_specs(self.config.max_seq_length) + [
        FeatureSpec(f"{self.name}_eid", ()), FeatureSpec(f"{self.name}_label_ids", ())]

  @property
  def num_outputs(self) -> int:
    return len(self.label_list)

  def get_scorer(self, split="dev", output_dir=None):
    return AccuracyScorer()

  def glue_label(self, prediction) -> str:
    """A test prediction in the GLUE server's vocabulary."""
    return self.label_list[int(prediction)]

  def test_output_splits(self):
    return self.test_splits

  def test_outputs(self, split, outs):
    """eid -> ``test_prediction_key`` output (pickled), and the GLUE server's labels."""
    predictions = {int(e): v for e, v in zip(outs["eid"], outs[self.test_prediction_key])}
    name = GLUE_SUBMISSION_NAMES.get((self.name, split), self.glue_name)
    return PredictionFiles(predictions, "pkl",
                           (name, outs["eid"], [self.glue_label(p) for p in outs["predictions"]]))


class RegressionTask(GlueTask):
  head_type = "regression"
  min_value, max_value = 0.0, 5.0
  test_prediction_key = "predictions"  # the predicted (normalised) score

  def dummy_label(self):
    return 0.0

  def parse_label(self, value):
    try:
      label = float(value)
    except ValueError:
      raise ValueError(f"label {value!r} is not a number") from None
    if not self.min_value <= label <= self.max_value:
      raise ValueError(f"label {label} outside [{self.min_value}, {self.max_value}]")
    return label

  def label_features(self, example):
    # The reference's normalisation: (label - min) / max, i.e. label / 5 for STS-B.
    return {f"{self.name}_targets": (float(example.label) - self.min_value) / self.max_value}

  def feature_specs(self):
    return common_feature_specs(self.config.max_seq_length) + [
        FeatureSpec(f"{self.name}_eid", ()), FeatureSpec(f"{self.name}_targets", (), np.float32)]

  @property
  def num_outputs(self):
    return 1

  def get_scorer(self, split="dev", output_dir=None):
    return RegressionScorer()

  def glue_label(self, prediction):
    return f"{min(max(float(prediction) * self.max_value, self.min_value), self.max_value):.3f}"


class CoLA(GlueTask):
  name, glue_name = "cola", "CoLA"

  @classmethod
  def columns(cls, split):  # train/dev have no header: source, label, original label, sentence
    return Columns(1, None, None, True) if cls.is_test(split) else Columns(3, None, 1, False)

  def get_scorer(self, split="dev", output_dir=None):
    return MCCScorer()


class SST(GlueTask):
  name, glue_name = "sst", "SST-2"

  @classmethod
  def columns(cls, split):
    return Columns(1, None, None, True) if cls.is_test(split) else Columns(0, None, 1, True)


class MRPC(GlueTask):
  name, glue_name = "mrpc", "MRPC"
  double_unordered = True

  @classmethod
  def columns(cls, split):  # Quality, #1 ID, #2 ID, #1 String, #2 String (test: Quality is the index)
    return Columns(3, 4, None if cls.is_test(split) else 0, True)


class QQP(GlueTask):
  name, glue_name = "qqp", "QQP"

  @classmethod
  def columns(cls, split):
    return Columns(1, 2, None, True) if cls.is_test(split) else Columns(3, 4, 5, True)


class MNLI(GlueTask):
  name, glue_name = "mnli", "MNLI-m"
  label_list = ("contradiction", "entailment", "neutral")
  file_names = {"dev": "dev_matched"}
  test_splits = ("test_matched", "test_mismatched", "diagnostic")

  @classmethod
  def columns(cls, split):
    if split == "diagnostic":
      return Columns(1, 2, None, True)
    return Columns(8, 9, None if cls.is_test(split) else -1, True)


class QNLI(GlueTask):
  name, glue_name = "qnli", "QNLI"
  label_list = ("entailment", "not_entailment")

  @classmethod
  def columns(cls, split):
    return Columns(1, 2, None if cls.is_test(split) else 3, True)


class RTE(QNLI):
  name, glue_name = "rte", "RTE"


class STS(RegressionTask):
  name, glue_name = "sts", "STS-B"
  double_unordered = True

  @classmethod
  def columns(cls, split):
    return Columns(-2, -1, None, True) if cls.is_test(split) else Columns(-3, -2, -1, True)
