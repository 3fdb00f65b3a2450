"""A user's own data files: CSV, TSV and JSON Lines rows by column name, CoNLL sentences, SQuAD JSON.

The format follows the extension: ``.csv`` (RFC 4180: quoted fields may hold commas, quotes and line breaks),
``.tsv`` (tab-separated, with the same quoting), ``.jsonl`` / ``.ndjson`` (one JSON object per line), ``.json``
(SQuAD layout, or a JSON Lines file under that name), ``.txt`` / ``.conll`` (CoNLL: ``word ... tag`` lines,
blank lines between sentences). Files are UTF-8, with or without a byte-order mark, with ``\\n`` or ``\\r\\n``
line ends. Rows are streamed: ``rows`` yields one row at a time with the line it starts on, so a caller that
keeps one list of examples holds the file once.

Every problem is a ``DataError`` naming the file, the line and the fix.
"""

import codecs
import csv
import json
import os
import sys
import typing

from electra_tf import fileio
from electra_tf.errors import DataError

ROW_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json"}
CONLL_EXTENSIONS = (".txt", ".conll")
FORMATS = ("csv", "tsv", "jsonl", "json", "conll")

csv.field_size_limit(min(sys.maxsize, 2 ** 31 - 1))  # long documents in one field


def file_format(path: str) -> str:
  """``csv``, ``tsv``, ``jsonl``, ``json`` (SQuAD layout or JSON Lines) or ``conll``, by extension."""
  ext = os.path.splitext(path)[1].lower()
  if ext in ROW_FORMATS:
    return ROW_FORMATS[ext]
  if ext in CONLL_EXTENSIONS:
    return "conll"
  raise DataError(path, None, f"unknown file type {ext or '(no extension)'!r}: name it .csv, .tsv, .jsonl, "
                  ".json (SQuAD) or .txt / .conll (CoNLL tagging)")


class _Lines:
  """A UTF-8 text file's lines (BOM dropped), counting line numbers and turning a decoding error into a
  ``DataError`` with the line it is on."""

  def __init__(self, path: str, handle):
    self.path, self.handle, self.line_no = path, handle, 0
    self.decoder = codecs.getincrementaldecoder("utf-8-sig")()

  def __iter__(self):
    return self

  def __next__(self) -> str:
    raw = self.handle.readline()
    if not raw:
      raise StopIteration
    self.line_no += 1
    try:
      return self.decoder.decode(raw)
    except UnicodeDecodeError as e:
      raise DataError(self.path, self.line_no, f"not UTF-8 text (byte 0x{raw[e.start]:02x}); save the file as "
                      "UTF-8") from None


def _open_lines(path: str):
  if not fileio.isfile(path):
    raise DataError(path, None, "file not found")
  return fileio.open_file(path, "rb")


Row = typing.Tuple[int, dict]  # (the line the row starts on, {column: value})


def rows(path: str, fmt: typing.Optional[str] = None) -> typing.Iterator[Row]:
  """Yields ``(line number, row)`` of a CSV / TSV file (header = column names, values strings) or a JSON Lines
  file (values as JSON gives them); blank JSON lines are skipped. Raises ``DataError`` for an empty file, a
  header with a repeated or empty column name, a row with more fields than the header, a malformed JSON line
  or one that is not an object, and text that is not UTF-8."""
  fmt = fmt or file_format(path)
  with _open_lines(path) as handle:
    lines = _Lines(path, handle)
    if fmt == "jsonl" or fmt == "json":
      yield from _json_lines(path, lines)
    elif fmt in ("csv", "tsv"):
      yield from _delimited(path, lines, "," if fmt == "csv" else "\t")
    else:
      raise DataError(path, None, f"{fmt} files have no columns; use a .csv, .tsv or .jsonl file")


def _json_lines(path: str, lines: _Lines) -> typing.Iterator[Row]:
  seen = False
  for text in lines:
    if not text.strip():
      continue
    try:
      row = json.loads(text)
    except json.JSONDecodeError as e:
      raise DataError(path, lines.line_no, f"malformed JSON ({e.msg} at column {e.colno}); each line must be "
                      "one JSON object") from None
    if not isinstance(row, dict):
      raise DataError(path, lines.line_no, f"a JSON {type(row).__name__} where each line must be one JSON object "
                      "with named fields")
    seen = True
    yield lines.line_no, row
  if not seen:
    raise DataError(path, None, "empty file: no rows")


def _delimited(path: str, lines: _Lines, delimiter: str) -> typing.Iterator[Row]:
  reader = csv.reader(lines, delimiter=delimiter, strict=True)  # a quote never closed is an error, not one field
  try:
    header = next(reader)
  except StopIteration:
    raise DataError(path, None, "empty file: no header line and no rows") from None
  except csv.Error as e:
    raise DataError(path, lines.line_no, f"malformed {'CSV' if delimiter == ',' else 'TSV'}: {e}") from None
  names = [h.strip() for h in header]
  if any(not n for n in names) or len(set(names)) != len(names):
    raise DataError(path, 1, f"the header line must name every column once; it has {header}")
  seen, start = False, lines.line_no + 1
  while True:
    try:
      fields = next(reader)
    except StopIteration:
      break
    except csv.Error as e:
      unclosed = "; a quoted field is never closed" if "unexpected end of data" in str(e) else ""
      raise DataError(path, start, f"malformed {'CSV' if delimiter == ',' else 'TSV'}: {e}{unclosed}") from None
    if not fields or (len(fields) == 1 and not fields[0].strip()):
      start = lines.line_no + 1
      continue
    if len(fields) > len(names):
      raise DataError(path, start, f"{len(fields)} fields where the header names {len(names)} columns (a field "
                      "with the delimiter in it must be quoted)")
    seen = True
    yield start, dict(zip(names, fields + [""] * (len(names) - len(fields))))
    start = lines.line_no + 1
  if not seen:
    raise DataError(path, None, "empty file: a header but no rows")


def columns(path: str, fmt: typing.Optional[str] = None) -> typing.List[str]:
  """The column names: a CSV / TSV header, or the keys of a JSON Lines file's first row."""
  for _, row in rows(path, fmt):
    return list(row)
  return []


def require_columns(path: str, first_row: dict, wanted: typing.Mapping[str, typing.Optional[str]]):
  """Raises a ``DataError`` for a wanted column the file lacks, listing the columns it has. ``wanted``:
  {flag: column name or None (not asked for)}."""
  for flag, name in wanted.items():
    if name is not None and name not in first_row:
      raise DataError(path, None, f"no column {name!r} ({flag}); the file's columns are "
                      f"{', '.join(repr(c) for c in first_row)}")


def conll_sentences(path: str) -> typing.Iterator[typing.Tuple[int, tuple, tuple]]:
  """Yields ``(first line, words, tags)`` per sentence of a CoNLL file: ``word ... tag`` lines (word = first
  column, tag = last), blank lines between sentences, ``-DOCSTART-`` lines skipped."""
  with _open_lines(path) as handle:
    lines = _Lines(path, handle)
    sentence, start, seen = [], None, False
    for text in lines:
      cols = text.split()
      if not cols:
        if sentence:
          seen = True
          yield start, tuple(w for w, _ in sentence), tuple(t for _, t in sentence)
          sentence = []
        continue
      if cols[0] == "-DOCSTART-":
        continue
      if len(cols) < 2:
        raise DataError(path, lines.line_no, f"expected 'word ... tag', got {text.strip()!r}")
      if not sentence:
        start = lines.line_no
      sentence.append((cols[0], cols[-1]))
    if sentence:
      seen = True
      yield start, tuple(w for w, _ in sentence), tuple(t for _, t in sentence)
    if not seen:
      raise DataError(path, None, "empty file: no tagged sentences")


def is_squad_file(path: str) -> bool:
  """Whether a ``.json`` file is one JSON document with a top-level ``data`` list (SQuAD layout), rather than
  JSON Lines: its first non-blank character is ``{`` and the document does not end on the first line."""
  with _open_lines(path) as handle:
    lines = _Lines(path, handle)
    for text in lines:
      if text.strip():
        first = text.strip()
        break
    else:
      raise DataError(path, None, "empty file")
    if not first.startswith("{"):
      return False
    try:
      json.loads(first)
    except json.JSONDecodeError:
      return True  # a document that goes on past its first line
    return '"data"' in first and '"paragraphs"' in first
