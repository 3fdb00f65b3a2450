"""Scorers against independently computed values: hand cases, sklearn/scipy, the official SQuAD logic."""

import collections
import math

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics

from electra_tf.finetuning import result_files
from electra_tf.finetuning.scorers import (AccuracyScorer, EntityLevelF1Scorer, MCCScorer, RegressionScorer,
                                           TaggingScorer, get_span_labels, mrqa_evaluate, normalize_answer,
                                           squad_v1_evaluate, squad_v2_evaluate)


def _update(scorer, targets, preds):
  n = len(targets)
  scorer.update(dict(targets=np.array(targets), predictions=np.array(preds), eid=np.arange(n),
                     loss=np.full(n, 0.5)))
  return scorer.get_results()


def test_accuracy_and_mcc_hand_values():
  r = _update(AccuracyScorer(), [1, 0, 1, 1], [1, 1, 1, 0])
  assert r == {"accuracy": 50.0, "loss": 0.5}
  # MCC by hand: tp=2 tn=1 fp=1 fn=1 -> (2*1-1*1)/sqrt(3*3*2*2) = 1/6
  r = _update(MCCScorer(), [1, 0, 1, 1, 0], [1, 1, 1, 0, 0])
  assert r["mcc"] == pytest.approx(100 / 6)
  y, p = np.random.RandomState(0).randint(0, 2, (2, 200))
  assert _update(MCCScorer(), y, p)["mcc"] == pytest.approx(100 * sklearn.metrics.matthews_corrcoef(y, p))


def test_regression_scorer_matches_scipy():
  rng = np.random.RandomState(1)
  t = rng.uniform(0, 1, 50)
  p = t + rng.normal(0, 0.2, 50)
  r = _update(RegressionScorer(), t, p)
  assert r["pearson"] == pytest.approx(100 * scipy.stats.pearsonr(t, p)[0])
  assert r["spearman"] == pytest.approx(100 * scipy.stats.spearmanr(t, p)[0])
  assert r["mse"] == pytest.approx(np.mean((t - p) ** 2))
  # hand: perfectly monotone but not linear -> spearman 100, pearson < 100
  r = _update(RegressionScorer(), [0.0, 0.1, 0.2, 1.0], [0.0, 0.5, 0.6, 0.7])
  assert r["spearman"] == pytest.approx(100.0) and r["pearson"] < 100
  # one row: the correlations are undefined (NaN), the squared error is not
  r = _update(RegressionScorer(scale=2.0), [0.25], [0.75])
  assert math.isnan(r["pearson"]) and math.isnan(r["spearman"]) and r["mse"] == pytest.approx(0.25 * 4)


def test_normalize_answer():
  assert normalize_answer("The  Cat's, a   hat!") == "cats hat"
  assert normalize_answer("An apple theater") == "apple theater"


DATASET = [{"paragraphs": [{"context": "...", "qas": [
    {"id": "1", "answers": [{"text": "Denver Broncos"}, {"text": "the Denver Broncos"}]},
    {"id": "2", "answers": [{"text": "Saint Bernadette Soubirous"}]},
    {"id": "3", "answers": [{"text": "1858"}]},
    {"id": "4", "answers": []},
    {"id": "5", "answers": []}]}]}]


def test_squad_v1_hand_values():
  dataset = [{"paragraphs": [{"qas": DATASET[0]["paragraphs"][0]["qas"][:3]}]}]
  preds = {"1": "Denver Broncos!", "2": "Bernadette", "3": "in 1858 France"}
  # EM: 1, 0, 0. F1: 1; p=1 r=1/3 -> 0.5; p=1/3 r=1 -> 0.5
  r = squad_v1_evaluate(dataset, preds)
  assert r["exact_match"] == pytest.approx(100 / 3)
  assert r["f1"] == pytest.approx(100 * 2 / 3)
  r = squad_v1_evaluate(dataset, {"1": "the Denver Broncos"})  # missing predictions score 0
  assert (r["exact_match"], r["f1"]) == pytest.approx((100 / 3, 100 / 3))


def test_squad_v2_hand_values_with_threshold():
  preds = {"1": "Denver Broncos", "2": "Bernadette", "3": "1858", "4": "", "5": "something"}
  null_odds = {"1": -5.0, "2": -1.0, "3": -3.0, "4": 0.0, "5": -4.0}
  r = squad_v2_evaluate(DATASET, preds, null_odds, na_prob_thresh=-2.75)
  # thresholded: q2 (odds -1 > -2.75) -> predicted "" (has answer -> 0); q4 -> "" correct (1);
  # q1 exact 1; q3 exact 1; q5 answered "something" though impossible -> 0.
  assert r["exact"] == pytest.approx(100 * 3 / 5)
  assert r["f1"] == pytest.approx(100 * 3 / 5)
  assert (r["HasAns_exact"], r["HasAns_total"]) == (pytest.approx(200 / 3), 3)
  assert (r["NoAns_exact"], r["NoAns_total"]) == (pytest.approx(50.0), 2)
  # best threshold sweep (official find_best_thresh), by hand over odds sorted ascending:
  # start = #no-answer = 2; q1 (-5, has, exact 1) -> 3; q5 (-4, no, pred non-empty) -> 2;
  # q3 (-3, has, 1) -> 3; q2 (-1, has, 0) -> 3; q4 (0, no, pred "") -> 3. best 3 at thresh -5.0
  assert (r["best_exact"], r["best_exact_thresh"]) == (pytest.approx(60.0), -5.0)
  # f1 raw for q2: "bernadette" vs "saint bernadette soubirous": p=1, r=1/3 -> 0.5
  # sweep: 2 -> 3 (q1) -> 2 (q5) -> 3 (q3) -> 3.5 (q2, thresh -1) -> 3.5
  assert (r["best_f1"], r["best_f1_thresh"]) == (pytest.approx(70.0), -1.0)
  # without null odds every question is answered as predicted and there is no best_* entry
  r0 = squad_v2_evaluate(DATASET, preds)
  assert "best_exact" not in r0 and r0["exact"] == pytest.approx(100 * 3 / 5)
  assert r0["f1"] == pytest.approx(100 * 3.5 / 5)


def test_v2_empty_prediction_f1_rules():
  ds = [{"paragraphs": [{"qas": [{"id": "a", "answers": []}, {"id": "b", "answers": [{"text": "x"}]}]}]}]
  r = squad_v2_evaluate(ds, {"a": "", "b": ""})
  assert (r["f1"], r["NoAns_f1"], r["HasAns_f1"]) == (50.0, 100.0, 0.0)


def test_mrqa_skips_unanswered():
  answers = {"a": ["Hawaii", "in Hawaii"], "b": ["1961"], "c": ["x"]}
  r = mrqa_evaluate(answers, {"a": "Honolulu, Hawaii", "b": "1961"})
  # a: EM 0, F1 max(p=1/2 r=1 -> 2/3, vs "in hawaii": p=1/2 r=1/2 -> 1/2) = 2/3; b: 1, 1; c skipped
  assert r["exact_match"] == pytest.approx(50.0) and r["f1"] == pytest.approx(100 * (2 / 3 + 1) / 2)
  r = mrqa_evaluate(answers, {"a": "Hawaii"}, skip_no_answer=False)
  assert r["exact_match"] == pytest.approx(100 / 3)


def test_span_labels_and_entity_f1():
  assert get_span_labels(["B-NP", "E-NP", "O", "S-VP", "B-PP", "I-PP", "E-PP"]) == [
      (0, 1, "NP"), (3, 3, "VP"), (4, 6, "PP")]
  mapping = {t: i for i, t in enumerate(["B-NP", "E-NP", "O", "S-NP", "S-VP"])}
  gold = [[0, 1, 2, 4], [3, 2]]        # spans: NP(0,1) VP(3,3) | NP(0,0)
  pred = [[0, 1, 2, 3], [3, 2]]        # spans: NP(0,1) NP(3,3) | NP(0,0)
  scorer = EntityLevelF1Scorer(mapping)
  n = 4
  scorer.update(dict(labels=np.array([g + [0] * (n - len(g)) for g in gold]),
                     predictions=np.array([p + [0] * (n - len(p)) for p in pred]),
                     labels_mask=np.array([[1.0] * len(g) + [0.0] * (n - len(g)) for g in gold]),
                     eid=np.arange(2), loss=np.array([1.0, 2.0])))
  r = scorer.get_results()
  assert (r["precision"], r["recall"], r["f1"]) == pytest.approx((200 / 3, 200 / 3, 200 / 3))
  assert r["loss"] == pytest.approx(3.0 / 6)  # per word


def test_a_tagging_scorer_with_the_gold_of_every_word_scores_the_words_the_input_lost_as_wrong():
  mapping = {t: i for i, t in enumerate(["B-X", "E-X", "O", "S-X"])}
  gold = {0: [3, 2, 0, 1], 1: [2, 3]}  # sentence 0: S-X O B-X E-X, of which the input held 2 words
  outputs = dict(labels=np.array([[3, 2, 0, 0], [2, 3, 0, 0]]), predictions=np.array([[3, 2, 0, 0], [2, 2, 0, 0]]),
                 labels_mask=np.array([[1.0, 1.0, 0, 0], [1.0, 1.0, 0, 0]]), eid=np.arange(2), loss=np.ones(2))
  seen = TaggingScorer(mapping)
  seen.update(outputs)
  every = TaggingScorer(mapping, gold)
  every.update(outputs)
  assert seen.get_results()["accuracy"] == pytest.approx(100 * 3 / 4)  # the 4 words the model saw
  r = every.get_results()
  assert r["accuracy"] == pytest.approx(100 * 3 / 6)  # all 6 words: the 2 lost ones wrong
  # gold spans X(0,0) X(2,3) | X(1,1); predicted X(0,0) only: precision 1/1, recall 1/3
  assert (r["precision"], r["recall"]) == pytest.approx((100.0, 100 / 3))


def test_trial_summary_and_results_files(tmp_path):
  trials = [{"trial": t, "sst": collections.OrderedDict(accuracy=a, loss=0.1)} for t, a in
            enumerate([80.0, 90.0, 86.0], 1)]
  summary = result_files.write_results(str(tmp_path), "sst", trials)
  s = summary["sst"]["accuracy"]
  assert (s["median"], s["mean"], s["n"]) == (86.0, pytest.approx(256 / 3), 3)
  assert s["std"] == pytest.approx(np.std([80, 90, 86], ddof=1))
  txt = (tmp_path / "sst_results.txt").read_text()
  assert txt.splitlines()[0] == "sst: accuracy: 80.00 - loss: 0.10" and len(txt.splitlines()) == 3
  import json, pickle
  assert pickle.loads((tmp_path / "sst_results.pkl").read_bytes())[1]["sst"]["accuracy"] == 90.0
  assert json.loads((tmp_path / "sst_results.json").read_text())["summary"]["sst"]["accuracy"]["median"] == 86.0
  assert "median 86.00 mean 85.33 std 5.03" in result_files.format_summary(summary)
