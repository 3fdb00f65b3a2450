"""The MRQA 2019 shared-task evaluation as the reference runs it: v1.1 EM/F1 over every alias, with
questions that have no prediction skipped (``skip_no_answer=True``)."""

from electra_tf.finetuning.scorers.squad import exact_match_score, f1_score_v1


def mrqa_evaluate(answers: dict, predictions: dict, skip_no_answer: bool = True) -> dict:
  """``answers``: {qid: [alias, ...]}; ``predictions``: {qid: text}. Returns exact_match, f1 (x100)."""
  em = f1 = total = 0.0
  for qid, golds in answers.items():
    if qid not in predictions:
      if not skip_no_answer:
        total += 1
      continue
    total += 1
    pred = predictions[qid]
    em += max(float(exact_match_score(pred, g)) for g in golds)
    f1 += max(f1_score_v1(pred, g) for g in golds)
  if not total:
    raise ValueError("MRQA evaluation: no question has a prediction")
  return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total}
