"""Seed comparisons against values counted by hand: the sign test's binomial tail and the Mann-Whitney null
distribution of two samples of five (C(10,5) = 252 equally likely orderings)."""

import pytest

from electra_tf import seed_comparison

# Five paired seeds of an earlier main job (sst dev accuracy, pre-trained layers vs random weights).
PRETRAINED = [70.6, 72.7, 72.6, 71.5, 72.3]
RANDOM = [70.2, 70.7, 72.1, 70.0, 71.6]


def test_paired_and_unpaired_tests_of_overlapping_seeds():
  got = seed_comparison.compare_seeds(PRETRAINED, RANDOM)
  assert got["seeds_ahead"] == got["seeds"] == 5
  assert got["sign_test_p"] == pytest.approx(1 / 32)  # five heads in five fair tosses
  assert got["median_difference"] == pytest.approx(72.3 - 70.7)
  assert got["beyond_seed_spread"] is False  # 70.6 < 72.1
  # U = 2 + 5 + 5 + 3 + 5 = 20 of 25 pairs. The orderings with U >= 20 are the partitions of 25 - U = 0..5
  # into at most 5 parts of at most 5: 1 + 1 + 2 + 3 + 5 + 7 = 19, so two-sided p = 2 * 19 / 252.
  mw = seed_comparison.mann_whitney(PRETRAINED, RANDOM)
  assert mw["U"] == 20 and mw["n_pairs"] == 25
  assert got["mann_whitney_p"] == pytest.approx(38 / 252)


def test_separated_seeds_and_ties():
  got = seed_comparison.compare_seeds([80, 81, 82, 83, 84], [70, 71, 72, 73, 74])
  assert got["beyond_seed_spread"] is True and got["mann_whitney_p"] == pytest.approx(2 / 252)
  # a tied seed is dropped from the sign test: 2 ahead of 3 untied pairs, P(X >= 2 | n=3) = 4 / 8
  tied = seed_comparison.compare_seeds([71, 72, 70, 75], [70, 72, 71, 74])
  assert tied["seeds_ahead"] == 2 and tied["sign_test_p"] == pytest.approx(0.5)
  assert seed_comparison.compare_seeds([70], [70])["sign_test_p"] == 1.0


def test_unpaired_results_are_refused():
  with pytest.raises(ValueError, match="same seeds"):
    seed_comparison.compare_seeds([70, 71], [70])
