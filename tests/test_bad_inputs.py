"""The cheap rows of scripts/bad_input_tour.py (no model is built): each bad input gives exit 2, exactly one
``error:`` line on stderr and leaves nothing behind."""

import os
import pathlib
import subprocess
import sys

import pytest

from electra_tf.cli import finetune, pretrain

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


def _latin1_json(root):
  """An hparams file saved as Latin-1: the e-acute is the byte 0xE9, not UTF-8."""
  path = root / "hparams.json"
  path.write_bytes('{"model_name_suffix": "caf\u00e9"}'.encode("latin-1"))
  return path


# The --hparams rows run the commands' main() in this process (the same run_cli that turns an ElectraError
# into one line): each parse fails before TensorFlow or any output is touched.
HPARAMS_CASES = {
    # Python's json reads NaN and Infinity, and NaN passes every range comparison.
    "nan_hparam": (pretrain, '{"mask_prob": NaN}', "hparam 'mask_prob': nan is not a finite number"),
    "nan_finetuning_hparam": (finetune, '{"warmup_proportion": NaN}',
                              "hparam 'warmup_proportion': nan is not a finite number"),
    "infinite_hparam": (finetune, '{"num_train_epochs": Infinity}',
                        "hparam 'num_train_epochs': inf is not a finite number"),
    "overflowing_hparam": (pretrain, '{"model_hparam_overrides": {"initializer_range": 1e999}}',
                           "hparam 'model_hparam_overrides.initializer_range': inf is not a finite number"),
    "hparams_file_not_utf8": (pretrain, _latin1_json, "is not UTF-8 text"),
    "hparam_set_by_a_flag": (pretrain, '{"model_name": "other"}', "hparam 'model_name' is set by --model-name"),
}


@pytest.mark.parametrize("case", sorted(HPARAMS_CASES))
def test_bad_hparams_are_one_error_line_and_exit_2(case, tmp_path, capsys):
  command, hparams, expected = HPARAMS_CASES[case]
  hparams = hparams(tmp_path) if callable(hparams) else hparams
  before = {p for p in tmp_path.rglob("*")}
  argv = ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", str(hparams)]
  code = command.main(argv + (["--task", "sst"] if command is finetune else []))
  lines = capsys.readouterr().err.splitlines()
  assert code == 2, lines
  assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], lines
  assert {p for p in tmp_path.rglob("*")} == before


@pytest.mark.parametrize("seeds", ["-1", "0"])
def test_quickstart_refuses_a_seed_count_below_one(seeds, capsys):
  """--seeds -1 used to fine-tune forever (negative num_trials means 'until stopped')."""
  from electra_tf import quickstart  # pylint: disable=g-import-not-at-top  (loads the trainers)
  with pytest.raises(SystemExit) as exit_info:
    quickstart.parse_args(["--seeds", seeds])
  assert exit_info.value.code == 2
  assert f"error: argument --seeds: must be at least 1, got {seeds}" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["build_vocab", "build_data", "pretrain", "finetune", "convert", "quickstart"])
def test_a_flag_error_is_one_line_naming_the_help(command, capsys):
  """argparse's own errors (an unknown flag, a mistyped value) follow the same rule as every other bad input:
  one ``error:`` line and exit 2, not the usage block followed by ``<prog>: error:``."""
  import importlib  # pylint: disable=g-import-not-at-top
  module = importlib.import_module("electra_tf.quickstart" if command == "quickstart" else f"electra_tf.cli.{command}")
  argv = {"convert": ["inspect", "x"], "build_vocab": ["--output", "x"]}.get(command, []) + ["--no-such-flag"]
  with pytest.raises(SystemExit) as exit_info:
    module.main(argv)
  assert exit_info.value.code == 2
  lines = capsys.readouterr().err.splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: unrecognized arguments: --no-such-flag (see "), lines
  assert lines[0].endswith(" --help)"), lines
