"""A task from the user's own files end to end through the commands (``electra-finetune --train-file ...`` and
``electra-predict``), tiny random-weight models on real text: the six-class WikiText-2 section CSV, Rotten
Tomatoes as JSON Lines, ``oanc_pos`` as JSON Lines token and tag lists, the SQuAD sample, regression and
multi-label columns. Predictions on the dev file score what the run reported; the baselines equal
scikit-learn's on the same rows; the best epoch's weights are the ones saved."""

import collections
import json
import shutil

import numpy as np
import pytest
import scipy.stats

from _user_task_testlib import data_root, polarity_rows, write_csv, write_polarity, write_pos_jsonl, write_sections_csv
from conftest import TINY_MODEL
from electra_tf.cli import finetune as finetune_cli
from electra_tf.cli import predict as predict_cli
from electra_tf.finetuning.best_epoch import BestEpoch

pytestmark = pytest.mark.slow

TINY = {"model_hparam_overrides": dict(TINY_MODEL), "embedding_size": 16, "max_seq_length": 48,
        "train_batch_size": 16, "eval_batch_size": 16, "learning_rate": 1e-3, "num_train_epochs": 2.0}


@pytest.fixture
def root(tmp_path, bert_vocab):
  shutil.copy(bert_vocab, tmp_path / "vocab.txt")
  return tmp_path


def finetune(root, *flags, **hparams):
  args = ["--data-dir", str(root), "--model-name", "m", "--init-checkpoint", "none", "--no-progress",
          "--hparams", json.dumps({**TINY, **hparams}), *flags]
  assert finetune_cli.main(args) == 0


def results(root, task):
  return json.loads((root / "models/m/results" / f"{task}_results.json").read_text())


def predict(root, task, input_path, output, capsys):
  capsys.readouterr()
  assert predict_cli.main(["--data-dir", str(root), "--model-name", "m", "--task-name", task, "--input",
                           str(input_path), "--output", str(output), "--no-progress"]) == 0
  return capsys.readouterr().err


def read_jsonl(path):
  return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_six_class_csv_baselines_equal_sklearn_and_predictions_score_the_reported_dev(root, capsys):
  from sklearn.feature_extraction.text import TfidfVectorizer
  from sklearn.linear_model import LogisticRegression
  train, dev = write_sections_csv(root / "sections", n_train=500, n_dev=150)
  finetune(root, "--task-name", "sections", "--train-file", train, "--dev-file", dev, "--text-column",
           "paragraph", "--label-column", "section", "--id-column", "id")
  out = capsys.readouterr().out
  found = results(root, "sections")
  reported = found["trials"][0]["sections"]["accuracy"]
  baselines = found["baselines"]["sections"]
  assert f"majority class {baselines['majority']:.1f}" in out and "TF-IDF + logistic regression" in out
  # the baselines, recomputed with scikit-learn on the same rows (all training rows: no validation carved)
  import csv
  train_rows = list(csv.DictReader(open(train, encoding="utf-8-sig", newline="")))
  dev_rows = list(csv.DictReader(open(dev, encoding="utf-8-sig", newline="")))
  counts = collections.Counter(r["section"] for r in train_rows)
  majority = min(counts, key=lambda label: (-counts[label], label))
  assert baselines["majority"] == pytest.approx(100 * np.mean([r["section"] == majority for r in dev_rows]))
  vectorizer = TfidfVectorizer(ngram_range=(1, 2)).fit([r["paragraph"] for r in train_rows])
  model = LogisticRegression(C=baselines["tfidf_logreg_C"], max_iter=1000).fit(
      vectorizer.transform([r["paragraph"] for r in train_rows]), [r["section"] for r in train_rows])
  predicted = model.predict(vectorizer.transform([r["paragraph"] for r in dev_rows]))
  assert baselines["tfidf_logreg"] == pytest.approx(100 * np.mean(predicted == [r["section"] for r in dev_rows]))
  # predictions on the dev file: one row each, in order, with the id column; their accuracy is the reported one
  err = predict(root, "sections", dev, root / "pred.jsonl", capsys)
  rows = read_jsonl(root / "pred.jsonl")
  assert [r["id"] for r in rows] == [r["id"] for r in dev_rows]
  assert all(abs(sum(r["probabilities"].values()) - 1) < 1e-6 and r["label"] in r["probabilities"] for r in rows)
  mine = 100 * np.mean([p["label"] == g["section"] for p, g in zip(rows, dev_rows)])
  assert mine == pytest.approx(reported, abs=1e-9)
  assert f"accuracy: {reported:.2f}" in err
  # the same model exported as a SavedModel predicts the same labels
  export_and_compare(root, "sections", dev, rows, capsys)
  # a file without the model's text column: one line, from the SavedModel as from the model directory
  no_text = write_csv(root / "no_text.csv", ["id", "text"], [("x1", "football game")])
  for source in (["--saved-model", str(root / "served")],
                 ["--data-dir", str(root), "--model-name", "m", "--task-name", "sections"]):
    assert predict_cli.main([*source, "--input", no_text, "--output", str(root / "none.jsonl")]) == 2
    assert "no_text.csv:2: no column 'paragraph'" in capsys.readouterr().err
  assert not (root / "none.jsonl").exists()
  # CSV output: probabilities as p(label) columns
  predict(root, "sections", dev, root / "pred.csv", capsys)
  header = open(root / "pred.csv", encoding="utf-8").readline().strip().split(",")
  assert header[:2] == ["id", "label"] and "p(History)" in header


def export_and_compare(root, task, dev, rows, capsys):
  from electra_tf.cli import convert as convert_cli
  model_dir = root / "models/m/finetuning_models" / f"{task}_model_1"
  assert convert_cli.main(["export-savedmodel", str(model_dir), "--output", str(root / "served")]) == 0
  capsys.readouterr()
  assert predict_cli.main(["--saved-model", str(root / "served"), "--input", str(dev), "--output",
                           str(root / "served.jsonl")]) == 0
  served = read_jsonl(root / "served.jsonl")
  assert len(served) == len(rows)
  for mine, theirs in zip(rows, served):
    if "tags" in mine:
      assert theirs["tags"] == mine["tags"]
    else:
      assert theirs["label"] == mine["label"]
      assert np.allclose(list(theirs["probabilities"].values()), list(mine["probabilities"].values()), atol=1e-5)


def test_keep_best_model_saves_the_best_validation_epoch(root, capsys):
  train, dev = write_polarity(root / "pol", "jsonl", n_train=400, n_dev=100)
  finetune(root, "--task-name", "pol", "--train-file", train, "--dev-file", dev, "--text-column", "review",
           "--label-column", "polarity", num_train_epochs=4.0, keep_best_model=True, early_stopping_patience=2,
           validation_size=80)
  trial = results(root, "pol")["trials"][0]
  best = trial["best"]
  curve = [score for _, score in best["validation_curve"]]
  assert best["best_validation"] == max(curve) and curve.index(max(curve)) == [e for e, _ in
                                                                              best["validation_curve"]].index(
                                                                                  best["best_epoch"])
  after = curve[curve.index(max(curve)) + 1:]
  assert len(after) <= 2 and all(s <= max(curve) for s in after)  # patience 2: at most two epochs past the best
  # the saved model is the best epoch's: scored again on the validation split it gives the best score
  from electra_tf.configs import FinetuningConfig
  from electra_tf.finetuning.run import FinetuningRun
  model_dir = root / "models/m/finetuning_models/pol_model_1"
  cfg = FinetuningConfig.create("m", str(root), **TINY, task_names=["pol"], train_file=train, dev_file=dev,
                                text_column="review", label_column="polarity", init_checkpoint=str(model_dir),
                                vocab_file=str(root / "vocab.txt"), do_train=False, evaluate_on="validation",
                                validation_size=80, baselines=False)
  again = FinetuningRun(cfg, progress=False).run()[0]["pol"]["accuracy"]
  assert again == pytest.approx(best["best_validation"], abs=1e-9)


def test_best_epoch_keeps_the_best_weights_and_counts_patience():
  class Var:
    def __init__(self, v):
      self.v = np.array(v, float)

    def numpy(self):
      return self.v

    def assign(self, v):
      self.v = np.array(v, float)

  model = collections.namedtuple("M", "weights")([Var([0.0])])
  best = BestEpoch(model, patience=2)
  for epoch, score in enumerate([50.0, 60.0, 55.0, 60.0, 58.0], 1):
    model.weights[0].assign([epoch])
    best.consider(epoch, {"t": {"accuracy": score, "loss": 1.0}})
    if best.should_stop():
      break
  assert (best.epoch, best.score, epoch) == (2.0, 60.0, 4)  # a tie is no improvement
  best.restore()
  assert model.weights[0].v.tolist() == [2.0]


def test_tagging_jsonl_predicts_a_tag_per_word(root, capsys):
  train, dev = write_pos_jsonl(root / "pos", n_train=300, n_dev=60)
  finetune(root, "--task-name", "pos", "--train-file", train, "--dev-file", dev, num_train_epochs=2.0,
           max_seq_length=32)
  found = results(root, "pos")
  reported = found["trials"][0]["pos"]["accuracy"]
  assert "lookup_tagger" in found["baselines"]["pos"]
  predict(root, "pos", dev, root / "pred.jsonl", capsys)
  rows, gold = read_jsonl(root / "pred.jsonl"), read_jsonl(dev)
  assert [r["tokens"] for r in rows] == [g["tokens"] for g in gold]
  # the reported accuracy is over every dev word, as the lookup tagger's: a word without a tag is wrong
  pairs = [(p, g) for r, s in zip(rows, gold) for p, g in zip(r["tags"], s["tags"])]
  assert 100 * np.mean([p == g for p, g in pairs]) == pytest.approx(reported, abs=1e-9)
  untagged = [r["tags"].index(None) for r in rows if None in r["tags"]]
  assert untagged  # words whose pieces do not fit have no tag, in both paths; the words before them all fit
  from electra_tf.tokenization import load_tokenizer
  tokenizer = load_tokenizer(str(root / "vocab.txt"), True)
  for r, first in zip([r for r in rows if None in r["tags"]], untagged):
    assert None not in r["tags"][:first]
    pieces = [len(tokenizer.tokenize(w)) for w in r["tokens"]]
    assert sum(pieces[:first]) + 2 <= 32 < sum(pieces[:first + 1]) + 2  # [CLS] ... [SEP]
  export_and_compare(root, "pos", dev, rows, capsys)


def test_squad_layout_qa_answers_with_character_spans(root, capsys):
  squad = str(data_root() / "squad" / "squad-v1.1-sample.json")
  finetune(root, "--task-name", "myqa", "--train-file", squad, "--dev-file", squad, num_train_epochs=1.0,
           max_seq_length=128, train_batch_size=4, eval_batch_size=4)
  assert "f1" in results(root, "myqa")["trials"][0]["myqa"]
  predict(root, "myqa", squad, root / "pred.jsonl", capsys)
  rows = read_jsonl(root / "pred.jsonl")
  contexts = {q["id"]: p["context"] for a in json.load(open(squad))["data"] for p in a["paragraphs"] for q in p["qas"]}
  assert sorted(r["id"] for r in rows) == sorted(contexts)
  for r in rows:  # the span in the context, with the context's own whitespace
    assert r["answer"] == "" or " ".join(contexts[r["id"]][r["start"]:r["end"]].split()) == r["answer"]
    assert (r["start"] >= 0) == (r["answer"] != "")


def test_regression_and_multilabel_columns(root, capsys, monkeypatch):
  rows = polarity_rows("train", 300)
  dev_rows = polarity_rows("dev", 80)

  def table(rows_):
    return [(t, len(t.split()), ";".join([s] + (["long"] if len(t.split()) > 20 else []))) for t, s in rows_]
  train = write_csv(root / "r" / "train.csv", ["text", "words", "tags"], table(rows))
  dev = write_csv(root / "r" / "dev.csv", ["text", "words", "tags"], table(dev_rows))
  finetune(root, "--task-name", "length", "--train-file", train, "--dev-file", dev, "--label-column", "words",
           "--task-type", "regression")
  reported = results(root, "length")["trials"][0]["length"]
  predict(root, "length", dev, root / "len.jsonl", capsys)
  values = [r["value"] for r in read_jsonl(root / "len.jsonl")]
  gold = [len(t.split()) for t, _ in dev_rows]
  assert 100 * scipy.stats.pearsonr(gold, values)[0] == pytest.approx(reported["pearson"], abs=1e-6)
  # the same rows from standard input, predictions to standard output
  import io
  import sys
  stdin = io.TextIOWrapper(io.BytesIO(open(dev, "rb").read()), encoding="utf-8")
  capsys.readouterr()
  monkeypatch.setattr(sys, "stdin", stdin)
  assert predict_cli.main(["--data-dir", str(root), "--model-name", "m", "--task-name", "length", "--input", "-",
                           "--input-format", "csv", "--no-progress"]) == 0
  streamed = [json.loads(line)["value"] for line in capsys.readouterr().out.splitlines()]
  assert streamed == values
  monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8"))
  assert predict_cli.main(["--data-dir", str(root), "--model-name", "m", "--task-name", "length", "--input", "-",
                           "--input-format", "csv", "--no-progress"]) == 2
  assert capsys.readouterr().err.strip().startswith("error: standard input: empty file")
  finetune(root, "--task-name", "multi", "--train-file", train, "--dev-file", dev, "--label-column", "tags",
           "--label-separator", ";")
  reported = results(root, "multi")["trials"][0]["multi"]
  predict(root, "multi", dev, root / "multi.jsonl", capsys)
  predicted = read_jsonl(root / "multi.jsonl")
  labels = ["long", "negative", "positive"]
  assert all(set(p["labels"]) <= set(labels) and sorted(p["probabilities"]) == labels for p in predicted)
  exact = 100 * np.mean([set(p["labels"]) == set(tags.split(";")) for p, (_, _, tags) in
                         zip(predicted, table(dev_rows))])
  assert exact == pytest.approx(reported["exact_match"], abs=1e-9)


def test_search_chooses_on_validation_then_trains_the_trials(root, capsys):
  train, dev = write_polarity(root / "pol", "csv", n_train=240, n_dev=60)
  finetune(root, "--task-name", "pol", "--train-file", train, "--dev-file", dev, "--text-column", "review",
           "--label-column", "polarity", "--search", "--search-learning-rates", "3e-4,1e-3", "--search-epochs",
           "1,2", "--search-max-epochs", "4")
  out = capsys.readouterr().out
  search = json.loads((root / "models/m/results/pol_search.json").read_text())
  chosen = search["chosen"]
  assert chosen["learning_rate"] in (3e-4, 1e-3) and chosen["num_train_epochs"] in (1.0, 2.0, 4.0)
  best = max(search["validation"].values(), key=lambda v: sorted(v)[len(v) // 2])
  assert search["validation"][search["chosen_key"]] == best
  assert "search chose peak LR" in out
  assert results(root, "pol")["trials"][0]["pol"]["accuracy"] >= 0  # the reported trial, trained with the choice
