"""Comparing two models fine-tuned with the same seeds: the gap, the overlap of the seed ranges and exact tests.

Fine-tuning noise at small scale is often as large as what pre-training adds, so a comparison reports how many
seeds were run and how far the result is from chance, not only the medians. A seed gives both models the same
head, data order and dropout masks, so results pair by seed (the sign test); the Mann-Whitney test ignores the
pairing and asks only whether one set of seeds lies above the other.
"""

import statistics

from scipy import stats


def mann_whitney(x, y) -> dict:
  """Exact two-sided Mann-Whitney U of ``x`` against ``y`` (U counts the pairs where x wins, ties half)."""
  res = stats.mannwhitneyu(list(x), list(y), alternative="two-sided", method="exact")
  return {"U": float(res.statistic), "n_pairs": len(x) * len(y), "p": float(res.pvalue)}


def compare_seeds(treated, control) -> dict:
  """``treated[i]`` and ``control[i]`` come from seed i. Returns the median difference, whether every treated
  seed is above every control seed (``beyond_seed_spread``), the seeds where treated is ahead, the one-sided
  sign test of the paired seeds (ties dropped) and the exact two-sided Mann-Whitney p."""
  treated, control = [float(v) for v in treated], [float(v) for v in control]
  if len(treated) != len(control) or not treated:
    raise ValueError(f"need the same seeds for both models, got {len(treated)} and {len(control)} results")
  ahead = sum(t > c for t, c in zip(treated, control))
  untied = sum(t != c for t, c in zip(treated, control))
  return {"median_difference": statistics.median(treated) - statistics.median(control),
          "beyond_seed_spread": min(treated) > max(control),
          "seeds_ahead": ahead, "seeds": len(treated),
          "sign_test_p": float(stats.binomtest(ahead, untied, 0.5, alternative="greater").pvalue) if untied else 1.0,
          "mann_whitney_p": mann_whitney(treated, control)["p"]}
