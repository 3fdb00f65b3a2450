"""The classical baselines against independent computations on real data: scikit-learn's own Pipeline for
TF-IDF + logistic regression, a lookup tagger counted here by hand on oanc_pos, and the majority class."""

import collections
import types

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from electra_tf.finetuning import baselines, splits
from electra_tf.finetuning.tagging import read_conll


def _sst(data_dir, split):
  units = splits.read_units(str(data_dir / "glue-style" / "rt_polarity" / f"{split}.tsv"), "tsv")
  rows = [u.split("\t") for u in units.units]
  return baselines.Examples([r[0] for r in rows], [r[1] for r in rows])


def test_majority_class_predicts_the_commonest_training_label(data_dir):
  train, dev = _sst(data_dir, "train"), _sst(data_dir, "dev")
  counts = collections.Counter(train.labels)
  label = max(sorted(counts), key=counts.get)
  assert baselines.majority_label(train.labels) == label
  assert baselines.majority_accuracy(train.labels, dev.labels) == pytest.approx(
      100 * sum(y == label for y in dev.labels) / len(dev.labels))
  assert baselines.majority_label(["b", "a", "b", "a"]) == "a"  # a tie goes to the smaller label


def test_tfidf_logreg_equals_scikit_learns_pipeline_with_c_chosen_on_validation(data_dir):
  train_all, dev = _sst(data_dir, "train"), _sst(data_dir, "dev")
  train = baselines.Examples(train_all.texts_a[:1000], train_all.labels[:1000])
  validation = baselines.Examples(train_all.texts_a[7000:], train_all.labels[7000:])
  grid = (1.0, 10.0)
  got = baselines.tfidf_logreg(train, validation, dev, c_grid=grid)

  def pipeline(c):
    return Pipeline([("tfidf", TfidfVectorizer(ngram_range=(1, 2))),
                     ("lr", LogisticRegression(C=c, max_iter=1000))]).fit(train.texts_a, train.labels)

  def acc(model, data):
    return 100 * np.mean(model.predict(data.texts_a) == np.array(data.labels))

  expected = {c: acc(pipeline(c), validation) for c in grid}
  best = max(grid, key=lambda c: (expected[c], -c))
  assert got["validation"] == pytest.approx(expected)
  assert got["C"] == best and got["dev_accuracy"] == pytest.approx(acc(pipeline(best), dev))
  assert 60 < got["dev_accuracy"] < 90  # far above the 50% of chance on balanced polarity


def test_model_selection_never_reads_dev(data_dir):
  """Garbage dev labels leave the chosen C and every validation score unchanged; only the dev score moves."""
  train_all, dev = _sst(data_dir, "train"), _sst(data_dir, "dev")
  train = baselines.Examples(train_all.texts_a[:800], train_all.labels[:800])
  validation = baselines.Examples(train_all.texts_a[7000:], train_all.labels[7000:])
  garbage = baselines.Examples(dev.texts_a, ["1" if i % 3 else "0" for i in range(len(dev.labels))])
  grid = (0.1, 1.0, 10.0)
  clean = baselines.tfidf_logreg(train, validation, dev, c_grid=grid)
  dirty = baselines.tfidf_logreg(train, validation, garbage, c_grid=grid)
  assert clean["C"] == dirty["C"] and clean["validation"] == dirty["validation"]
  assert clean["dev_accuracy"] != dirty["dev_accuracy"]


def test_sentence_pairs_use_both_sides_and_their_product(data_dir):
  """Pairs of real sentences labelled 'same polarity'; the features [v(a), v(b), v(a) v(b)] built here densely."""
  data = _sst(data_dir, "train")
  rng = np.random.RandomState(0)
  idx_a, idx_b = rng.randint(0, 3000, 500), rng.randint(0, 3000, 500)
  a, b = [data.texts_a[i] for i in idx_a], [data.texts_a[i] for i in idx_b]
  labels = ["1" if data.labels[i] == data.labels[j] else "0" for i, j in zip(idx_a, idx_b)]
  model = baselines.TfidfLogReg(10.0).fit(a[:400], labels[:400], b[:400])
  vec = TfidfVectorizer(ngram_range=(1, 2)).fit(a[:400] + b[:400])

  def features(xa, xb):
    va, vb = vec.transform(xa).toarray(), vec.transform(xb).toarray()
    return np.hstack([va, vb, va * vb])

  lr = LogisticRegression(C=10.0, max_iter=1000).fit(features(a[:400], b[:400]), labels[:400])
  assert model.predict(a[400:], b[400:]) == list(lr.predict(features(a[400:], b[400:])))
  assert model.model.coef_.shape[1] == 3 * len(vec.vocabulary_)  # a, b and their product


@pytest.mark.parametrize("lowercase", [False, True])
def test_most_frequent_tagger_equals_a_lookup_counted_by_hand(data_dir, lowercase):
  sentences = read_conll(str(data_dir / "tagging" / "oanc_pos" / "train.txt"))[:3000]
  dev = read_conll(str(data_dir / "tagging" / "oanc_pos" / "dev.txt"))
  tagger = baselines.MostFrequentTagger(lowercase).fit(sentences)
  if lowercase:  # what an uncased model sees: every word, and so every shape, lowercased
    sentences = [([w.lower() for w in words], tags) for words, tags in sentences]
    dev = [([w.lower() for w in words], tags) for words, tags in dev]

  counts = {}
  for words, tags in sentences:
    for w, t in zip(words, tags):
      counts.setdefault(w, {}).setdefault(t, 0)
      counts[w][t] += 1
  best = {w: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for w, c in counts.items()}
  once = {}
  for w, c in counts.items():
    if sum(c.values()) == 1:
      shape = "number" if any(ch.isdigit() for ch in w) else "capitalised" if w[0].isupper() else "other"
      tag = next(iter(c))
      once.setdefault(shape, {}).setdefault(tag, 0)
      once[shape][tag] += 1
  fallback = {s: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for s, c in once.items()}
  if lowercase:
    assert "capitalised" not in fallback and tagger.unknown["capitalised"] == "NN"  # no such shape: the commonest
  else:
    assert fallback["capitalised"] == tagger.unknown["capitalised"] == "NNP"  # the NNP/NN rule, from the data
  assert fallback["other"] == tagger.unknown["other"] == "NN"
  right = total = 0
  for words, tags in dev:
    for w, t in zip(words, tags):
      shape = "number" if any(ch.isdigit() for ch in w) else "capitalised" if w[0].isupper() else "other"
      right += (best[w] if w in best else fallback[shape]) == t
      total += 1
  assert total == 35202
  assert tagger.accuracy(dev) == pytest.approx(100 * right / total)
  assert tagger.accuracy(dev) > 80
  assert (tagger.accuracy(dev) < 87) == lowercase  # capitalisation is worth points: 88.5 cased, 81.9 lowercased


def _task(train, dev, validation_size=2):
  """A classification task's rows as ``task_baselines`` reads them: (text, label) pairs, the last
  ``validation_size`` training rows carved as validation."""
  rows = lambda pairs: [types.SimpleNamespace(text_a=t, text_b=None, label=y) for t, y in pairs]
  return types.SimpleNamespace(
      head_type="classification", carved=lambda: (rows(train[:-validation_size]), rows(train[-validation_size:])),
      training_examples=lambda: rows(train), split_examples=lambda split: rows(dev))


def test_tfidf_that_cannot_be_fitted_is_reported_beside_the_majority_class_not_raised():
  emoji = [("\N{THUMBS UP SIGN}", "pos"), ("\N{THUMBS DOWN SIGN}", "neg")] * 5
  found = baselines.task_baselines(_task(emoji, emoji[:4]))
  assert found["majority"] == pytest.approx(50.0) and found["tfidf_logreg"] is None
  assert found["tfidf_logreg_unavailable"] == "no word of two or more letters or digits in the training texts"
  line = baselines.format_baselines("t", found, 61.0, 3)
  assert ("t dev accuracy, 10 training rows: majority class 50.0 | TF-IDF + logistic regression n/a (no word of "
          "two or more letters or digits in the training texts) | fine-tuned network median 61.0 (3 trials)") == line
  two_rows = [("a fine film", "pos"), ("fine", "pos"), ("a dull film", "neg")]
  found = baselines.task_baselines(_task(two_rows, two_rows, validation_size=1))
  assert found["tfidf_logreg_unavailable"] == "one class in the rows it would be fitted on"
  words = [("a fine film", "pos"), ("a dull film", "neg")] * 3
  found = baselines.task_baselines(_task(words, words))
  assert found["tfidf_logreg"] == pytest.approx(100.0) and "tfidf_logreg_unavailable" not in found
