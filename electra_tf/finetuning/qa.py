"""Extractive QA tasks: SQuAD 1.1 / 2.0 and the MRQA tasks, read and featurized as the reference (BERT).

Featurization: questions cut to ``max_query_length`` pieces; documents split into whitespace words, each
word word-pieced; windows of ``max_seq_length - |q| - 3`` pieces every ``doc_stride``; input
``[CLS] q [SEP] span [SEP]`` (segment 1 from the span on). A training window that does not contain the
answer, and every impossible question, gets start = end = 0. Feature id = 1000 * example id + window.
Evaluation features also keep the tokens and the token -> word / max-context maps that decoding the
answers needs; decoding and the official metrics are in ``scorers.qa``.
"""

import json
import os
import typing

from electra_tf import fileio
from electra_tf.finetuning.base import (DataError, FeatureSpec, PredictionFiles, Task, common_feature_specs, log,
                                        pad)
from electra_tf.finetuning.scorers.qa import MRQAScorer, SQuADScorer


class QAExample(typing.NamedTuple):
  eid: int
  task_name: str
  qas_id: typing.Optional[str]   # SQuAD "id"
  qid: typing.Optional[str]      # MRQA "qid"
  question_text: str
  doc_tokens: list
  orig_answer_text: typing.Optional[str] = None
  start_position: typing.Optional[int] = None   # word index (training only)
  end_position: typing.Optional[int] = None
  is_impossible: bool = False

  @property
  def example_id(self):
    return self.qas_id if self.qas_id is not None else self.qid


def is_whitespace(c: str) -> bool:
  return c in " \t\r\n" or ord(c) == 0x202F


def split_words(text: str):
  """Whitespace words and, per character, the index of its word (the reference's char_to_word_offset)."""
  words, char_to_word, prev_ws = [], [], True
  for c in text:
    if is_whitespace(c):
      prev_ws = True
    else:
      if prev_ws:
        words.append(c)
      else:
        words[-1] += c
      prev_ws = False
    char_to_word.append(len(words) - 1)
  return words, char_to_word


def answer_offsets(context: str, first_word: int, start: int, end: int) -> typing.Tuple[int, int]:
  """Character offsets (end exclusive) in ``context`` of the span at ``start:end`` of the context's words from
  ``first_word`` on joined by single spaces (what answer decoding reads): the same characters, with the
  context's own whitespace between the words."""
  words, char_to_word = split_words(context)
  word_start = [i for i, w in enumerate(char_to_word) if w >= 0 and (i == 0 or char_to_word[i - 1] != w)]

  def at(position):  # a character of a word, never a joining space
    word = first_word
    while position >= len(words[word]):
      position -= len(words[word]) + 1
      word += 1
    return word_start[word] + position
  return at(start), at(end - 1) + 1


def add_paragraph_examples(task_name, examples, paragraph, is_train, v2, where=""):
  """Appends one QAExample per question of ``paragraph`` ({"context", "qas"}); returns the number of
  training answers that could not be recovered from the text (skipped, as the reference does)."""
  try:
    words, char_to_word = split_words(paragraph["context"])
    qas = paragraph["qas"]
  except (KeyError, TypeError) as e:
    raise DataError(where, None, f"paragraph without 'context'/'qas' ({e})") from None
  failures = 0
  for qa in qas:
    if "question" not in qa:
      raise DataError(where, None, f"question without text: {qa}")
    start = end = None
    answer_text = None
    impossible = False
    if is_train:
      impossible = bool(qa.get("is_impossible", False)) if v2 else False
      if not impossible:
        try:
          if "detected_answers" in qa:  # MRQA
            answer = qa["detected_answers"][0]
            offset = answer["char_spans"][0][0]
          else:
            answer = qa["answers"][0]
            offset = answer["answer_start"]
          answer_text = answer["text"]
        except (KeyError, IndexError, TypeError):
          raise DataError(where, None, f"training question {qa.get('id', qa.get('qid'))} has no answer "
                          "(SQuAD 2.0 marks those is_impossible)") from None
        if offset < 0 or offset + len(answer_text) - 1 >= len(char_to_word):
          failures += 1
          continue
        start, end = char_to_word[offset], char_to_word[offset + len(answer_text) - 1]
        actual = " ".join(words[start:end + 1]).lower()
        if actual.find(" ".join(answer_text.split()).lower()) == -1:
          failures += 1  # the reference skips answers it cannot find in the text
          continue
      else:
        start, end, answer_text = -1, -1, ""
    examples.append(QAExample(len(examples), task_name, qa.get("id"), qa.get("qid"), qa["question"], words,
                              answer_text, start, end, impossible))
  return failures


def _improve_answer_span(doc_tokens, start, end, tokenizer, answer_text):
  """The tightest piece span whose text equals the tokenized answer (e.g. "1895" inside "(1895-1943).")."""
  target = " ".join(tokenizer.tokenize(answer_text))
  for new_start in range(start, end + 1):
    for new_end in range(end, new_start - 1, -1):
      if " ".join(doc_tokens[new_start:new_end + 1]) == target:
        return new_start, new_end
  return start, end


def _is_max_context(doc_spans, span_index, position):
  """True if window ``span_index`` gives ``position`` the most context (min of left/right, + 0.01 len)."""
  best_score, best = None, None
  for i, (start, length) in enumerate(doc_spans):
    end = start + length - 1
    if start <= position <= end:
      score = min(position - start, end - position) + 0.01 * length
      if best_score is None or score > best_score:
        best_score, best = score, i
  return best == span_index


class QATask(Task):
  """A SQuAD-layout task: examples, gold answers and evaluation features cached per split; subclasses
  read their files (``_read``) and pick the scorer that runs their official evaluation."""

  head_type = "qa"
  v2 = False
  test_splits = ("test",)
  file_ext = ".json"

  def __init__(self, config, tokenizer):
    super().__init__(config, tokenizer)
    self._examples, self._gold, self._eval_features = {}, {}, {}

  def split_path(self, split):
    return os.path.join(self.data_dir, split + self.file_ext)

  def get_examples(self, split):
    if split not in self._examples:
      examples, failures = self._read(split)
      if failures:
        log.warning("%s %s: %d training answers not found in their context were skipped (as the "
                    "reference does)", self.name, split, failures)
      if not examples:
        raise DataError(self.split_path(split), None, f"no {self.name} questions in split {split!r}")
      self._examples[split] = examples
    return self._examples[split]

  def gold(self, split):
    self.get_examples(split)
    return self._gold[split]

  def featurize(self, examples, is_training):
    cfg, tok = self.config, self.tokenizer
    features = []
    for example in examples:
      query = tok.tokenize(example.question_text)[:cfg.max_query_length]
      tok_to_orig, orig_to_tok, doc = [], [], []
      for i, word in enumerate(example.doc_tokens):
        orig_to_tok.append(len(doc))
        for piece in tok.tokenize(word):
          tok_to_orig.append(i)
          doc.append(piece)
      tok_start = tok_end = None
      if is_training and not example.is_impossible:
        tok_start = orig_to_tok[example.start_position]
        tok_end = (orig_to_tok[example.end_position + 1] - 1
                   if example.end_position < len(example.doc_tokens) - 1 else len(doc) - 1)
        tok_start, tok_end = _improve_answer_span(doc, tok_start, tok_end, tok, example.orig_answer_text)
      max_doc = cfg.max_seq_length - len(query) - 3
      if max_doc < 1:
        raise DataError(self.name, None, f"max_seq_length {cfg.max_seq_length} leaves no room for the "
                        f"document after a {len(query)}-piece question")
      spans, offset = [], 0
      while offset < len(doc):
        length = min(len(doc) - offset, max_doc)
        spans.append((offset, length))
        if offset + length == len(doc):
          break
        offset += min(length, cfg.doc_stride)
      for span_index, (span_start, span_len) in enumerate(spans):
        tokens = ["[CLS]"] + query + ["[SEP]"]
        segment_ids = [0] * len(tokens)
        token_to_orig, max_context = {}, {}
        for i in range(span_len):
          position = span_start + i
          token_to_orig[len(tokens)] = tok_to_orig[position]
          max_context[len(tokens)] = _is_max_context(spans, span_index, position)
          tokens.append(doc[position])
          segment_ids.append(1)
        tokens.append("[SEP]")
        segment_ids.append(1)
        input_ids = tok.convert_tokens_to_ids(tokens)
        start_position = end_position = 0
        if is_training and not example.is_impossible:
          if span_start <= tok_start and tok_end <= span_start + span_len - 1:
            start_position = tok_start - span_start + len(query) + 2
            end_position = tok_end - span_start + len(query) + 2
        n = cfg.max_seq_length
        feature = {"input_ids": pad(input_ids, n), "input_mask": pad([1] * len(input_ids), n),
                   "segment_ids": pad(segment_ids, n), "task_id": self.task_index,
                   f"{self.name}_eid": 1000 * example.eid + span_index}
        if is_training:
          feature.update({f"{self.name}_start_positions": start_position,
                          f"{self.name}_end_positions": end_position,
                          f"{self.name}_is_impossible": int(example.is_impossible)})
        else:
          feature.update(example_index=example.eid, tokens=tokens, token_to_orig_map=token_to_orig,
                         token_is_max_context=max_context)
        features.append(feature)
    return features

  def eval_features(self, split):
    """The featurized evaluation split, with the token maps that decoding needs (cached: the scorer
    decodes from the same features the model ran on)."""
    if split not in self._eval_features:
      self._eval_features[split] = self.featurize(self.get_examples(split), False)
    return self._eval_features[split]

  def feature_specs(self):
    return common_feature_specs(self.config.max_seq_length) + [
        FeatureSpec(f"{self.name}_eid", ()), FeatureSpec(f"{self.name}_start_positions", ()),
        FeatureSpec(f"{self.name}_end_positions", ()), FeatureSpec(f"{self.name}_is_impossible", ())]

  num_outputs = 1

  def test_output_splits(self):
    return self.test_splits

  def test_outputs(self, split, outs):
    """Question id -> decoded answer text (JSON); the scorer writes nothing here (no ``output_dir``)."""
    scorer = self.get_scorer(split)
    scorer.update(outs)
    predictions, _ = scorer.decode()
    return PredictionFiles(predictions, "json")


class SQuADTask(QATask):
  def _read(self, split):
    if self.source is not None:
      data = self.source.squad_data(self, split)
    else:
      path = self.split_path(split)
      if not fileio.isfile(path):
        raise DataError(path, None, "file not found")
      try:
        with fileio.open_file(path) as f:
          data = json.load(f)["data"]
      except json.JSONDecodeError as e:
        raise DataError(path, e.lineno, f"invalid JSON: {e.msg}") from None
      except (KeyError, TypeError):
        raise DataError(path, None, "not a SQuAD file (no top-level 'data' list)") from None
    examples, failures = [], 0
    for article in data:
      for paragraph in article.get("paragraphs", []):
        failures += add_paragraph_examples(self.name, examples, paragraph, split == "train", self.v2,
                                           self.split_path(split))
    self._gold[split] = data
    return examples, failures

  def get_scorer(self, split="dev", output_dir=None):
    return SQuADScorer(self, split, output_dir)


class SQuAD(SQuADTask):
  name, v2 = "squad", True


class SQuADv1(SQuADTask):
  name = "squadv1"


class MRQATask(QATask):
  """MRQA 2019 ``.jsonl``: a header line, then one paragraph (``context``, ``qas``) per line."""
  file_ext = ".jsonl"

  def _read(self, split):
    path = self.split_path(split)
    if not fileio.isfile(path):
      raise DataError(path, None, "file not found")
    examples, failures, answers = [], 0, {}
    with fileio.open_file(path) as f:
      for line_no, line in enumerate(f, 1):
        if not line.strip():
          continue
        try:
          paragraph = json.loads(line)
        except json.JSONDecodeError as e:
          raise DataError(path, line_no, f"invalid JSON: {e.msg}") from None
        if "header" in paragraph:
          continue
        failures += add_paragraph_examples(self.name, examples, paragraph, split == "train", False,
                                           f"{path}:{line_no}")
        for qa in paragraph["qas"]:
          if "qid" not in qa or "answers" not in qa:
            raise DataError(path, line_no, "MRQA question without 'qid'/'answers'")
          answers[qa["qid"]] = qa["answers"]
    self._gold[split] = answers
    return examples, failures

  def get_scorer(self, split="dev", output_dir=None):
    return MRQAScorer(self, split, output_dir)


class NewsQA(MRQATask):
  name = "newsqa"


class NaturalQuestions(MRQATask):
  name = "naturalqs"


class TriviaQA(MRQATask):
  name = "triviaqa"


class SearchQA(MRQATask):
  name = "searchqa"
