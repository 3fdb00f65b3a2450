"""Extractive-QA scorers: n-best decoding of the QA head's outputs into answer texts, then the official
SQuAD / MRQA evaluation (the reference's ``qa_metrics``).

Decoding, per question over all of its windows: joint beam (top ``beam_size`` starts x top ``beam_size``
ends, scored by log-probabilities) or, without joint prediction, the top ``n_best_size`` start and end
logits; spans filtered (inside the context, max-context start, length <= ``max_answer_length``), the
text mapped back to the original with ``get_final_text``. SQuAD 2.0 also gives null odds (min over
windows of the answerable logit) and the official evaluation applies ``qa_na_threshold`` (-2.75) to them.

With an ``output_dir`` a scorer writes ``<task>_preds.json``, ``<task>_null_odds.json`` (v2) and
``<task>_eval.json`` there, as the reference does under ``results/<tasks>_qa/``.
"""

import collections
import os
import typing

import numpy as np

from electra_tf.finetuning.head_layers import QA_OUTPUTS
from electra_tf.finetuning.result_files import write_json
from electra_tf.finetuning.scorers.base import Scorer
from electra_tf.finetuning.scorers.mrqa import mrqa_evaluate
from electra_tf.finetuning.scorers.squad import squad_v1_evaluate, squad_v2_evaluate
from electra_tf.tokenization import BasicTokenizer



def final_span(pred_text: str, orig_text: str, do_lower_case: bool) -> typing.Tuple[int, int]:
  """Where the normalised predicted text lies in the original span ``orig_text`` (BERT's heuristic), as
  character offsets ``(start, end)``, end exclusive: align the basic-tokenized original with itself character by
  character, ignoring spaces; on failure the whole original span."""
  def strip_spaces(text):
    chars, ns_to_s = [], {}
    for i, c in enumerate(text):
      if c == " ":
        continue
      ns_to_s[len(chars)] = i
      chars.append(c)
    return "".join(chars), ns_to_s

  whole = (0, len(orig_text))
  tok_text = " ".join(BasicTokenizer(do_lower_case=do_lower_case).tokenize(orig_text))
  start = tok_text.find(pred_text)
  if start == -1:
    return whole
  end = start + len(pred_text) - 1
  orig_ns, orig_map = strip_spaces(orig_text)
  tok_ns, tok_map = strip_spaces(tok_text)
  if len(orig_ns) != len(tok_ns):
    return whole
  tok_s_to_ns = {s: ns for ns, s in tok_map.items()}
  orig_start = orig_map.get(tok_s_to_ns.get(start, -1))
  orig_end = orig_map.get(tok_s_to_ns.get(end, -1))
  if orig_start is None or orig_end is None:
    return whole
  return orig_start, orig_end + 1


def get_final_text(pred_text: str, orig_text: str, do_lower_case: bool) -> str:
  """The predicted text projected back onto the original span (``final_span``)."""
  start, end = final_span(pred_text, orig_text, do_lower_case)
  return orig_text[start:end]


def _softmax(scores):
  scores = np.asarray(scores, np.float64)
  e = np.exp(scores - scores.max())
  return (e / e.sum()).tolist()


class SpanBasedQAScorer(Scorer):
  """Collects the QA head's outputs per feature, decodes answers and runs the official evaluation.

  ``task`` is a ``finetuning.qa.QATask``: it gives the examples, the evaluation features (with the
  token maps decoding needs), ``v2`` and the gold answers. Subclasses implement ``evaluate``."""

  def __init__(self, task, split: str, output_dir: typing.Optional[str] = None):
    super().__init__()
    self.task, self.split, self.output_dir = task, split, output_dir
    self._results = {}
    self.predictions, self.null_odds, self.nbest = None, None, None
    # {id: (first word, start, end)}: where each prediction lies, as character offsets into the example's words
    # from that one on, joined by single spaces (``answer_offsets`` puts them into the context)
    self.spans = None

  def update(self, outputs):
    super().update(outputs)
    for i, eid in enumerate(np.asarray(outputs["eid"]).tolist()):
      self._results[int(eid)] = {k: np.asarray(outputs[k][i]) for k in QA_OUTPUTS}

  def decode(self):
    """Predictions {id: text} and null odds {id: float} (v2); the n-best lists and spans are kept."""
    cfg, task = self.task.config, self.task
    by_example = collections.defaultdict(list)
    for feature in task.eval_features(self.split):
      by_example[feature["example_index"]].append(feature)
    predictions, null_odds, nbest_all, spans = collections.OrderedDict(), collections.OrderedDict(), {}, {}
    for example in task.get_examples(self.split):
      features = by_example[example.eid]
      prelim, score_null = [], 1e6
      for fi, feature in enumerate(features):
        result = self._results.get(int(feature[f"{task.name}_eid"]))
        if result is None:
          raise ValueError(f"{task.name}: no model output for feature {feature[f'{task.name}_eid']}")
        if cfg.joint_prediction:
          starts, ends = result["start_top_index"], result["end_top_index"]
        else:
          starts = np.argsort(-result["start_logits"], kind="stable")[:cfg.n_best_size]
          ends = np.argsort(-result["end_logits"], kind="stable")[:cfg.n_best_size]
        if task.v2:
          null = (float(result["answerable_logit"]) if cfg.answerable_classifier
                  else float(result["start_logits"][0] + result["end_logits"][0]))
          score_null = min(score_null, null)
        n_tokens = len(feature["tokens"])
        for i, start in enumerate(np.asarray(starts).tolist()):
          for j, end in enumerate(np.asarray(ends[i] if cfg.joint_prediction else ends).tolist()):
            if start >= n_tokens or end >= n_tokens or start == 0:
              continue
            if start not in feature["token_to_orig_map"] or end not in feature["token_to_orig_map"]:
              continue
            if not feature["token_is_max_context"].get(start, False):
              continue
            if end < start or end - start + 1 > cfg.max_answer_length:
              continue
            if cfg.joint_prediction:
              s_score, e_score = float(result["start_top_log_probs"][i]), float(result["end_top_log_probs"][i, j])
            else:
              s_score, e_score = float(result["start_logits"][start]), float(result["end_logits"][end])
            prelim.append((fi, start, end, s_score, e_score))
      prelim.sort(key=lambda p: p[3] + p[4], reverse=True)
      seen, nbest, where = set(), [], {}
      for fi, start, end, s_score, e_score in prelim:
        if len(nbest) >= cfg.n_best_size:
          break
        feature = features[fi]
        tok_text = " ".join(feature["tokens"][start:end + 1]).replace(" ##", "").replace("##", "")
        tok_text = " ".join(tok_text.strip().split())
        orig = feature["token_to_orig_map"]
        orig_text = " ".join(example.doc_tokens[orig[start]:orig[end] + 1])
        span = final_span(tok_text, orig_text, cfg.do_lower_case)
        text = orig_text[span[0]:span[1]]
        if text in seen:
          continue
        seen.add(text)
        nbest.append({"text": text, "start_logit": s_score, "end_logit": e_score})
        where[text] = (orig[start], *span)
      if not nbest:  # the reference's nonce prediction for the rare case of no valid span
        nbest.append({"text": "empty", "start_logit": 0.0, "end_logit": 0.0})
      for entry, p in zip(nbest, _softmax([e["start_logit"] + e["end_logit"] for e in nbest])):
        entry["probability"] = p
      key = example.example_id
      if task.v2:
        best_non_null = next((e for e in nbest if e["text"]), None)
        null_odds[key] = (score_null if cfg.answerable_classifier else
                          score_null - best_non_null["start_logit"] - best_non_null["end_logit"])
        predictions[key] = best_non_null["text"] if best_non_null else ""
      else:
        predictions[key] = nbest[0]["text"]
      nbest_all[key] = nbest
      if predictions[key] in where:
        spans[key] = where[predictions[key]]
    self.predictions, self.null_odds, self.nbest = predictions, (null_odds if task.v2 else None), nbest_all
    self.spans = spans
    return predictions, self.null_odds

  def evaluate(self, predictions: dict, null_odds) -> dict:
    """The official metrics of ``predictions`` against the split's gold answers."""
    raise NotImplementedError

  def _get_results(self):
    predictions, null_odds = self.decode()
    name = self.task.name
    if self.output_dir:
      write_json(os.path.join(self.output_dir, f"{name}_preds.json"), predictions)
      if null_odds is not None:
        write_json(os.path.join(self.output_dir, f"{name}_null_odds.json"), null_odds)
    if self.split.startswith("test") and not self.task.gold(self.split):
      return [("loss", self.get_loss())]  # an unlabelled test split: nothing to score
    results = self.evaluate(predictions, null_odds)
    if self.output_dir:
      write_json(os.path.join(self.output_dir, f"{name}_eval.json"), results)
    return sorted(results.items())


class SQuADScorer(SpanBasedQAScorer):
  """SQuAD 1.1 (exact_match, f1) or, for a v2 task, the official 2.0 dict with the null-odds threshold."""

  def evaluate(self, predictions, null_odds):
    gold = self.task.gold(self.split)
    if self.task.v2:
      return squad_v2_evaluate(gold, predictions, null_odds, self.task.config.qa_na_threshold)
    return squad_v1_evaluate(gold, predictions)


class MRQAScorer(SpanBasedQAScorer):
  """The MRQA shared-task evaluation (questions without a prediction skipped, as the reference)."""

  def evaluate(self, predictions, null_odds):
    return mrqa_evaluate(self.task.gold(self.split), predictions, skip_no_answer=True)
