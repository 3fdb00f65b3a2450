"""Corpus readers. Each yields documents: lists of sentences (non-empty, stripped strings).

Sources: a directory of text files in the reference format (one sentence per line, blank line between
documents), Wikipedia XML dumps, BooksCorpus-style book directories, and tensorflow-datasets text sets.
Plain text files may be gzip- or bzip2-compressed (``.gz``/``.bz2``). A MediaWiki XML dump found among the
text files is recognised by its content and read as a dump, never packed as text.

``list_units`` / ``iter_unit_documents``: the corpus as units (a text file, a dump, a book, a tfds split),
each read start to end by one reader, so that a worker of a distributed build can read one alone.
"""

import bz2
import codecs
import dataclasses
import gzip
import io
import os
import sys

from electra_tf import fileio
from electra_tf.errors import DataPrepError
from electra_tf.pretrain_data import wikipedia, wikitext


@dataclasses.dataclass
class CorpusStats:
  files_read: int = 0
  files_skipped: list = dataclasses.field(default_factory=list)  # "path (reason)"
  wikipedia_dumps: list = dataclasses.field(default_factory=list)  # corpus-dir files read as dumps
  documents: int = 0
  sentences: int = 0


def _open_binary(path):
  if path.endswith(".gz"):
    return wikipedia.decompressing(gzip.open, path)
  if path.endswith(".bz2"):
    return wikipedia.decompressing(bz2.open, path)
  return fileio.open_file(path, "rb")


def _check_text_file(path):
  """Returns None if ``path`` is UTF-8 text, else the reason to skip it (one pass, C-speed decode)."""
  decoder = codecs.getincrementaldecoder("utf-8")()
  try:
    with _open_binary(path) as f:
      first = True
      while True:
        block = f.read(1 << 22)
        if first and b"\x00" in block[:8192]:
          return "binary file"
        first = False
        if not block:
          decoder.decode(b"", final=True)
          return None
        decoder.decode(block)
  except UnicodeDecodeError as e:
    return f"not UTF-8 (byte offset {e.start} of a block)"
  except (OSError, EOFError) as e:
    return f"unreadable ({e})"


def _iter_lines(path):
  # newline="\n": split on \n only, like the reference's tf.io.gfile.GFile (a lone \r stays in a line).
  with _open_binary(path) as raw, io.TextIOWrapper(raw, encoding="utf-8", newline="\n") as f:
    yield from f


def list_corpus_files(corpus_dir):
  """Sorted regular files of ``corpus_dir`` (the reference's sorted listdir), hidden files left out."""
  if not fileio.isdir(corpus_dir):
    raise DataPrepError(f"corpus directory {corpus_dir} does not exist; pass --corpus-dir with "
                        "text files (one sentence per line, blank line between documents)")
  names = sorted(n for n in fileio.listdir(corpus_dir)
                 if not n.startswith(".") and fileio.isfile(os.path.join(corpus_dir, n)))
  return [os.path.join(corpus_dir, n) for n in names]


def iter_text_file_documents(path, blanks_separate_docs=True):
  """Reference reading rules for one file: lines are stripped; with ``blanks_separate_docs`` an empty
  line ends a document, else empty lines are skipped; the end of the file ends a document."""
  doc = []
  for line in _iter_lines(path):
    line = line.strip()
    if line:
      doc.append(line)
    elif blanks_separate_docs and doc:
      yield doc
      doc = []
  if doc:
    yield doc


def iter_text_file(path, blanks_separate_docs=True, stats=None):
  """Documents of one file of a text directory: a MediaWiki dump (recognised by content, whatever its
  name) is read as ``--wikipedia-dump`` reads it (as text its XML and wikitext markup would fill most
  examples); a binary or non-UTF-8 file is skipped and recorded in ``stats``."""
  stats = stats if stats is not None else CorpusStats()
  kind = _file_kind(path, stats)
  if kind == "dump":
    yield from _documents(_iter_found_dump(path, stats), article_document)
  elif kind == "text":
    yield from iter_text_file_documents(path, blanks_separate_docs)


def _file_kind(path, stats):
  """"dump" (a MediaWiki dump: read it as one), "text" (counted as read) or None (binary or not UTF-8:
  recorded in ``stats``, to skip)."""
  if is_wikipedia_dump(path):
    return "dump"
  reason = _check_text_file(path)
  if reason:
    stats.files_skipped.append(f"{path} ({reason})")
    return None
  stats.files_read += 1
  return "text"


def _documents(items, to_document):
  for item in items:
    doc = to_document(item)
    if doc:
      yield doc


def iter_text_dir(corpus_dir, blanks_separate_docs=True, stats=None):
  """Documents of every readable UTF-8 file in ``corpus_dir`` (``iter_text_file`` on each, sorted)."""
  stats = stats if stats is not None else CorpusStats()
  for path in list_corpus_files(corpus_dir):
    yield from iter_text_file(path, blanks_separate_docs, stats)


# ---------------------------------------------------------------------------------------------------
# Sentence splitting for sources that come as paragraphs.


def split_sentences(paragraph):
  """One paragraph -> list of sentences (Bling Fire's rule-based splitter: fast, no model download)."""
  paragraph = " ".join(paragraph.split())
  if not paragraph:
    return []
  import blingfire  # pylint: disable=import-outside-toplevel  (imported once; only paragraph sources need it)
  return [s.strip() for s in blingfire.text_to_sentences(paragraph).split("\n") if s.strip()]


def text_to_document(text):
  """Free text (paragraphs on their own lines) -> one document of sentences."""
  doc = []
  for paragraph in text.split("\n"):
    doc.extend(split_sentences(paragraph))
  return doc


# ---------------------------------------------------------------------------------------------------
# Wikipedia XML dumps (wikipedia.py splits them into pages, wikitext.py cleans a page).

is_wikipedia_dump = wikipedia.is_wikipedia_dump
wikitext_to_text = wikitext.wikitext_to_text


def article_document(page_wikitext):
  """One article's raw wikitext -> its document (list of sentences; empty when no prose is left)."""
  return text_to_document(wikitext_to_text(page_wikitext))


def _iter_found_dump(path, stats):
  """A dump found in a directory of text files: said once on stderr, then read as ``--wikipedia-dump``."""
  print(f"note: {path} is a MediaWiki XML dump: reading its articles as --wikipedia-dump does", file=sys.stderr)
  stats.wikipedia_dumps.append(path)
  stats.files_read += 1
  return wikipedia.iter_articles(path)


def iter_wikipedia_dump(path, stats=None):
  """Streams a MediaWiki pages-articles dump (``.xml`` or ``.xml.bz2``): one article = one document.

  Only main-namespace pages that are not redirects are used. A truncated or corrupt file (bad XML, a bzip2
  or gzip stream that ends early or fails to decompress) raises ``DataPrepError`` naming it.
  """
  stats = stats if stats is not None else CorpusStats()
  wikipedia.check_dump(path)
  stats.files_read += 1
  for text in wikipedia.iter_articles(path):
    doc = article_document(text)
    if doc:
      yield doc


# ---------------------------------------------------------------------------------------------------
# Books and tensorflow-datasets.


def list_books(books_dir):
  """Every file under ``books_dir`` (recursive, sorted, hidden files left out)."""
  if not fileio.isdir(books_dir):
    raise DataPrepError(f"books directory {books_dir} does not exist; pass --books-dir with one text "
                        "file per book")
  paths = []
  for root, dirs, files in fileio.walk(books_dir):
    dirs.sort()
    paths.extend(os.path.join(root, n) for n in sorted(files) if not n.startswith("."))
  return paths


def iter_book(path, stats=None):
  """One book file -> one document (its lines/paragraphs split into sentences); a MediaWiki dump is read
  as a dump, a binary or non-UTF-8 file is skipped and recorded in ``stats``."""
  stats = stats if stats is not None else CorpusStats()
  kind = _file_kind(path, stats)
  if kind == "dump":
    yield from _documents(_iter_found_dump(path, stats), article_document)
    return
  if kind is None:
    return
  doc = []
  for line in _iter_lines(path):
    doc.extend(split_sentences(line))
  if doc:
    yield doc


def iter_books(books_dir, stats=None):
  """BooksCorpus style: every UTF-8 text file under ``books_dir`` (recursive, sorted) is one book = one
  document; its lines/paragraphs are split into sentences. A MediaWiki dump there is read as a dump."""
  stats = stats if stats is not None else CorpusStats()
  for path in list_books(books_dir):
    yield from iter_book(path, stats)


def iter_tfds(name, split="train", text_key="text", data_dir=None, download=False, stats=None):
  """Any tensorflow-datasets text set by name: one record = one document (its text split into
  sentences). ``download=False`` by default: prepare the data set beforehand (``tfds build``)."""
  import tensorflow_datasets as tfds  # pylint: disable=import-outside-toplevel
  stats = stats if stats is not None else CorpusStats()
  try:
    ds = tfds.load(name, split=split, data_dir=data_dir, download=download)
  except Exception as e:  # tfds raises many types (DatasetNotFoundError, AssertionError, ...)
    raise DataPrepError(f"cannot load tensorflow-datasets set {name!r} split {split!r} "
                        f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); prepare it "
                        "with `tfds build` or pass --tfds-download") from None
  stats.files_read += 1
  for record in tfds.as_numpy(ds):
    if text_key not in record:
      raise DataPrepError(f"tensorflow-datasets set {name!r} has no feature {text_key!r} (it has "
                          f"{', '.join(sorted(record))}); pass --tfds-text-key")
    value = record[text_key]
    text = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)
    doc = text_to_document(text)
    if doc:
      yield doc


