"""experiments/identity_cue_check.py: the context-free detector's AUC on cases whose answer is known."""

import importlib.util

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from conftest import REPO_ROOT


@pytest.fixture(scope="module")
def check():
  spec = importlib.util.spec_from_file_location("identity_cue_check",
                                                REPO_ROOT / "experiments" / "identity_cue_check.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _tokens(rng, n, vocab=200):
  freq = 1.0 / np.arange(1, vocab + 1)  # Zipf, as text
  return rng.choice(vocab, n, p=freq / freq.sum())


def test_a_unigram_generator_leaves_no_identity_cue(check):
  rng = np.random.default_rng(0)
  original = _tokens(rng, 200_000)
  replaced = rng.random(len(original)) < 0.15
  sampled = _tokens(rng, len(original))  # the same distribution as the text
  ids = np.where(replaced, sampled, original)
  labels = (replaced & (sampled != original)).astype(float)
  halves = np.arange(len(ids)) % 2
  assert abs(check.identity_auc(ids, labels, halves) - 0.5) < 0.02


def test_a_uniform_generator_is_given_away_by_identity(check):
  rng = np.random.default_rng(1)
  original = _tokens(rng, 200_000)
  replaced = rng.random(len(original)) < 0.15
  sampled = rng.integers(0, 200, len(original))  # rare tokens as often as frequent ones
  ids = np.where(replaced, sampled, original)
  labels = (replaced & (sampled != original)).astype(float)
  halves = np.arange(len(ids)) % 2
  # The best context-free score is P(replaced | id); with the true rates it gives this AUC:
  rate = np.bincount(ids, weights=labels, minlength=200) / np.maximum(np.bincount(ids, minlength=200), 1)
  best = roc_auc_score(labels, rate[ids])
  got = check.identity_auc(ids, labels, halves)
  assert best > 0.8 and abs(got - best) < 0.01


def test_checkpoints_lists_initialisation_then_steps_in_order(check, tmp_path):
  for step in (300, 50, 1000):
    (tmp_path / f"ckpt-{step}.index").write_bytes(b"")
  assert check.checkpoints(str(tmp_path)) == [(0, None)] + [(s, str(tmp_path / f"ckpt-{s}")) for s in (50, 300, 1000)]
