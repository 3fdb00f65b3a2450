"""Classical baselines beside every neural result: what a practitioner tries first.

- ``majority_accuracy``: always predict the commonest label of the *training* examples.
- ``TfidfLogReg`` / ``tfidf_logreg``: TF-IDF of unigrams and bigrams (scikit-learn's ``TfidfVectorizer`` with
  ``ngram_range=(1, 2)``, its other settings default: lowercased, its default token pattern, l2-normalised)
  and scikit-learn's ``LogisticRegression`` (lbfgs, ``max_iter`` 1,000). A sentence pair is represented as
  ``[v(a), v(b), v(a) * v(b)]`` with one vectorizer fitted on both sides of the training pairs: the product
  carries the words the two sentences share. ``C`` is chosen from ``C_GRID`` on a validation split (ties:
  the smaller C, the stronger regularisation); dev is scored once, with the chosen C.
- ``MostFrequentTagger``: each training word's commonest tag (exact word form; ties: the alphabetically first
  tag). Unknown words get the commonest tag of the training words of the same *shape* seen only once
  (hapax legomena, the words most like unseen ones): shape ``number`` (has a digit), ``capitalised``
  (first character upper case) or ``other``. On Penn Treebank data this gives NNP for capitalised and NN for
  other unknown words, derived from the data rather than written in; a shape without hapaxes falls back to
  the commonest tag overall. ``lowercase=True`` looks words up lowercased, shapes included: the information
  an uncased model's input keeps (no capitalisation, so no ``capitalised`` shape).
"""

import collections
import typing

import scipy.sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
MAX_ITER = 1000


def accuracy(predicted: typing.Sequence, gold: typing.Sequence) -> float:
  """Percent of positions where ``predicted`` equals ``gold``."""
  if len(predicted) != len(gold) or not gold:
    raise ValueError(f"{len(predicted)} predictions for {len(gold)} gold labels")
  return 100.0 * sum(p == g for p, g in zip(predicted, gold)) / len(gold)


def majority_label(train_labels: typing.Sequence):
  """The commonest training label (ties: the smallest label)."""
  counts = collections.Counter(train_labels)
  return min(counts, key=lambda label: (-counts[label], label))


def majority_accuracy(train_labels: typing.Sequence, eval_labels: typing.Sequence) -> float:
  return accuracy([majority_label(train_labels)] * len(eval_labels), list(eval_labels))


class TfidfLogReg:
  """TF-IDF (1-2 grams) + logistic regression for single sentences (``texts_b`` None) or sentence pairs."""

  def __init__(self, c: float = 1.0):
    self.c = c
    self.vectorizer = TfidfVectorizer(ngram_range=(1, 2))
    self.model = LogisticRegression(C=c, max_iter=MAX_ITER)

  def _features(self, texts_a, texts_b):
    a = self.vectorizer.transform(texts_a)
    if texts_b is None:
      return a
    b = self.vectorizer.transform(texts_b)
    return scipy.sparse.hstack([a, b, a.multiply(b)]).tocsr()

  def fit(self, texts_a, labels, texts_b=None) -> "TfidfLogReg":
    self.vectorizer.fit(list(texts_a) + (list(texts_b) if texts_b is not None else []))
    self.model.fit(self._features(texts_a, texts_b), list(labels))
    return self

  def predict(self, texts_a, texts_b=None) -> list:
    return list(self.model.predict(self._features(texts_a, texts_b)))


class Examples(typing.NamedTuple):
  """Texts and labels of one split (``texts_b`` None for single-sentence tasks)."""
  texts_a: list
  labels: list
  texts_b: typing.Optional[list] = None


def tfidf_logreg(train: Examples, validation: Examples, dev: typing.Optional[Examples] = None,
                 c_grid: typing.Sequence[float] = C_GRID) -> dict:
  """C chosen on ``validation`` (best accuracy, ties: the smaller C); dev scored with that C only.
  Returns ``{"C", "validation": {C: accuracy}, "validation_accuracy", "dev_accuracy"}`` (dev: None if not given)."""
  scores = {}
  for c in sorted(c_grid):
    model = TfidfLogReg(c).fit(train.texts_a, train.labels, train.texts_b)
    scores[c] = accuracy(model.predict(validation.texts_a, validation.texts_b), validation.labels)
  best = max(scores, key=lambda c: (scores[c], -c))
  result = {"C": best, "validation": scores, "validation_accuracy": scores[best], "dev_accuracy": None}
  if dev is not None:
    model = TfidfLogReg(best).fit(train.texts_a, train.labels, train.texts_b)
    result["dev_accuracy"] = accuracy(model.predict(dev.texts_a, dev.texts_b), dev.labels)
  return result


def word_shape(word: str) -> str:
  if any(ch.isdigit() for ch in word):
    return "number"
  return "capitalised" if word[:1].isupper() else "other"


def _commonest(counts: collections.Counter) -> str:
  return min(counts, key=lambda tag: (-counts[tag], tag))


class MostFrequentTagger:
  """Each known word's commonest training tag; unknown words by shape (module docstring)."""

  def __init__(self, lowercase: bool = False):
    self.lowercase = lowercase

  def _key(self, word: str) -> str:
    return word.lower() if self.lowercase else word

  def fit(self, sentences: typing.Iterable[typing.Tuple[typing.Sequence[str], typing.Sequence[str]]]):
    per_word = collections.defaultdict(collections.Counter)
    overall = collections.Counter()
    for words, tags in sentences:
      for word, tag in zip(words, tags):
        per_word[self._key(word)][tag] += 1
        overall[tag] += 1
    if not overall:
      raise ValueError("no tagged words to fit on")
    self.lookup = {word: _commonest(counts) for word, counts in per_word.items()}
    hapax = collections.defaultdict(collections.Counter)
    for word, counts in per_word.items():
      if sum(counts.values()) == 1:
        hapax[word_shape(word)].update(counts)
    default = _commonest(overall)
    self.unknown = {shape: _commonest(hapax[shape]) if hapax[shape] else default
                    for shape in ("number", "capitalised", "other")}
    return self

  def tag(self, words: typing.Sequence[str]) -> list:
    keys = [self._key(w) for w in words]
    return [self.lookup.get(k) or self.unknown[word_shape(k)] for k in keys]

  def accuracy(self, sentences) -> float:
    """Percent of words tagged right over all ``(words, tags)`` sentences."""
    predicted, gold = [], []
    for words, tags in sentences:
      predicted += self.tag(words)
      gold += list(tags)
    return accuracy(predicted, gold)



def glue_examples(examples: typing.Sequence) -> Examples:
  """A GLUE task's ``InputExample`` list (``Task.get_examples``) as baseline ``Examples``."""
  has_b = any(e.text_b is not None for e in examples)
  return Examples([e.text_a for e in examples], [e.label for e in examples],
                  [e.text_b for e in examples] if has_b else None)


def tfidf_unavailable(fit_part: Examples, validation: Examples) -> typing.Optional[str]:
  """Why TF-IDF + LR cannot be fitted to choose its C (None when it can): no validation rows, one class in the
  rows it is fitted on, or not one word of two or more letters or digits (the vectorizer's token pattern) in
  them."""
  if not validation.labels:
    return "no validation rows to choose C on"
  if len(set(fit_part.labels)) < 2:
    return "one class in the rows it would be fitted on"
  analyzer = TfidfVectorizer(ngram_range=(1, 2)).build_analyzer()
  if not any(analyzer(t) for t in list(fit_part.texts_a) + list(fit_part.texts_b or [])):
    return "no word of two or more letters or digits in the training texts"
  return None


def task_baselines(task, eval_split: str = "dev") -> typing.Optional[dict]:
  """The classical baselines of a fine-tuning ``task`` on the rows the network trains on, scored on
  ``eval_split``: majority class and TF-IDF + LR (C chosen on the validation split carved from training, then
  refitted on the network's training rows) for a classification task; a most-frequent-tag lookup for a tagging
  task (word accuracy). None for other tasks."""
  if task.head_type == "classification":
    fit_part, validation = task.carved()
    fit_part, validation = glue_examples(fit_part), glue_examples(validation)
    train = glue_examples(task.training_examples())
    evaluated = glue_examples(task.split_examples(eval_split))
    found = {"majority": majority_accuracy(train.labels, evaluated.labels), "metric": "accuracy",
             "train_rows": len(train.labels), "split": eval_split}
    why_not = tfidf_unavailable(fit_part, validation)
    if why_not:
      return {**found, "tfidf_logreg": None, "tfidf_logreg_C": None, "tfidf_logreg_unavailable": why_not}
    chosen = tfidf_logreg(fit_part, validation)
    model = TfidfLogReg(chosen["C"]).fit(train.texts_a, train.labels, train.texts_b)
    return {**found, "tfidf_logreg": accuracy(model.predict(evaluated.texts_a, evaluated.texts_b), evaluated.labels),
            "tfidf_logreg_C": chosen["C"]}
  if task.head_type == "tagging" and hasattr(task, "spec"):
    sentences = [(e.words, e.tags) for e in task.training_examples()]
    evaluated = [(e.words, e.tags) for e in task.split_examples(eval_split)]
    return {"lookup_tagger": MostFrequentTagger().fit(sentences).accuracy(evaluated), "metric": "accuracy",
            "train_rows": len(sentences), "split": eval_split}
  return None


def format_baselines(task_name: str, found: dict, network_median: typing.Optional[float], n_trials: int) -> str:
  """One line: the baselines beside the network's median on the same rows."""
  parts = []
  if "majority" in found:
    parts.append(f"majority class {found['majority']:.1f}")
    if found.get("tfidf_logreg") is None:
      parts.append(f"TF-IDF + logistic regression n/a ({found['tfidf_logreg_unavailable']})")
    else:
      parts.append(f"TF-IDF + logistic regression (C {found['tfidf_logreg_C']:g}) {found['tfidf_logreg']:.1f}")
  if "lookup_tagger" in found:
    parts.append(f"most-frequent-tag lookup {found['lookup_tagger']:.1f}")
  if network_median is not None:
    parts.append(f"fine-tuned network median {network_median:.1f} ({n_trials} trial{'s' if n_trials != 1 else ''})")
  return (f"{task_name} {found['split']} {found['metric']}, {found['train_rows']} training rows: "
          + " | ".join(parts))
