"""Chunking: BIOES conversion and span-level precision / recall / F1 (the reference's tagging utils)."""

import typing

import numpy as np

from electra_tf.finetuning.scorers.base import Scorer

_PREFIXES = ("B", "I", "E", "S")


def _split_tag(tag: str):
  """(position, type). 'O' -> (None, 'O'); 'B-NP' -> ('B', 'NP'). A tag with no B/I/E/S prefix (e.g. a
  POS tag such as 'NN' or '-LRB-') is a one-word span of its own type; the reference would crash on it."""
  if tag == "O":
    return None, "O"
  if len(tag) > 2 and tag[0] in _PREFIXES and tag[1] == "-":
    return tag[0], tag[2:]
  return "S", tag


def get_span_labels(sentence_tags, inv_label_mapping=None):
  """Tags (strings, or ids with ``inv_label_mapping``) -> [(start, end, type)] (inclusive ends).

  As the reference: a span closes at B/S/O or at the end of the sentence; I/E continue the open span
  (an I after O opens one), and a span's type is the type of its last tag."""
  if inv_label_mapping:
    sentence_tags = [inv_label_mapping[int(i)] for i in sentence_tags]
  spans, last, last_type, start = [], "O", None, -1
  for i, tag in enumerate(sentence_tags):
    pos, type_ = _split_tag(tag)
    if (pos in ("S", "B") or tag == "O") and last != "O":
      spans.append((start, i - 1, last_type))
    if pos in ("B", "S") or last == "O":
      start = i
    last, last_type = tag, type_
  if sentence_tags and sentence_tags[-1] != "O":
    spans.append((start, len(sentence_tags) - 1, _split_tag(sentence_tags[-1])[1]))
  return spans


def get_tags(span_labels, length: int, encoding: str = "BIOES"):
  """[(start, end, type)] -> one tag per word in ``encoding`` (BIOES: S for one-word spans)."""
  tags = ["O"] * length
  for s, e, t in span_labels:
    for i in range(s, e + 1):
      tags[i] = "I-" + t
    if "E" in encoding:
      tags[e] = "E-" + t
    if "B" in encoding:
      tags[s] = "B-" + t
    if "S" in encoding and s == e:
      tags[s] = "S-" + t
  return tags


class EntityLevelF1Scorer(Scorer):
  """Span precision / recall / F1 x100 over sentences; loss per word (the reference's F1Scorer)."""

  def __init__(self, label_mapping: dict):
    super().__init__()
    self._inv = {v: k for k, v in label_mapping.items()}
    self._labels, self._preds, self._eids = [], [], []
    self._words = 0

  def update(self, outputs):
    self._updated = True
    self._total_loss += float(np.sum(outputs["loss"]))
    for labels, preds, mask, eid in zip(outputs["labels"], outputs["predictions"], outputs["labels_mask"],
                                        outputs["eid"]):
      n = int(round(float(np.sum(mask))))
      self._labels.append(np.asarray(labels[:n]).tolist())
      self._preds.append(np.asarray(preds[:n]).tolist())
      self._eids.append(int(eid))
      self._words += n

  def get_loss(self):
    return self._total_loss / max(1, self._words)

  def _get_results(self):
    n_correct = n_pred = n_gold = 0
    for labels, preds in zip(self._labels, self._preds):
      gold = set(get_span_labels(labels, self._inv)) if labels else set()
      pred = set(get_span_labels(preds, self._inv)) if preds else set()
      n_correct += len(gold & pred)
      n_gold += len(gold)
      n_pred += len(pred)
    if n_correct == 0:
      p = r = f1 = 0.0
    else:
      p, r = 100.0 * n_correct / n_pred, 100.0 * n_correct / n_gold
      f1 = 2 * p * r / (p + r)
    return [("precision", p), ("recall", r), ("f1", f1), ("loss", self.get_loss())]


def is_span_scheme(tags) -> bool:
  """Whether every tag is ``O`` or carries a ``B-``/``I-``/``E-``/``S-`` prefix (a span encoding)."""
  return all(tag == "O" or (len(tag) > 2 and tag[0] in _PREFIXES and tag[1] == "-") for tag in tags)


class TaggingScorer(EntityLevelF1Scorer):
  """A user's tagging task: word accuracy x100, and span precision / recall / F1 when the tag set is a span
  encoding (``is_span_scheme``); loss per word. With ``gold`` ({example id: every word's label id}) both are
  over every word, a word the input could not hold counting as wrong (its gold spans as missed); without it,
  over the words the model saw."""

  def __init__(self, label_mapping: dict, gold: typing.Optional[dict] = None):
    super().__init__(label_mapping)
    self._gold = gold

  def _get_results(self):
    if self._gold is not None:
      self._labels = [list(self._gold[eid]) for eid in self._eids]
    words = sum(len(labels) for labels in self._labels)
    correct = sum(int(p == g) for labels, preds in zip(self._labels, self._preds) for p, g in zip(preds, labels))
    results = [("accuracy", 100.0 * correct / max(1, words))]
    if is_span_scheme(self._inv.values()):
      results += [r for r in super()._get_results() if r[0] != "loss"]
    return results + [("loss", self.get_loss())]
