"""Predictions of a model fine-tuned on a task from the user's files, for new rows in the same formats.

``Predictor(model_dir)`` reads ``task.json`` beside the fine-tuned weights (the task's columns and labels, and
the fine-tuning config that featurized its data), rebuilds the network, loads every weight and runs it as the
fine-tuning run evaluated dev: the same features, batch size and prediction step, so predicting on the dev file
scores exactly what the run reported. ``SavedModelPredictor`` runs an exported SavedModel's signature instead.

One output row per input row, in input order, with the input's id column (or its line number):

- classification: ``label`` and ``probabilities`` {label: p};
- regression: ``value``;
- multi-label: ``labels`` (every label whose probability is above 0.5) and ``probabilities``;
- tagging: ``tokens`` and ``tags`` (one per input word; ``null`` for words past ``max_seq_length``);
- QA: ``id``, ``answer`` and its character span ``start`` / ``end`` in the context (``""`` and -1 for no answer).

Rows are written as JSON Lines, or CSV / TSV by the output's extension, through a temporary file renamed at the
end: an interrupted run leaves no half-written output.
"""

import contextlib
import csv
import io
import json
import os
import sys
import tempfile
import typing

import numpy as np
import tensorflow as tf
import tensorflow_text  # pylint: disable=unused-import  (the ops of an exported SavedModel's signature)

from electra_tf import fileio, runtime
from electra_tf.configs import FinetuningConfig
from electra_tf.convert import load_pretrained_weights
from electra_tf.errors import DataError
from electra_tf.finetuning import user_files, user_task
from electra_tf.finetuning.base import log, stack_features
from electra_tf.finetuning.qa import answer_offsets
from electra_tf.finetuning.trainer import Trainer
from electra_tf.runtime.console import progress_bar
from electra_tf.tokenization import load_tokenizer

PREDICT_SPLIT = "predict"
CHUNK_BATCHES = 64  # rows featurized and run at once: CHUNK_BATCHES x the evaluation batch


def _softmax(logits: np.ndarray) -> np.ndarray:
  shifted = np.exp(logits - logits.max(-1, keepdims=True))
  return shifted / shifted.sum(-1, keepdims=True)


def _sigmoid(logits: np.ndarray) -> np.ndarray:
  return 1.0 / (1.0 + np.exp(-logits))


def _plain(value):
  return value.item() if isinstance(value, np.generic) else value


class Predictor:
  """A fine-tuned model directory (``finetuning_models/<task>_model_<trial>``) ready to predict."""

  def __init__(self, model_dir: str, batch_size: typing.Optional[int] = None):
    self.spec, settings = user_task.read_spec(model_dir)
    vocab = os.path.join(model_dir, "vocab.txt")
    overrides = {k: v for k, v in settings.items() if k not in ("model_name", "data_dir", "raw_data_dir")}
    overrides.update(init_checkpoint=model_dir, num_trials=1, evaluate_on="dev", keep_best_model=False,
                     early_stopping_patience=0, strategy="auto",
                     vocab_file=vocab if fileio.isfile(vocab) else settings["vocab_file"])
    if batch_size:
      overrides["eval_batch_size"] = batch_size
    self.config = FinetuningConfig.create(settings["model_name"], settings["data_dir"], **overrides)
    self.tokenizer = load_tokenizer(self.config.vocab_file, self.config.do_lower_case)
    self.task = user_task.make_task(self.config, self.tokenizer, self.spec)
    self.trainer = Trainer(self.config, [self.task], runtime.select_strategy(self.config), seed=0)
    load_pretrained_weights(model_dir, self.trainer.model, require_all=True)
    self.scores = None

  @property
  def batch_size(self) -> int:
    return self.config.eval_batch_size

  def _run(self, examples: list, features: typing.Optional[list] = None) -> dict:
    features = features if features is not None else self.task.featurize(examples, False)
    specs = self.task.feature_specs()
    arrays = stack_features(features, specs, 1, self.batch_size)
    return self.trainer.predict(arrays, self.batch_size)[self.task.name]

  def predict_file(self, path: str, progress: bool = False) -> typing.Iterator[dict]:
    """Yields one prediction per row of ``path``; afterwards ``self.scores`` holds the task's metrics when the
    file has labels (None otherwise)."""
    self.task.add_file(PREDICT_SPLIT, path)
    if self.spec.type == "qa":
      yield from self._predict_qa(path)
      return
    examples = self.task.get_examples(PREDICT_SPLIT)
    ids = self.task.ids[PREDICT_SPLIT]
    labelled = self._labelled(path)
    scorer = self.task.get_scorer(PREDICT_SPLIT) if labelled else None
    chunk = CHUNK_BATCHES * self.batch_size
    bar = progress_bar(progress and len(examples) > chunk, len(examples), desc="predicting", unit="row")
    for start in range(0, len(examples), chunk):
      part = examples[start:start + chunk]
      outs = self._run(part)
      if scorer is not None:
        scorer.update(outs)
      for i, example in enumerate(part):
        yield self._row(ids[start + i], example, {k: v[i] for k, v in outs.items()})
      if bar is not None:
        bar.update(len(part))
    if bar is not None:
      bar.close()
    self.scores = dict(scorer.get_results()) if scorer is not None else None

  def _labelled(self, path: str) -> bool:
    if self.spec.type == "tagging":
      return all(e.tags for e in self.task.get_examples(PREDICT_SPLIT))
    return self.spec.label_column in user_files.columns(path)

  def _row(self, row_id, example, out: dict) -> dict:
    key = "line" if self.spec.type == "tagging" else (self.spec.id_column or "line")
    row = {key: _plain(row_id)}
    kind = self.spec.type
    if kind == "classification":
      probabilities = _softmax(np.asarray(out["logits"], np.float64))
      row["label"] = self.task.label_list[int(out["predictions"])]
      row["probabilities"] = {str(label): float(p) for label, p in zip(self.task.label_list, probabilities)}
    elif kind == "regression":
      row["value"] = self.task.from_unit(float(out["predictions"]))
    elif kind == "multilabel":
      probabilities = _sigmoid(np.asarray(out["logits"], np.float64))
      row["labels"] = [label for label, on in zip(self.task.label_list, out["predictions"]) if on]
      row["probabilities"] = {str(label): float(p) for label, p in zip(self.task.label_list, probabilities)}
    elif kind == "tagging":
      names = self.spec.labels
      n = int(round(float(np.sum(out["labels_mask"]))))
      tags = [names[int(t)] for t in np.asarray(out["predictions"])[:n]]
      row["tokens"] = list(example.words)
      row["tags"] = tags + [None] * (len(example.words) - n)
    return row

  def _predict_qa(self, path: str) -> typing.Iterator[dict]:
    task = self.task
    examples = task.get_examples(PREDICT_SPLIT)
    features = task.eval_features(PREDICT_SPLIT)
    scorer = task.get_scorer(PREDICT_SPLIT)
    scorer.update(self._run(examples, features))
    answers, null_odds = scorer.decode()
    contexts = {}
    for article in task.gold(PREDICT_SPLIT):
      for paragraph in article.get("paragraphs", []):
        for qa in paragraph.get("qas", []):
          contexts[qa["id"]] = (paragraph["context"], bool(qa.get("answers")))
    labelled = all(has for _, has in contexts.values())
    self.scores = dict(scorer.get_results()) if labelled else None
    for qid, answer in answers.items():
      if null_odds is not None and null_odds[qid] > task.config.qa_na_threshold:
        answer = ""  # SQuAD 2.0: no answer, as the official evaluation reads the null odds
      start = end = -1
      if answer and qid in scorer.spans:
        start, end = answer_offsets(contexts[qid][0], *scorer.spans[qid])
      yield {"id": qid, "answer": answer if qid in scorer.spans else "", "start": start, "end": end}


class SavedModelPredictor:
  """An exported SavedModel of a task from the user's files (its ``assets/electra_task.json`` says how to read
  the input): the same rows as ``Predictor``, from the serving signature."""

  def __init__(self, saved_model_dir: str, batch_size: int = 32):
    path = os.path.join(saved_model_dir, "assets", user_task.SAVED_MODEL_SPEC)
    if not fileio.isfile(path):
      raise DataError(saved_model_dir, None, f"no assets/{user_task.SAVED_MODEL_SPEC}: export a model fine-tuned "
                      "on a task from your own files (electra-convert export-savedmodel)")
    with fileio.open_file(path) as f:
      self.spec = user_task.TaskSpec.from_json(json.load(f)["task"])
    if self.spec.type == "qa":
      raise DataError(saved_model_dir, None, "a QA SavedModel answers in word pieces, not spans of the context; "
                      "predict QA from the model directory (--model-dir)")
    self.serve = tf.saved_model.load(saved_model_dir).signatures["serving_default"]
    self.batch_size = batch_size
    self.scores = None

  def _inputs(self, part) -> dict:
    if self.spec.type == "tagging":
      width = max(len(words) for _, words, _ in part)
      return {"words": tf.constant([list(words) + [""] * (width - len(words)) for _, words, _ in part])}
    inputs = {"text": tf.constant([text for _, _, (text, _) in part])}
    if self.spec.text_pair_column:
      inputs["text_pair"] = tf.constant([pair for _, _, (_, pair) in part])
    return inputs

  def predict_file(self, path: str, progress: bool = False) -> typing.Iterator[dict]:
    spec = self.spec
    if spec.type == "tagging":
      rows = list(user_task.tagged_sentences(spec, path, labelled=False))
    else:  # (line, row, its texts): every row checked before the first prediction
      rows = [(line, row, user_task.row_texts(spec, path, line, row)) for line, row in user_files.rows(path)]
    labels = [str(v) for v in spec.labels]
    for start in range(0, len(rows), self.batch_size):
      part = rows[start:start + self.batch_size]
      out = {k: v.numpy() for k, v in self.serve(**self._inputs(part)).items()}
      for i, item in enumerate(part):
        if spec.type == "tagging" or not spec.id_column:
          result = {"line": item[0]}
        else:
          result = {spec.id_column: item[1].get(spec.id_column)}
        if spec.type == "classification":
          result["label"] = spec.labels[int(out["label_id"][i])]
          result["probabilities"] = dict(zip(labels, map(float, out["probabilities"][i])))
        elif spec.type == "regression":
          result["value"] = float(out["score"][i])
        elif spec.type == "multilabel":
          result["labels"] = [v for v, on in zip(spec.labels, out["predicted"][i]) if on]
          result["probabilities"] = dict(zip(labels, map(float, out["probabilities"][i])))
        else:
          words = item[1]
          tags = [t.decode("utf-8") for t in out["tags"][i][:len(words)]]
          result["tokens"] = list(words)
          result["tags"] = [t if kept else None for t, kept in zip(tags, out["kept"][i][:len(words)])]
        yield result


# ---- writing ----------------------------------------------------------------------------------------------

def _flat(row: dict, separator: str = " ") -> dict:
  """A prediction as CSV cells: probabilities as ``p(label)`` columns, lists joined."""
  flat = {}
  for key, value in row.items():
    if isinstance(value, dict):
      flat.update({f"p({k})": v for k, v in value.items()})
    elif isinstance(value, list):
      flat[key] = separator.join("" if v is None else str(v) for v in value)
    else:
      flat[key] = value
  return flat


# An output's extension -> its format (no extension, as /dev/null: JSON Lines).
OUTPUT_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", "": "jsonl"}


def write_predictions(rows: typing.Iterable[dict], output: typing.Optional[str]) -> int:
  """Writes ``rows`` to ``output`` (JSON Lines; CSV / TSV by extension; None or ``-``: standard output), whole
  or not at all (``runtime.atomic_output``). Returns the row count."""
  to_stdout = not output or output == "-"
  fmt = "jsonl" if to_stdout else OUTPUT_FORMATS.get(os.path.splitext(output)[1].lower())
  if fmt is None:
    raise DataError(output, None, f"unknown output format {os.path.splitext(output)[1]!r}; name the file .jsonl, "
                    ".csv or .tsv")
  if not to_stdout and not fileio.is_remote(output) and not os.path.isdir(os.path.dirname(os.path.abspath(output))):
    raise DataError(output, None, "the output's directory does not exist; create it first")
  buffer = io.StringIO() if to_stdout else None
  with contextlib.nullcontext(buffer) if to_stdout else runtime.atomic_output(output, through_links=True) as stream:
    n, writer = 0, None
    for row in rows:
      if fmt == "jsonl":
        stream.write(json.dumps(row, ensure_ascii=False) + "\n")
      else:
        flat = _flat(row)
        if writer is None:
          writer = csv.DictWriter(stream, list(flat), delimiter="," if fmt == "csv" else "\t", lineterminator="\n")
          writer.writeheader()
        writer.writerow(flat)
      n += 1
  if to_stdout:
    sys.stdout.write(buffer.getvalue())
  return n


def stdin_to_file(fmt: str) -> str:
  """Standard input saved to a temporary file of format ``fmt`` (the readers take paths)."""
  ext = {"csv": ".csv", "tsv": ".tsv", "jsonl": ".jsonl", "conll": ".txt", "json": ".json"}[fmt]
  handle, path = tempfile.mkstemp(suffix=ext, prefix="electra-predict-")
  with os.fdopen(handle, "wb") as f:
    f.write(sys.stdin.buffer.read())
  log.info("read standard input as %s", fmt)
  return path
