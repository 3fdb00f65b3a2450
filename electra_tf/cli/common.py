"""What every command line shares: one place that turns expected failures into one line, and the sample
setup a command uses when given no data arguments."""

import argparse
import pathlib
import sys
import typing

from electra_tf import presets, sample_data
from electra_tf.errors import ElectraError, HParamError, first_line
from electra_tf.runtime import signals


def run_cli(main: typing.Callable[[], typing.Any]) -> int:
  """Runs ``main()`` and returns the exit status: 0; 2 when an ``ElectraError`` or a file-system error
  became ``error: <first line>`` on stderr (anything else is a bug and keeps its traceback); 128 + the signal
  when a stop signal ended the job early (its checkpoint saved: rerunning resumes it)."""
  caught_before = len(signals.stop_signals_caught())
  status = 0
  try:
    main()
  except (ElectraError, OSError) as e:
    print(f"error: {first_line(e)}", file=sys.stderr)
    status = 2
  stopped = signals.stop_signals_caught()[caught_before:]
  return 128 + stopped[0] if stopped else status


class ArgumentParser(argparse.ArgumentParser):
  """argparse with the commands' one-line errors: a bad or missing flag prints ``error: <what> (see <prog>
  --help)`` and exits 2, instead of the usage block and ``<prog>: error: ...``."""

  def error(self, message: str):
    self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
  """An argparse ``type`` for counts that must be at least 1 (argparse prints the message, exit status 2)."""
  try:
    value = int(text)
  except ValueError:
    raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
  if value < 1:
    raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
  return value


# Arguments of the configs' create() that come from flags, never from --hparams.
FLAG_ONLY_HPARAMS = {"model_name": "--model-name", "data_dir": "--data-dir", "preset": "--model-size"}


def reject_hparams_set_by_flags(hparams: dict):
  """Raises HParamError for an ``--hparams`` key that only a flag sets (the reference fails there with a
  TypeError)."""
  for key, flag in FLAG_ONLY_HPARAMS.items():
    if key in hparams:
      raise HParamError(f"hparam '{key}' is set by {flag}, not --hparams; pass {flag} instead")


class SampleSetup(typing.NamedTuple):
  """The embedded sample data, for a command given no data arguments (``--data-dir`` etc.)."""
  root: pathlib.Path
  vocab_file: pathlib.Path
  model_name: str

  @property
  def vocab_size(self) -> int:
    return sample_data.vocab_size_of(self.vocab_file)

  def pretraining_hparams(self) -> dict:
    return presets.sample_pretraining_hparams(self.vocab_size)

  def finetuning_hparams(self) -> dict:
    return presets.sample_finetuning_hparams(self.vocab_size)


def sample_setup(build_records: bool) -> SampleSetup:
  """Prepares ``./sample_run`` (or ``$ELECTRA_TF_SAMPLE_DIR``) once: text, a vocab and, with
  ``build_records``, the pre-training TFRecords."""
  root = sample_data.ensure_sample_setup(build_records=build_records)
  return SampleSetup(root, root / "vocab.txt", presets.SAMPLE_MODEL_NAME)
