"""The cheap rows of scripts/bad_input_tour.py (no model is built): each bad input gives exit 2, exactly one
``error:`` line on stderr and leaves nothing behind (issue #14)."""

import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
PRETRAIN = REPO / "pretrain" / "run_pretraining.py"
BUILD_VOCAB = REPO / "data_prep" / "build_vocab.py"


def _corpus(root):
  d = root / "corpus"
  d.mkdir()
  (d / "a.txt").write_text("The cat sat on the mat.\nIt was warm.\n\nA second document here.\n" * 20,
                           encoding="utf-8")
  return d


def _cases(root):
  corpus = _corpus(root)
  (root / "empty").mkdir()
  return {
      "malformed_hparams": ([PRETRAIN, "--data-dir", root, "--model-name", "m", "--hparams", '{"a": b'],
                            "not valid JSON"),
      "unknown_hparam": ([PRETRAIN, "--data-dir", root, "--model-name", "m", "--hparams", '{"learning_rat": 1}'],
                         "did you mean 'learning_rate'"),
      "out_of_range": ([PRETRAIN, "--data-dir", root, "--model-name", "m", "--hparams", '{"mask_prob": 2}'],
                       "'mask_prob'"),
      "missing_hparams_file": ([PRETRAIN, "--data-dir", root, "--model-name", "m", "--hparams",
                                root / "nope.json"], "does not exist"),
      "missing_corpus": ([BUILD_VOCAB, "--corpus-dir", root / "nope", "--output", root / "out" / "v.txt"],
                         "does not exist"),
      "empty_corpus": ([BUILD_VOCAB, "--corpus-dir", root / "empty", "--output", root / "v.txt",
                        "--vocab-size", 300], "no text"),
      "vocab_output_missing_dir": ([BUILD_VOCAB, "--corpus-dir", corpus, "--output",
                                    root / "no_such_dir" / "v.txt", "--vocab-size", 300], "no_such_dir"),
  }


@pytest.mark.parametrize("case", ["malformed_hparams", "unknown_hparam", "out_of_range", "missing_hparams_file",
                                  "missing_corpus", "empty_corpus", "vocab_output_missing_dir"])
def test_bad_input_is_one_error_line_and_exit_2(case, tmp_path):
  argv, expected = _cases(tmp_path)[case]
  before = {p for p in tmp_path.rglob("*")}
  result = subprocess.run([sys.executable, *map(str, argv)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), check=False)
  errors = [l for l in result.stderr.splitlines() if l.startswith("error:")]
  assert result.returncode == 2, result.stderr[-2000:]
  assert len(errors) == 1, result.stderr[-2000:]
  assert expected in errors[0]
  assert "Traceback" not in result.stderr
  assert {p for p in tmp_path.rglob("*")} == before
