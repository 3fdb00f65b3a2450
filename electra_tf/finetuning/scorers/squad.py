"""The official SQuAD v1.1 and v2.0 evaluation (same definitions as the official scripts).

v1.1: exact match and token F1 after normalisation (lowercase, drop punctuation, drop a/an/the, collapse
whitespace), max over the gold answers, x100; a question without a prediction scores 0.
v2.0: gold answers that normalise to "" are dropped ("" is the gold of unanswerable questions); F1 of two
empty token lists is 1; a question whose null odds exceed ``na_prob_thresh`` is predicted "" (the
reference uses -2.75); HasAns/NoAns breakdowns and the best thresholds found by sweeping the null odds.
"""

import collections
import re
import string

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s: str) -> str:
  """Lowercase, remove punctuation, articles and extra whitespace (official SQuAD/MRQA normalisation)."""
  s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
  return " ".join(_ARTICLES.sub(" ", s).split())


def exact_match_score(prediction: str, ground_truth: str) -> bool:
  return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score_v1(prediction: str, ground_truth: str) -> float:
  """v1.1/MRQA token F1: 0 when nothing overlaps (including empty strings)."""
  pred, gold = normalize_answer(prediction).split(), normalize_answer(ground_truth).split()
  same = sum((collections.Counter(pred) & collections.Counter(gold)).values())
  if same == 0:
    return 0.0
  precision, recall = same / len(pred), same / len(gold)
  return 2 * precision * recall / (precision + recall)


def f1_score_v2(prediction: str, gold: str) -> float:
  """v2.0 token F1: if either side is empty, 1 when both are, else 0."""
  pred_toks = normalize_answer(prediction).split() if prediction else []
  gold_toks = normalize_answer(gold).split() if gold else []
  if not pred_toks or not gold_toks:
    return float(pred_toks == gold_toks)
  same = sum((collections.Counter(pred_toks) & collections.Counter(gold_toks)).values())
  if same == 0:
    return 0.0
  precision, recall = same / len(pred_toks), same / len(gold_toks)
  return 2 * precision * recall / (precision + recall)


def _questions(dataset):
  """Yields the qa dicts of a SQuAD ``data`` list (articles -> paragraphs -> qas)."""
  for article in dataset:
    for paragraph in article["paragraphs"]:
      yield from paragraph["qas"]


def squad_v1_evaluate(dataset: list, predictions: dict) -> dict:
  """``{"exact_match", "f1"}`` x100 over every question of ``dataset`` (the ``data`` list)."""
  em = f1 = total = 0.0
  for qa in _questions(dataset):
    total += 1
    if qa["id"] not in predictions:
      continue  # unanswered questions score 0
    golds = [a["text"] for a in qa["answers"]]
    pred = predictions[qa["id"]]
    em += max(float(exact_match_score(pred, g)) for g in golds)
    f1 += max(f1_score_v1(pred, g) for g in golds)
  return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total}


def _raw_scores_v2(dataset, predictions):
  exact, f1 = {}, {}
  for qa in _questions(dataset):
    qid = qa["id"]
    golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
    if qid not in predictions:
      continue
    pred = predictions[qid]
    exact[qid] = max(float(normalize_answer(g) == normalize_answer(pred)) for g in golds)
    f1[qid] = max(f1_score_v2(pred, g) for g in golds)
  return exact, f1


def _apply_threshold(scores, na_probs, has_ans, thresh):
  return {qid: (float(not has_ans[qid]) if na_probs[qid] > thresh else s) for qid, s in scores.items()}


def _eval_dict(exact, f1, qids=None):
  qids = list(exact) if qids is None else qids
  total = len(qids)
  return collections.OrderedDict([("exact", 100.0 * sum(exact[k] for k in qids) / total),
                                  ("f1", 100.0 * sum(f1[k] for k in qids) / total), ("total", total)])


def _best_threshold(predictions, scores, na_probs, has_ans):
  """Sweep the null-odds threshold over the questions sorted by null odds; best score and threshold."""
  score = best = sum(1 for q in has_ans if not has_ans[q])
  best_thresh = 0.0
  for qid in sorted(na_probs, key=lambda k: na_probs[k]):
    if qid not in scores:
      continue
    if has_ans[qid]:
      score += scores[qid]
    elif predictions[qid]:
      score -= 1
    if score > best:
      best, best_thresh = score, na_probs[qid]
  return 100.0 * best / len(scores), best_thresh


def squad_v2_evaluate(dataset: list, predictions: dict, na_probs: dict = None,
                      na_prob_thresh: float = 1.0) -> "collections.OrderedDict":
  """The official v2.0 dict: exact, f1, total, HasAns_*, NoAns_* and, given null odds, best_exact,
  best_exact_thresh, best_f1, best_f1_thresh. The reference calls it with ``na_prob_thresh=-2.75``."""
  has_na_file = na_probs is not None
  na_probs = na_probs if has_na_file else {k: 0.0 for k in predictions}
  has_ans = {qa["id"]: bool(qa["answers"]) for qa in _questions(dataset)}
  exact_raw, f1_raw = _raw_scores_v2(dataset, predictions)
  missing = [q for q in has_ans if q not in exact_raw]
  if missing:
    raise ValueError(f"{len(missing)} questions have no prediction (first: {missing[0]})")
  exact = _apply_threshold(exact_raw, na_probs, has_ans, na_prob_thresh)
  f1 = _apply_threshold(f1_raw, na_probs, has_ans, na_prob_thresh)
  out = _eval_dict(exact, f1)
  for prefix, qids in (("HasAns", [q for q in has_ans if has_ans[q]]),
                       ("NoAns", [q for q in has_ans if not has_ans[q]])):
    if qids:
      for k, v in _eval_dict(exact, f1, qids).items():
        out[f"{prefix}_{k}"] = v
  if has_na_file:
    out["best_exact"], out["best_exact_thresh"] = _best_threshold(predictions, exact_raw, na_probs, has_ans)
    out["best_f1"], out["best_f1_thresh"] = _best_threshold(predictions, f1_raw, na_probs, has_ans)
  return out
