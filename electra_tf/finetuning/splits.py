"""A validation split carved from a task's training data, and seeded label subsets, written as task data dirs.

Model selection must never read dev. ``carve`` deals a task's training units (TSV rows or CoNLL sentences)
once, by a seeded permutation, into a **validation** part and a **pool**; a labelled subset of size k is the
first k units of the pool, so the subsets are nested (250 in 500 in 1,000 ...) and the same for every method
that uses the same seed. A unit whose text also occurs in dev, or more than once in the training file, never
goes to the validation part (it stays in the pool), so validation scores are never scores on dev sentences or
on sentences a subset trains on. A unit's text is what the task's reader reads as input: a TSV row's sentence
columns (both sentences of a pair task, from the task class's ``columns``), a CoNLL sentence's words.

``write_subset`` writes two data roots the fine-tuning runner reads as they are (``raw_data_dir``):

- ``<out>/validation/<task>/``: ``train`` = the subset, ``dev`` = the validation part. A run on this root
  "scores dev", which is the validation split: this is what model selection reads.
- ``<out>/dev/<task>/``: the same ``train``, and the task's real ``dev`` (copied). Only the chosen setting is
  scored here.
"""

import hashlib
import json
import os
import typing

from electra_tf import fileio
from electra_tf.finetuning import tasks
from electra_tf.finetuning.base import DataError
from electra_tf.finetuning.carving import Carving, Units, carve  # pylint: disable=unused-import  (re-exported)

FORMATS = {"tsv": ".tsv", "conll": ".txt"}


class TsvLayout(typing.NamedTuple):
  """Where a TSV task's sentences are: ``text_columns`` (indexes, negative from the end), ``header`` (the first
  line is a header), ``unordered`` (the reader also trains on each pair swapped: (a, b) and (b, a) are one
  text) and the file stems of its ``train`` and ``dev`` splits."""
  text_columns: typing.Tuple[int, ...]
  header: bool
  unordered: bool
  train_file: str
  dev_file: str


def tsv_layout(task_name: str, fmt: str = "tsv") -> TsvLayout:
  """The layout the task's reader expects (``GlueTask.columns`` of its train split); a task without a GLUE
  reader: the first column, a header line, ``train`` and ``dev``. CoNLL files: ``train`` and ``dev``, no header
  (the rest is unused)."""
  if fmt != "tsv":
    return TsvLayout((0,), False, False, "train", "dev")
  cls = tasks.TASKS.get(task_name) if task_name in tasks.GLUE_TASKS else None
  if cls is None:
    return TsvLayout((0,), True, False, "train", "dev")
  cols = cls.columns("train")
  texts = tuple(c for c in (cols.text_a, cols.text_b) if c is not None)
  return TsvLayout(texts, cols.header, cls.double_unordered, cls.file_stem("train"), cls.file_stem("dev"))


def read_units(path: str, fmt: str, header: bool = True, text_columns: typing.Sequence[int] = (0,),
               unordered: bool = False) -> Units:
  """The units of a task file: TSV rows (``header``: the first line is a header; ``text_columns``: the columns
  whose values, tab-joined, are a row's text, in sorted order if ``unordered``: a pair task that also trains
  on each pair swapped) or CoNLL sentences."""
  if fmt not in FORMATS:
    raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
  if not fileio.isfile(path):
    raise DataError(path, None, "file not found")
  with fileio.open_file(path, "r", newline="") as f:
    text = f.read()
  if fmt == "tsv":
    lines = [line.rstrip("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
      lines.pop()
    head, rows = (lines[0], lines[1:]) if header and lines else ("", lines)
    texts = []
    for number, row in enumerate(rows, start=2 if header else 1):
      cells = row.split("\t")
      if any(c >= len(cells) or -c > len(cells) for c in text_columns):
        raise DataError(path, number, f"{len(cells)} columns, but the task's sentences are in column(s) "
                        f"{list(text_columns)}")
      values = [cells[c] for c in text_columns]
      texts.append("\t".join(sorted(values) if unordered else values))
    return Units(head, rows, texts)
  blocks = [b.strip("\n") for b in text.replace("\r\n", "\n").split("\n\n")]
  blocks = [b for b in blocks if b.strip() and not b.startswith("-DOCSTART-")]
  words = [" ".join(line.split()[0] for line in b.split("\n") if line.strip()) for b in blocks]
  return Units("", blocks, words)


def subset(carving: Carving, size: typing.Optional[int]) -> typing.List[int]:
  """The first ``size`` units of the pool (None or a size past the pool: all of it)."""
  return list(carving.pool if size is None else carving.pool[:size])


def _body(units: Units, indexes: typing.Sequence[int], fmt: str) -> str:
  parts = [units.units[i] for i in indexes]
  if fmt == "tsv":
    return "".join(line + "\n" for line in ([units.header] if units.header else []) + parts)
  return "".join(block + "\n\n" for block in parts)


def _write(path: str, body: str):
  """Writes ``body``; a file that already holds it is left alone, and a new one appears whole (a temporary file
  renamed over it), so processes sharing a work dir never read a file half-written."""
  fileio.makedirs(os.path.dirname(path))
  if fileio.isfile(path) and fileio.read_text(path) == body:
    return
  tmp = f"{path}.tmp{os.getpid()}"
  with fileio.open_file(tmp, "w") as f:
    f.write(body)
  fileio.rename(tmp, path)


def fingerprint(train_body: str, validation_body: str) -> str:
  """12 hex digits of the bytes a subset trains and validates on: runs that record it can tell a subset dealt
  otherwise (another seed, size, source file or version of these rules) from theirs."""
  return hashlib.sha256(json.dumps([train_body, validation_body]).encode()).hexdigest()[:12]


def deal(task_dir: str, task_name: str, fmt: str, validation_size: int, size: typing.Optional[int],
         seed: int) -> dict:
  """What ``write_subset`` writes, without writing it: the counts, the unit indexes, ``files`` ({(root, file
  name): text}) and the ``fingerprint``."""
  ext = FORMATS[fmt]
  layout = tsv_layout(task_name, fmt)
  stems = {"train": layout.train_file + ext, "dev": layout.dev_file + ext}
  train, dev = (read_units(os.path.join(task_dir, stems[split]), fmt, layout.header, layout.text_columns,
                           layout.unordered) for split in ("train", "dev"))
  carving = carve(train, validation_size, seed, dev)
  chosen = subset(carving, size)
  bodies = {"train": _body(train, chosen, fmt), "validation": _body(train, carving.validation, fmt),
            "dev": _body(dev, range(len(dev.units)), fmt)}
  files = {("validation", stems["train"]): bodies["train"], ("validation", stems["dev"]): bodies["validation"],
           ("dev", stems["train"]): bodies["train"], ("dev", stems["dev"]): bodies["dev"]}
  return {"train": len(chosen), "validation": len(carving.validation), "dev": len(dev.units),
          "pool": len(carving.pool), "seed": seed, "train_indexes": chosen, "validation_indexes": carving.validation,
          "files": files, "fingerprint": fingerprint(bodies["train"], bodies["validation"])}


def written_fingerprint(out: str, task_name: str, fmt: str) -> typing.Optional[str]:
  """The fingerprint of the subset ``write_subset`` left under ``out`` (None when there is none)."""
  ext = FORMATS[fmt]
  layout = tsv_layout(task_name, fmt)
  paths = [os.path.join(out, "validation", task_name, stem + ext) for stem in (layout.train_file, layout.dev_file)]
  if not all(fileio.isfile(path) for path in paths):
    return None
  return fingerprint(*(fileio.read_text(path) for path in paths))


def write_subset(task_dir: str, task_name: str, out: str, fmt: str, validation_size: int,
                 size: typing.Optional[int], seed: int) -> dict:
  """Writes ``<out>/validation/<task_name>/`` and ``<out>/dev/<task_name>/`` (module docstring) from the task's
  ``train`` and ``dev`` files in ``task_dir`` (a GLUE task's own file names, header and sentence columns:
  ``tsv_layout``); returns ``deal``'s counts, indexes and fingerprint, and the two roots."""
  return write_dealt(deal(task_dir, task_name, fmt, validation_size, size, seed), out, task_name)


def write_dealt(dealt: dict, out: str, task_name: str) -> dict:
  """Writes what ``deal`` returned under ``out``; returns its counts, indexes and fingerprint, and the roots."""
  dealt = dict(dealt)
  for (root, name), body in dealt.pop("files").items():
    _write(os.path.join(out, root, task_name, name), body)
  return {**dealt, "validation_root": os.path.join(out, "validation"), "dev_root": os.path.join(out, "dev")}
