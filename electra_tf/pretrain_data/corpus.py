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
import re
import sys
import xml.etree.ElementTree as ET

import blingfire
import mwparserfromhell
import tensorflow_datasets as tfds

from electra_tf import fileio
from electra_tf.errors import DataPrepError


@dataclasses.dataclass
class CorpusStats:
  files_read: int = 0
  files_skipped: list = dataclasses.field(default_factory=list)  # "path (reason)"
  wikipedia_dumps: list = dataclasses.field(default_factory=list)  # corpus-dir files read as dumps
  documents: int = 0
  sentences: int = 0


def _decompress(opener, path):
  # A remote file (gs://) is streamed through tf.io.gfile; local ones keep the library's own open.
  return opener(fileio.open_file(path, "rb") if fileio.is_remote(path) else path, "rb")


def _open_binary(path):
  if path.endswith(".gz"):
    return _decompress(gzip.open, path)
  if path.endswith(".bz2"):
    return _decompress(bz2.open, path)
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
    yield from _iter_found_dump(path, stats)
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
  return [s.strip() for s in blingfire.text_to_sentences(paragraph).split("\n") if s.strip()]


def text_to_document(text):
  """Free text (paragraphs on their own lines) -> one document of sentences."""
  doc = []
  for paragraph in text.split("\n"):
    doc.extend(split_sentences(paragraph))
  return doc


# ---------------------------------------------------------------------------------------------------
# Wikipedia XML dumps.

# Links into these namespaces are images, categories or interwiki links, not article text.
_NON_TEXT_LINK = re.compile(r"^\s*:?\s*(file|image|category|media|wikipedia|wp|template|help|portal|"
                            r"special|user|talk|[a-z]{2,3}(-[a-z]+)?)\s*:", re.IGNORECASE)


def wikitext_to_text(wikitext):
  """Wikitext markup -> plain paragraphs (mwparserfromhell): templates, tables, refs, files, categories
  and headings removed; links keep their visible text."""
  code = mwparserfromhell.parse(wikitext)
  drop = {id(node) for node in code.filter_wikilinks(recursive=False) if _NON_TEXT_LINK.match(str(node.title))}
  drop.update(id(node) for node in code.filter_tags(recursive=False)
              if str(node.tag).lower() in ("ref", "table", "gallery", "math", "timeline", "references", "div"))
  drop.update(id(node) for node in code.filter_headings(recursive=False))
  # All are top-level nodes: one pass drops them. Wikicode.remove(node) walks the whole tree to find each
  # node it removes (quadratic: a quarter of the cleanup's CPU on the test dump's pages).
  code.nodes = [node for node in code.nodes if id(node) not in drop]
  text = code.strip_code(normalize=True, collapse=True, keep_template_params=False)
  paragraphs = []
  for line in text.split("\n"):
    line = line.strip()
    # Leftover table/list markup lines carry no sentences.
    if line and not line.startswith(("{|", "|", "!", "*", "#", ";", ":")):
      paragraphs.append(line)
  return "\n".join(paragraphs)


# The compression of a dump is read from its first bytes, so a renamed or oddly named dump still opens.
_BZ2_MAGIC, _GZIP_MAGIC = b"BZh", b"\x1f\x8b"
_DUMP_ROOT = b"<mediawiki"
_DUMP_SNIFF_BYTES = 1 << 12  # the root element follows at most an XML declaration and a comment


def _open_dump(path):
  with fileio.open_file(path, "rb") as f:
    magic = f.read(3)
  if magic.startswith(_BZ2_MAGIC):
    return _decompress(bz2.open, path)
  if magic.startswith(_GZIP_MAGIC):
    return _decompress(gzip.open, path)
  return fileio.open_file(path, "rb")


def _dump_head(path):
  with _open_dump(path) as f:
    return f.read(_DUMP_SNIFF_BYTES)


def is_wikipedia_dump(path):
  """True when ``path`` (plain, bzip2 or gzip) opens with a MediaWiki XML export's root element."""
  try:
    return _DUMP_ROOT in _dump_head(path)
  except (OSError, EOFError):
    return False  # unreadable: the text check skips it with the reason


def _iter_found_dump(path, stats):
  """A dump found in a directory of text files: said once on stderr, then read as ``--wikipedia-dump``."""
  print(f"note: {path} is a MediaWiki XML dump: reading its articles as --wikipedia-dump does", file=sys.stderr)
  stats.wikipedia_dumps.append(path)
  yield from iter_wikipedia_dump(path, stats)


def _damaged_dump(path, problem):
  return DataPrepError(f"Wikipedia dump {path} is truncated or corrupt ({problem}); download it again and "
                       "pass the complete pages-articles .xml or .xml.bz2 file")


def iter_wikipedia_dump(path, stats=None):
  """Streams a MediaWiki pages-articles dump (``.xml`` or ``.xml.bz2``): one article = one document.

  Only main-namespace pages that are not redirects are used. A truncated or corrupt file (bad XML, a bzip2
  or gzip stream that ends early or fails to decompress) raises ``DataPrepError`` naming it.
  """
  stats = stats if stats is not None else CorpusStats()
  if not fileio.isfile(path):
    raise DataPrepError(f"Wikipedia dump {path} not found; pass a pages-articles .xml or .xml.bz2 file")
  try:
    head = _dump_head(path)
  except EOFError as e:
    raise _damaged_dump(path, f"the compressed stream ends early: {e}") from None
  except OSError as e:
    raise _damaged_dump(path, f"{type(e).__name__}: {e}") from None
  if _DUMP_ROOT not in head:
    raise DataPrepError(f"{path} is not a MediaWiki XML dump (no <mediawiki> element at its start); pass a "
                        "pages-articles .xml or .xml.bz2 file (plain text files go in --corpus-dir)")
  stats.files_read += 1
  try:
    with _open_dump(path) as f:
      for _, elem in ET.iterparse(f, events=("end",)):
        if _local(elem.tag) != "page":
          continue
        ns = redirect = text = None
        for child in elem.iter():
          name = _local(child.tag)
          if name == "ns":
            ns = (child.text or "").strip()
          elif name == "redirect":
            redirect = True
          elif name == "text":
            text = child.text or ""
        elem.clear()  # keep memory flat while streaming
        if ns not in (None, "0") or redirect or not text or text.lstrip().lower().startswith("#redirect"):
          continue
        doc = text_to_document(wikitext_to_text(text))
        if doc:
          yield doc
  except ET.ParseError as e:
    raise _damaged_dump(path, f"not valid XML: {e}") from None
  except EOFError as e:  # bz2/gzip: the stream ends before its end-of-stream marker
    raise _damaged_dump(path, f"the compressed stream ends early: {e}") from None
  except OSError as e:  # bz2 "Invalid data stream", gzip BadGzipFile / CRC errors
    raise _damaged_dump(path, f"{type(e).__name__}: {e}") from None


def _local(tag):
  return tag.rsplit("}", 1)[-1]


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
    yield from _iter_found_dump(path, stats)
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


# ---------------------------------------------------------------------------------------------------
# The corpus as independently readable units.


@dataclasses.dataclass(frozen=True)
class CorpusUnit:
  """One piece of the corpus read start to end by one reader: a file of a text directory, a Wikipedia
  dump, a book, a tensorflow-datasets split.

  ``key`` names it the same on every machine (relative to its source, never an absolute path): the
  builder seeds a chunk's randomness from (seed, key, chunk index within the unit), which a distributed
  reader can compute alone, so the same examples come out whichever worker or process reads it.
  """
  key: str
  kind: str  # "text", "wikipedia", "book" or "tfds"
  path: str = ""
  blanks_separate_docs: bool = True
  tfds: tuple = ()  # iter_tfds keyword arguments as sorted (name, value) pairs


def list_units(corpus_dir=None, blanks_separate_docs=True, wikipedia_dumps=(), books_dir=None, tfds=None):
  """The units of the sources in corpus order: text files (sorted), dumps (as given), books (sorted),
  then the tfds split. Listing reads no text; a missing directory or dump is an error here."""
  units = []
  if corpus_dir:
    units += [CorpusUnit(f"text/{os.path.basename(p)}", "text", p, blanks_separate_docs)
              for p in list_corpus_files(corpus_dir)]
  for i, dump in enumerate(wikipedia_dumps or ()):
    if not fileio.isfile(dump):
      raise DataPrepError(f"Wikipedia dump {dump} not found; pass a pages-articles .xml or .xml.bz2 file")
    units.append(CorpusUnit(f"wikipedia/{i}/{os.path.basename(str(dump))}", "wikipedia", str(dump)))
  if books_dir:
    root = str(books_dir)
    units += [CorpusUnit("books/" + os.path.relpath(p, root).replace(os.sep, "/"), "book", p)
              for p in list_books(root)]
  if tfds:
    units.append(CorpusUnit(f"tfds/{tfds['name']}/{tfds.get('split', 'train')}", "tfds",
                            tfds=tuple(sorted(tfds.items()))))
  return units


def iter_unit_documents(unit, stats=None):
  """The documents of one unit, as the source's own reader yields them."""
  stats = stats if stats is not None else CorpusStats()
  if unit.kind == "text":
    return iter_text_file(unit.path, unit.blanks_separate_docs, stats)
  if unit.kind == "wikipedia":
    return iter_wikipedia_dump(unit.path, stats)
  if unit.kind == "book":
    return iter_book(unit.path, stats)
  if unit.kind == "tfds":
    return iter_tfds(stats=stats, **dict(unit.tfds))
  raise ValueError(f"unknown corpus unit kind {unit.kind!r}")
