"""Every bad input the commands must refuse, in one table (``CASES``): tests/test_bad_inputs.py runs each case
as a test, and scripts/bad_input_tour.py runs them all and prints one row per case.

The promise each case checks: the command exits with status 2, prints exactly one stderr line starting with
``error:`` that contains the case's ``message``, no traceback, and leaves no file or directory behind.

A case is a ``Case``:

  name     its id: the test's parameter (``pytest tests/test_bad_inputs.py -k NAME``) and a name to read
  what     the bad input in words (the tour's "bad input" column)
  needs    what its set-up needs: ``NOTHING`` (it makes all its files itself; the tests always run it),
           ``DATA`` (the shared test data from $ELECTRA_TEST_DATA: the BERT vocab, WikiText-2, the Wikipedia
           sample, rt_polarity) or ``MODEL`` (also the pre-training records and a tiny pre-trained model,
           built once by ``prepare``; the tests mark these ``slow``)
  args     a function ``args(s: Scene) -> list``: makes the bad input's files under ``s.root`` (``s.dir``,
           ``s.file``, ``s.copy_good``, ``s.out``) and returns the command line after ``python``: a script of
           the checkout (``PRETRAIN``, ``FINETUNE``, ``BUILD_DATA``, ``BUILD_VOCAB``) or ``-m`` and a module
           (``CONVERT``, ``QUICKSTART``), then its flags
  message  a fragment of the one ``error:`` line the command must print
  exit     the exit status (2 for every bad input)

To add a case, append ``Case(...)`` to ``CASES`` (the fine-tuning section at the end has a place for cases
on a user's own CSV / JSON Lines files): the tests pick it up under its ``needs`` and the tour prints it as
a new last row (row numbers, which ``--only`` takes, stay as they are). Write its files under ``s.root``
with names no other case uses (the tour runs every case in one scratch directory); the good inputs
(``s.good``, ``s.vocab``, ``s.ckpt``, ``s.corpus``) are shared and must not be changed. For example::

    Case("csv_without_a_label_column", "own CSV file without a label column", NOTHING,
         lambda s: [FINETUNE, "--train-file", s.file("own_csv/train.csv", "text\\na fine film\\n"), ...],
         "train.csv"),

then ``pytest tests/test_bad_inputs.py -k csv_without_a_label_column`` runs it and
``python scripts/bad_input_tour.py --only <its row>`` shows its row.

Nothing here needs pytest: the tour imports this file from the checkout.
"""

import bz2
import dataclasses
import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys
import typing

import _forked_commands

REPO = pathlib.Path(__file__).resolve().parent.parent
PY = sys.executable
BUILD_VOCAB = str(REPO / "data_prep" / "build_vocab.py")
BUILD_DATA = str(REPO / "data_prep" / "build_pretraining_dataset.py")
PRETRAIN = str(REPO / "pretrain" / "run_pretraining.py")
FINETUNE = str(REPO / "finetune" / "run_finetuning.py")
CONVERT = ["-m", "electra_tf.convert"]
QUICKSTART = ["-m", "electra_tf.quickstart"]

NOTHING, DATA, MODEL = "nothing", "data", "model"
NEEDS = (NOTHING, DATA, MODEL)

SEQ = 32
# use_xla false: the tiny preset compiles its step with XLA, which would take most of these two steps' time; the
# cases need only the model.
TINY = {"model_size": "tiny", "vocab_size": 30522, "max_seq_length": SEQ, "train_batch_size": 8,
        "num_train_steps": 2, "save_checkpoints_steps": 2, "iterations_per_loop": 1, "do_eval": False,
        "num_warmup_steps": 0, "use_xla": False}
FT = {"model_size": "tiny", "vocab_size": 30522, "max_seq_length": SEQ, "train_batch_size": 8,
      "eval_batch_size": 8, "num_train_epochs": 0.01}


def data_dir() -> pathlib.Path:
  """``ELECTRA_TEST_DATA``, default ``../shared/data`` beside the checkout (as in tests/conftest.py)."""
  return pathlib.Path(os.environ.get("ELECTRA_TEST_DATA", REPO.parent / "shared" / "data"))


class SetupError(RuntimeError):
  """A command that makes a good input failed: the case could not be set up."""


# None: every command is a fresh ``python`` process (the tour). tests/test_bad_inputs.py sets a
# ``_forked_commands.CommandServer``: each command then runs in a child forked from a process that imported
# TensorFlow once.
commands = None


def run(argv, cwd, timeout=900) -> subprocess.CompletedProcess:
  """``python *argv`` in ``cwd`` with the checkout's package and TensorFlow's start-up logging quiet."""
  if commands is not None:
    return commands.run(argv, cwd, timeout)
  return subprocess.run([PY, *map(str, argv)], cwd=cwd, capture_output=True, text=True,
                        env=_forked_commands.environment(), timeout=timeout, check=False)


def run_ok(argv, cwd):
  r = run(argv, cwd)
  if r.returncode != 0:
    raise SetupError(f"set-up command failed: {' '.join(map(str, argv))}\n{r.stderr[-3000:]}")


def prepare(inputs: pathlib.Path, needs: str, data: typing.Optional[pathlib.Path] = None):
  """The good inputs the bad ones are made from, under ``inputs``: ``corpus/`` and ``good/`` (a data dir).

  NOTHING: a small made-up corpus and an empty ``good/``. DATA: 1,500 lines of WikiText-2 as the corpus, and
  in ``good/`` the BERT vocab and 40 rt_polarity rows as the sst task's train.tsv and dev.tsv. MODEL: also
  ``good/pretrain_tfrecords`` (32-token records of the corpus) and ``good/models/tiny``, two steps of
  pre-training a tiny model."""
  assert needs in NEEDS, needs
  data = pathlib.Path(data or data_dir())
  corpus, good = inputs / "corpus", inputs / "good"
  corpus.mkdir(parents=True, exist_ok=True)
  good.mkdir(exist_ok=True)
  if needs == NOTHING:
    (corpus / "a.txt").write_text("The cat sat on the mat.\nIt was warm.\n\nA second document here.\n" * 20,
                                  encoding="utf-8")
    return
  with gzip.open(data / "corpus" / "wikitext-2" / "train.raw.gz", "rt", encoding="utf-8") as f:
    lines = [next(f) for _ in range(1500)]
  (corpus / "wiki.txt").write_text("".join(lines), encoding="utf-8")
  shutil.copy(data / "vocab" / "bert-base-uncased-vocab.txt", good / "vocab.txt")
  if needs == MODEL:
    run_ok([BUILD_DATA, "--corpus-dir", corpus, "--vocab-file", good / "vocab.txt", "--output-dir",
            good / "pretrain_tfrecords", "--max-seq-length", SEQ, "--num-shards", 2, "--no-progress"], inputs)
    run_ok([PRETRAIN, "--data-dir", good, "--model-name", "tiny", "--hparams", json.dumps(TINY), "--no-progress"],
           inputs)
  ft = good / "finetuning_data" / "sst"
  ft.mkdir(parents=True, exist_ok=True)
  rt = data / "glue-style" / "rt_polarity"
  for split in ("train", "dev"):
    rows = (rt / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[:41]
    (ft / f"{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


class Scene:
  """Where a case runs: ``root`` is the scratch directory (the command's working directory, where the case
  writes its bad input and where nothing may be left behind); ``inputs`` holds what ``prepare`` made (the
  tour: ``root`` itself; the tests: a directory the cases of a module share)."""

  def __init__(self, root, inputs=None, data=None):
    self.root = pathlib.Path(root)
    self.inputs = pathlib.Path(inputs or root)
    self.data = pathlib.Path(data or data_dir())

  good = property(lambda self: self.inputs / "good")
  corpus = property(lambda self: self.inputs / "corpus")
  vocab = property(lambda self: self.good / "vocab.txt")
  ckpt = property(lambda self: self.good / "models" / "tiny")

  def dir(self, name) -> pathlib.Path:
    d = self.root / name
    d.mkdir(parents=True, exist_ok=True)
    return d

  def file(self, name, data: typing.Union[bytes, str]) -> pathlib.Path:
    p = self.root / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
      p.write_text(data, encoding="utf-8")
    else:
      p.write_bytes(data)
    return p

  def out(self, name) -> pathlib.Path:
    """A path under ``out/``, a directory that exists; the command must not create the path."""
    return self.dir("out") / name

  def copy_good(self, name, shards=True) -> pathlib.Path:
    """A fresh data dir with the good vocab, records (if ``shards``) and sst data, but no models."""
    d = self.root / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    shutil.copy(self.vocab, d / "vocab.txt")
    if shards:
      shutil.copytree(self.good / "pretrain_tfrecords", d / "pretrain_tfrecords")
    shutil.copytree(self.good / "finetuning_data", d / "finetuning_data")
    return d

  def listing(self) -> typing.Set[str]:
    """Every file and directory under ``root`` (and ``inputs``), as names relative to ``root``."""
    paths = set(self.root.rglob("*"))
    if self.root not in self.inputs.parents and self.inputs != self.root:
      paths |= set(self.inputs.rglob("*"))
    return {os.path.relpath(p, self.root) for p in paths}


@dataclasses.dataclass(frozen=True)
class Case:
  name: str
  what: str
  needs: str
  args: typing.Callable[[Scene], list]
  message: str
  exit: int = 2


@dataclasses.dataclass
class Outcome:
  """What a case's command did."""
  argv: list
  returncode: int
  stderr: str
  left_behind: typing.List[str]

  @property
  def error_lines(self) -> typing.List[str]:
    return [l for l in self.stderr.splitlines() if l.startswith("error:")]

  @property
  def stderr_lines(self) -> typing.List[str]:
    """The non-blank stderr lines (TensorFlow's start-up lines included)."""
    return [l for l in self.stderr.splitlines() if l.strip()]

  def problems(self, case: Case) -> typing.List[str]:
    """How the command broke the promise; empty when it kept it."""
    found = []
    if self.returncode != case.exit:
      found.append(f"exit status {self.returncode}, not {case.exit}")
    errors = self.error_lines
    if len(errors) != 1:
      found.append(f"{len(errors)} `error:` lines, not 1")
    elif case.message not in errors[0]:
      found.append(f"the `error:` line does not contain {case.message!r}")
    if "Traceback (most recent call last)" in self.stderr:
      found.append("a traceback on stderr")
    if self.left_behind:
      found.append(f"left behind: {', '.join(self.left_behind)}")
    return found

  def report(self, case: Case) -> str:
    return (f"{case.name} ({case.what}): {'; '.join(self.problems(case)) or 'as promised'}\n"
            f"command: python {' '.join(map(str, self.argv))}\nstderr (the end):\n{self.stderr[-3000:]}")


def run_case(case: Case, scene: Scene, timeout=900) -> Outcome:
  """Sets the case up in ``scene``, runs its command there and notes what it left behind."""
  argv = case.args(scene)
  before = scene.listing()
  r = run(argv, scene.root, timeout=timeout)
  return Outcome(argv, r.returncode, r.stderr, sorted(scene.listing() - before))


def by_name(name) -> Case:
  return next(case for case in CASES if case.name == name)


# ---- set-up helpers the cases share -------------------------------------------------------------------------

LATIN1_TEXT = ("Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e is sweet.\n" * 50).encode("latin-1")


def _corpus_with(s: Scene, name, data: bytes) -> pathlib.Path:
  s.file(f"{name}/file.txt", data)
  return s.root / name


def _first_lines_of_vocab(s: Scene, name, n) -> pathlib.Path:
  return s.file(name, "\n".join(s.vocab.read_text(encoding="utf-8").splitlines()[:n]) + "\n")


def _cut_shard(d: pathlib.Path, fraction=0.6):
  shard = sorted((d / "pretrain_tfrecords").glob("pretrain_data.tfrecord*"))[0]
  raw = shard.read_bytes()
  shard.write_bytes(raw[: int(len(raw) * fraction)])


def _hf_export(s: Scene, name) -> pathlib.Path:
  """The tiny model's discriminator exported as a Hugging Face directory (made once per scratch directory)."""
  d = s.root / name
  if not d.exists():
    run_ok([*CONVERT, "export-hf", s.ckpt, "--what", "discriminator", "--output", d], s.root)
  return d


def _pretrain(data_dir, hparams: str, model="m"):
  return [PRETRAIN, "--data-dir", data_dir, "--model-name", model, "--hparams", hparams]


def _finetune(s: Scene, data_dir=None, ckpt=None, hparams=None, task="sst", extra=()):
  """Fine-tunes the tiny model on ``data_dir`` (default the good one) as the tests' tiny ``FT`` settings."""
  return [FINETUNE, "--data-dir", data_dir or s.good, "--model-name", "ft", "--task", task, "--init-checkpoint",
          ckpt or s.ckpt, *extra, "--hparams", json.dumps(hparams or FT), "--no-progress"]


def _build_data(s: Scene, output, *flags, corpus=None, vocab=None):
  return [BUILD_DATA, "--corpus-dir", corpus or s.corpus, "--vocab-file", vocab or s.vocab, "--output-dir",
          output, *flags, "--num-shards", 1, "--no-progress"]


def _ft_with_train(s: Scene, name, text):
  d = s.copy_good(name, shards=False)
  (d / "finetuning_data" / "sst" / "train.tsv").write_text(text, encoding="utf-8")
  return _finetune(s, d)


def _existing_export(s: Scene):
  d = s.root / "existing_export"
  if not d.exists():  # an earlier export: the second must refuse before writing anything
    run_ok([*CONVERT, "export-hf", s.ckpt, "--output", d], s.root)
    shutil.rmtree(d / "discriminator")  # generator/ exists, discriminator/ not: nothing may be added
  return [*CONVERT, "export-hf", s.ckpt, "--output", d]


def _pretrain_without_records(s: Scene):
  d = s.dir("pt_nodata")
  shutil.copy(s.vocab, d / "vocab.txt")
  return [*_pretrain(d, json.dumps(TINY)), "--no-progress"]


def _pretrain_vocab_mismatch(s: Scene):
  d = s.copy_good("pt_vocab")
  _first_lines_of_vocab(s, "pt_vocab/vocab.txt", 5000)
  return [*_pretrain(d, json.dumps({**TINY, "vocab_size": 5000})), "--no-progress"]


def _pretrain_on_cut_shard(s: Scene):
  d = s.copy_good("pt_cut")
  _cut_shard(d)
  return [*_pretrain(d, json.dumps({**TINY, "num_train_steps": 60, "save_checkpoints_steps": 60})), "--no-progress"]


def _verify_cut_shard(s: Scene):
  d = s.copy_good("verify_cut")
  _cut_shard(d)
  return [BUILD_DATA, "--verify", "--output-dir", d / "pretrain_tfrecords", "--no-progress"]


def _verify_flipped_byte(s: Scene):
  d = s.copy_good("verify_flip")
  shard = sorted((d / "pretrain_tfrecords").glob("pretrain_data.tfrecord*"))[0]
  raw = bytearray(shard.read_bytes())
  raw[len(raw) // 2] ^= 0xFF
  shard.write_bytes(bytes(raw))
  return [BUILD_DATA, "--verify", "--output-dir", d / "pretrain_tfrecords", "--no-progress"]


def _finetune_without_data(s: Scene):
  d = s.dir("ft_nodata")
  shutil.copy(s.vocab, d / "vocab.txt")
  return _finetune(s, d)


def _foreign_checkpoint(s: Scene):
  d = s.copy_good("ft_foreign", shards=False)
  foreign = s.dir("foreign")
  (foreign / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
  (foreign / "config.json").write_text('{"model_type": "bert", "hidden_size": 8}')
  return _finetune(s, d, ckpt=foreign)


def _vocab_embedding_mismatch(s: Scene):
  d = s.copy_good("ft_vmis", shards=False)
  _first_lines_of_vocab(s, "ft_vmis/vocab.txt", 5000)
  return _finetune(s, d, hparams={**FT, "vocab_size": 5000})


def _hf_config_not_json(s: Scene):
  d = _hf_export(s, "hf_bad_config")
  (d / "config.json").write_text('{"model_type": "electra",', encoding="utf-8")
  return [*CONVERT, "import-hf", d, "--output", s.out("imported_bad_config")]


def _hf_safetensors_truncated(s: Scene):
  d = _hf_export(s, "hf_cut_weights")
  data = (d / "model.safetensors").read_bytes()
  (d / "model.safetensors").write_bytes(data[: len(data) // 2])
  return _finetune(s, ckpt=d)


def _model_dir_config_not_json(s: Scene):
  d = s.root / "model_dir_bad_config"
  if not d.exists():
    run_ok([*CONVERT, "import-hf", _hf_export(s, "hf_for_model_dir"), "--output", d], s.root)
  (d / "electra_config.json").write_text("{oops", encoding="utf-8")
  return [*CONVERT, "inspect", d]


def _checkpoint_data_truncated(s: Scene):
  d = s.root / "ckpt_cut"
  if not d.exists():
    shutil.copytree(s.ckpt, d)
  for f in d.glob("*.data-*"):
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 3])
  return _finetune(s, ckpt=d)


def _truncated_wikipedia_dump(s: Scene, compressed: bool):
  raw = (s.data / "wikipedia" / "enwiki-table-markup.xml.bz2").read_bytes()
  if not compressed:
    raw = bz2.decompress(raw)
  p = s.file("cut.xml.bz2" if compressed else "cut.xml", raw[: len(raw) // 2])
  return [BUILD_DATA, "--wikipedia-dump", p, "--vocab-file", s.vocab, "--output-dir",
          s.out("d_bz2" if compressed else "d_xml"), "--num-shards", 1, "--no-progress"]


def _unknown_flag(command):
  """``command --no-such-flag``: argparse's own errors are one ``error:`` line naming the help too."""
  prefix = {"build_vocab": [BUILD_VOCAB, "--output", "x"], "build_data": [BUILD_DATA], "pretrain": [PRETRAIN],
            "finetune": [FINETUNE], "convert": [*CONVERT, "inspect", "x"], "quickstart": QUICKSTART}[command]
  return lambda s: [*prefix, "--no-such-flag"]


# ---- the cases ----------------------------------------------------------------------------------------------
# A case's place is its row number in the tour (``--only``, the table scripts/bad_input_tour.py prints): append new
# cases rather than insert them, so the rows before keep their numbers.

CASES: typing.List[Case] = [
    # --hparams and flags
    Case("malformed_hparams", "malformed --hparams JSON", NOTHING,
         lambda s: _pretrain(s.good, '{"model_size": tiny', "m1"), "--hparams is not valid JSON"),
    Case("unknown_hparam", "unknown hparam (typo `learning_rat`)", NOTHING,
         lambda s: _pretrain(s.good, '{"learning_rat": 1}', "m2"),
         "unknown hparam 'learning_rat'; did you mean 'learning_rate'?"),
    Case("out_of_range_hparam", "out-of-range hparam (`mask_prob` 2)", NOTHING,
         lambda s: _pretrain(s.good, '{"mask_prob": 2}', "m3"),
         "hparam 'mask_prob': expected a number in (0.0, 1.0], got 2.0"),
    Case("wrongly_typed_hparam", "wrongly typed hparam (`train_batch_size` \"eight\")", NOTHING,
         lambda s: [FINETUNE, "--data-dir", s.good, "--model-name", "m4", "--task", "sst", "--hparams",
                    '{"train_batch_size": "eight"}'],
         "hparam 'train_batch_size': expected an integer >= 1, got 'eight'"),
    Case("missing_hparams_file", "--hparams names a .json file that does not exist", NOTHING,
         lambda s: _pretrain(s.good, s.root / "nope.json", "m5"), "nope.json does not exist"),
    # building the vocab and the pre-training data
    Case("missing_corpus", "missing corpus directory", NOTHING,
         lambda s: [BUILD_VOCAB, "--corpus-dir", s.root / "no_such_corpus", "--output", s.out("v1.txt"),
                    "--vocab-size", 500],
         "no_such_corpus does not exist"),
    Case("empty_corpus_vocab", "empty corpus directory (vocab)", NOTHING,
         lambda s: [BUILD_VOCAB, "--corpus-dir", s.dir("empty_corpus"), "--output", s.out("v2.txt"),
                    "--vocab-size", 500],
         "the corpus has no text to learn a vocab from"),
    Case("empty_corpus_data", "empty corpus directory (data)", DATA,
         lambda s: _build_data(s, s.out("d_empty"), corpus=s.dir("empty_corpus2")), "gave no examples"),
    Case("binary_corpus", "binary file in the corpus", DATA,
         lambda s: _build_data(s, s.out("d_bin"), corpus=_corpus_with(s, "binary_corpus", bytes(range(256)) * 64)),
         "binary_corpus) gave no examples (0 file(s) read, 1 skipped)"),
    Case("latin1_corpus_data", "non-UTF-8 (Latin-1) corpus file (data)", DATA,
         lambda s: _build_data(s, s.out("d_latin1"), corpus=_corpus_with(s, "latin1_corpus", LATIN1_TEXT)),
         "latin1_corpus) gave no examples (0 file(s) read, 1 skipped)"),
    Case("latin1_corpus_vocab", "non-UTF-8 (Latin-1) corpus file (vocab)", NOTHING,
         lambda s: [BUILD_VOCAB, "--corpus-dir", _corpus_with(s, "latin1_corpus_v", LATIN1_TEXT), "--output",
                    s.out("v3.txt"), "--vocab-size", 500],
         "the corpus has no text to learn a vocab from"),
    Case("truncated_xml_dump", "truncated .xml Wikipedia dump", DATA,
         lambda s: _truncated_wikipedia_dump(s, compressed=False), "cut.xml is truncated or corrupt (not valid XML"),
    Case("truncated_bz2_dump", "truncated .xml.bz2 Wikipedia dump", DATA,
         lambda s: _truncated_wikipedia_dump(s, compressed=True),
         "cut.xml.bz2 is truncated or corrupt (the compressed stream ends early"),
    Case("missing_wikipedia_dump", "missing Wikipedia dump", DATA,
         lambda s: [BUILD_DATA, "--wikipedia-dump", s.root / "no_such.xml.bz2", "--vocab-file", s.vocab,
                    "--output-dir", s.out("d_nodump"), "--num-shards", 1, "--no-progress"],
         "no_such.xml.bz2 not found"),
    Case("vocab_without_special_tokens", "vocab without [CLS]/[SEP]/[MASK]/[PAD]/[UNK]", DATA,
         lambda s: _build_data(s, s.out("d_nospec"), vocab=s.file(
             "nospecials.txt", "\n".join(s.vocab.read_text(encoding="utf-8").splitlines()[1000:3000]) + "\n")),
         "nospecials.txt lacks the special tokens [PAD], [UNK], [CLS], [SEP], [MASK]"),
    Case("missing_vocab", "missing vocab file", DATA,
         lambda s: _build_data(s, s.out("d_novocab"), vocab=s.root / "no_vocab.txt"), "no_vocab.txt not found"),
    Case("too_short_max_seq_length", "too-short --max-seq-length (3)", DATA,
         lambda s: _build_data(s, s.out("d_short"), "--max-seq-length", 3), "--max-seq-length is 3; use at least 5"),
    Case("vocab_output_in_missing_dir", "build_vocab --output in a missing directory", NOTHING,
         lambda s: [BUILD_VOCAB, "--corpus-dir", s.corpus, "--output", s.root / "no_such_dir" / "vocab.txt",
                    "--vocab-size", 500],
         "no_such_dir"),
    Case("existing_export", "existing output (export-hf again; generator/ already there)", MODEL,
         _existing_export, "existing_export/generator already exists; pass --overwrite"),
    Case("output_dir_is_a_file", "--output-dir is an existing file", DATA,
         lambda s: _build_data(s, s.file("out_is_a_file", "not a directory\n")), "out_is_a_file: a file is in the way"),
    # pre-training
    Case("pretrain_without_records", "pre-training with no TFRecords (missing data)", DATA,
         _pretrain_without_records, "no pre-training data matches"),
    Case("pretrain_length_mismatch", "pre-training max_seq_length 64 on 32-token records", MODEL,
         lambda s: [*_pretrain(s.copy_good("pt_len"), json.dumps({**TINY, "max_seq_length": 64})), "--no-progress"],
         "has max_seq_length 32 but the config has 64"),
    Case("pretrain_vocab_mismatch", "pre-training vocab (5,000) differs from the records' (30,522)", MODEL,
         _pretrain_vocab_mismatch, "pt_vocab/vocab.txt differs from the one the data in"),
    Case("pretrain_cut_shard", "TFRecord shard cut to 60% of its bytes (pre-training)", MODEL,
         _pretrain_on_cut_shard, "bytes but metadata.json recorded"),
    Case("verify_cut_shard", "TFRecord shard cut to 60% of its bytes (`--verify`)", MODEL,
         _verify_cut_shard, "verify_cut/pretrain_tfrecords/pretrain_data.tfrecord-0-of-2: holds"),
    Case("verify_flipped_byte", "TFRecord shard with one flipped byte (`--verify`)", MODEL,
         _verify_flipped_byte, "unreadable (corrupted record at"),
    # fine-tuning
    Case("unknown_task", "unknown fine-tuning task", MODEL,
         lambda s: _finetune(s, task="nosuchtask"), "unknown task 'nosuchtask'"),
    Case("finetuning_data_missing", "fine-tuning data missing", MODEL,
         _finetune_without_data, "ft_nodata/finetuning_data/sst/train.tsv: file not found"),
    Case("malformed_row", "malformed row (no label column)", MODEL,
         lambda s: _ft_with_train(s, "ft_row", "sentence\tlabel\na fine film\t1\na row with no label column\n"
                                               "bad\t0\n"),
         "ft_row/finetuning_data/sst/train.tsv:3: sst train: 1 columns where the header has 2"),
    Case("label_outside_the_labels", "label outside the task's labels", MODEL,
         lambda s: _ft_with_train(s, "ft_label", "sentence\tlabel\na fine film\t1\na terrible film\tnegative\n"),
         "train.tsv:3: sst train: unknown label 'negative' (expected one of 0, 1)"),
    Case("missing_init_checkpoint", "missing --init-checkpoint", MODEL,
         lambda s: _finetune(s, ckpt=s.root / "no_such_ckpt"), "no_such_ckpt: init checkpoint not found"),
    Case("wrong_model_size", "tiny checkpoint fine-tuned as --model-size base (mis-shaped)", MODEL,
         lambda s: _finetune(s, s.copy_good("ft_size", shards=False), extra=["--model-size", "base"]),
         "checkpoint shape [30522, 128] does not match the model's [30522, 768]"),
    Case("foreign_checkpoint", "foreign checkpoint (a BERT-typed safetensors dir)", MODEL,
         _foreign_checkpoint, "foreign is a Hugging Face 'bert' model, not ELECTRA"),
    Case("vocab_embedding_mismatch", "vocab (5,000) / checkpoint embedding (30,522) size mismatch", MODEL,
         _vocab_embedding_mismatch, "checkpoint shape [30522, 128] does not match the model's [5000, 128]"),
    # converting checkpoints
    Case("convert_missing_checkpoint", "convert inspect: missing checkpoint", NOTHING,
         lambda s: [*CONVERT, "inspect", s.root / "no_such_ckpt"], "no_such_ckpt: no such file or directory"),
    Case("convert_random_bytes", "convert inspect: random bytes as a checkpoint", NOTHING,
         lambda s: [*CONVERT, "inspect", s.file("random.ckpt", os.urandom(4096))], "random.ckpt holds no checkpoint"),
    Case("import_hf_without_config", "convert import-hf: directory without config.json", NOTHING,
         lambda s: [*CONVERT, "import-hf", s.dir("hf_empty"), "--output", s.out("imported")],
         "hf_empty holds no checkpoint"),
    # non-finite numbers and encodings in --hparams
    Case("nan_hparam", "NaN in --hparams (`mask_prob`)", NOTHING,
         lambda s: _pretrain(s.good, '{"mask_prob": NaN}', "m6"), "hparam 'mask_prob': nan is not a finite number"),
    Case("infinite_hparam", "Infinity in --hparams (`num_train_epochs`)", NOTHING,
         lambda s: [FINETUNE, "--data-dir", s.good, "--model-name", "m7", "--task", "sst", "--hparams",
                    '{"num_train_epochs": Infinity}'],
         "hparam 'num_train_epochs': inf is not a finite number"),
    Case("hparams_file_not_utf8", "--hparams file that is not UTF-8 (Latin-1)", NOTHING,
         lambda s: _pretrain(s.good, s.file("latin1_hparams.json",
                                            '{"model_name_suffix": "caf\u00e9"}'.encode("latin-1")), "m8"),
         "is not UTF-8 text"),
    Case("negative_eval_shards", "--num-eval-shards -1 with --eval-fraction", DATA,
         lambda s: [BUILD_DATA, "--corpus-dir", s.corpus, "--vocab-file", s.vocab, "--output-dir", s.out("d_eval"),
                    "--eval-fraction", 0.1, "--num-eval-shards", -1, "--no-progress"],
         "--num-eval-shards is -1; use 1 or more"),
    # damaged checkpoints and exports
    Case("hf_config_not_json", "Hugging Face config.json that is not JSON (convert import-hf)", MODEL,
         _hf_config_not_json, "hf_bad_config/config.json is not valid JSON"),
    Case("hf_safetensors_truncated", "truncated model.safetensors as --init-checkpoint", MODEL,
         _hf_safetensors_truncated, "hf_cut_weights/model.safetensors is corrupt or truncated"),
    Case("model_dir_config_not_json", "electra_config.json that is not JSON (convert inspect)", MODEL,
         _model_dir_config_not_json, "model_dir_bad_config/electra_config.json is not valid JSON"),
    Case("checkpoint_data_truncated", "pre-training checkpoint with a truncated .data file as --init-checkpoint",
         MODEL, _checkpoint_data_truncated, "cannot read its values"),
    Case("quickstart_negative_seeds", "quickstart --seeds -1", NOTHING,
         lambda s: [*QUICKSTART, "--seeds", -1, "--sample-dir", s.out("qs")],
         "argument --seeds: must be at least 1, got -1"),
    Case("savedmodel_zero_length", "export-savedmodel --max-seq-length 0", MODEL,
         lambda s: [*CONVERT, "export-savedmodel", s.ckpt, "--output", s.out("sm"), "--max-seq-length", 0],
         "max_seq_length 0 is too short"),
    # -- more --hparams checks
    Case("nan_finetuning_hparam", "NaN in fine-tuning --hparams (`warmup_proportion`)", NOTHING,
         lambda s: [FINETUNE, "--data-dir", s.good, "--model-name", "m9", "--task", "sst", "--hparams",
                    '{"warmup_proportion": NaN}'],
         "hparam 'warmup_proportion': nan is not a finite number"),
    Case("overflowing_hparam", "number overflowing to infinity in --hparams (`initializer_range` 1e999)", NOTHING,
         lambda s: _pretrain(s.good, '{"model_hparam_overrides": {"initializer_range": 1e999}}', "m10"),
         "hparam 'model_hparam_overrides.initializer_range': inf is not a finite number"),
    Case("hparam_set_by_a_flag", "--hparams sets what a flag sets (`model_name`)", NOTHING,
         lambda s: _pretrain(s.good, '{"model_name": "other"}', "m11"), "hparam 'model_name' is set by --model-name"),
    Case("quickstart_zero_seeds", "quickstart --seeds 0", NOTHING,
         lambda s: [*QUICKSTART, "--seeds", 0, "--sample-dir", s.out("qs0")],
         "argument --seeds: must be at least 1, got 0"),
    # -- a flag no command has: argparse's own error, one line naming the command's --help
    *(Case(f"unknown_flag_{command}", f"unknown flag (`{command} --no-such-flag`)", NOTHING, _unknown_flag(command),
           f"unrecognized arguments: --no-such-flag (see {program} --help)")
      for command, program in (("build_vocab", "build_vocab.py"), ("build_data", "build_pretraining_dataset.py"),
                               ("pretrain", "run_pretraining.py"), ("finetune", "run_finetuning.py"),
                               ("convert", "python -m electra_tf.convert"), ("quickstart", "quickstart.py"))),
    # -- fine-tuning on a user's own files (CSV / JSON Lines / CoNLL)
    Case("own_file_missing_column", "own CSV without the --text-column it names", DATA,
         lambda s: _own(s, "own1", "train.csv", "review,label\nfine film,pos\ndull,neg\n", "--text-column", "body"),
         "no column 'body' (--text-column); the file's columns are 'review', 'label'"),
    Case("own_file_empty", "own CSV that is empty", DATA, lambda s: _own(s, "own2", "train.csv", ""),
         "train.csv: empty file"),
    Case("own_file_dev_label_unseen", "own dev CSV with a label the training file never has", DATA,
         lambda s: _own(s, "own3", "train.csv", "text,label\nfine film,pos\ndull,neg\n", "--dev-file",
                        s.file("own3/dev.csv", "text,label\nok,pos\nmeh,sport\n")),
         "dev.csv:3: label 'sport' never occurs in the training file"),
    Case("own_file_missing_label", "own CSV training row without a label", DATA,
         lambda s: _own(s, "own4", "train.csv", "text,label\nfine film,pos\nbad film,\ndull,neg\n"),
         "train.csv:3: no label in column 'label'; fill it in or drop the row"),
    Case("own_file_mixed_label_types", "own JSON Lines with integer and text labels", DATA,
         lambda s: _own(s, "own5", "train.jsonl", '{"text": "a", "label": 1}\n{"text": "b", "label": "pos"}\n'),
         "train.jsonl:2: mixed label types: line 1 has an integer label, line 2 text"),
    Case("own_file_malformed_json", "own JSON Lines with a malformed line", DATA,
         lambda s: _own(s, "own6", "train.jsonl", '{"text": "a", "label": "x"}\n{"text": "b", label}\n'),
         "train.jsonl:2: malformed JSON"),
    Case("own_file_not_utf8", "own CSV in Latin-1, not UTF-8", DATA,
         lambda s: _own(s, "own7", "train.csv", "text,label\ncaf\xe9,x\nthe,y\n".encode("latin-1")),
         "train.csv:2: not UTF-8 text (byte 0xe9); save the file as UTF-8"),
    Case("own_file_tags_length", "own tagging JSON Lines with fewer tags than tokens", DATA,
         lambda s: _own(s, "own8", "train.jsonl", '{"tokens": ["The", "cat"], "tags": ["DT"]}\n'),
         "train.jsonl:1: 2 tokens but 1 tags; give one tag per token"),
    Case("profile_steps_backwards", "`profile_steps` \"5,3\": the last step to trace before the first", NOTHING,
         lambda s: _pretrain(s.good, '{"profile_steps": "5,3"}', "m_profile"),
         "profile_steps is '5,3'; give the first and last training step to trace as \"A,B\" with 1 <= A <= B"),
    Case("own_regression_dev_one_row", "own regression dev file with one row (no correlation to score)", DATA,
         lambda s: _own(s, "own9", "train.csv", "text,score\nfine,0.5\ndull,1.5\nok,1.0\n", "--label-column", "score",
                        "--dev-file", s.file("own9/dev.csv", "text,score\na fine film,1.7\n")),
         "dev.csv: 1 row(s), 1 distinct label(s): scoring a regression (Pearson and Spearman correlation) needs two "
         "different labels"),
    Case("eval_fraction_holds_out_nothing", "--eval-fraction 0.01 of a three-document corpus (no held-out example)",
         DATA, lambda s: _build_data(s, s.out("d_no_eval"), "--eval-fraction", 0.01, corpus=_corpus_with(
             s, "three_docs", b"One document.\n\nAnother one.\n\nA third.\n")),
         "--eval-fraction 0.01 held out none of the corpus's 3 document(s)"),
]


def _own(s, name, file_name, text, *flags):
  """Fine-tuning on the user's own training file ``text`` (``good/`` has the BERT vocab; random weights)."""
  return [FINETUNE, "--data-dir", s.good, "--model-name", name, "--init-checkpoint", "none", "--task-name", name,
          "--train-file", s.file(f"{name}/{file_name}", text), *flags]
