"""The corpus as independently readable units, each cut into chunks of work.

A unit is read start to end by one reader: a file of a text directory, a Wikipedia dump (or, with its
multistream index beside it, a range of the dump's bzip2 streams), a book, a tfds split, an OpenWebText
archive (or ``openwebtext.tar.xz`` read as one stream). Reading a unit yields chunks as *payloads*: what
a worker turns into documents (``payload_documents``). For text, books and tfds that is the documents
themselves; for a dump it is raw page wikitext, or only a byte range that the worker reads itself; for
OpenWebText an archive. The costly cleanup thus runs wherever chunks are packed (worker processes, Beam
workers), and the reader of a dump only splits XML into pages.
"""

import dataclasses
import os

from electra_tf.errors import DataPrepError
from electra_tf.pretrain_data import corpus
from electra_tf.pretrain_data import openwebtext as owt
from electra_tf.pretrain_data import wikipedia

# A multistream dump is cut into units of whole streams of at least this many compressed bytes (about
# 4 MB of XML): some 20,000 units for English Wikipedia.
DUMP_UNIT_BYTES = 1 << 20


@dataclasses.dataclass(frozen=True)
class CorpusUnit:
  """One piece of the corpus read start to end by one reader.

  ``key`` names it the same on every machine (relative to its source, never an absolute path): the
  builder seeds a chunk's randomness from (seed, chunk key), which a distributed reader can compute alone,
  so the same examples come out whichever worker or process reads it.
  """
  key: str
  kind: str  # "text", "wikipedia", "wikipedia-range", "book", "tfds", "openwebtext", "openwebtext-tar"
  path: str = ""
  blanks_separate_docs: bool = True
  tfds: tuple = ()  # iter_tfds keyword arguments as sorted (name, value) pairs
  index: str = ""  # a multistream dump's index
  span: tuple = ()  # (start, end, pages, first range of its dump) of a wikipedia-range unit


def list_units(corpus_dir=None, blanks_separate_docs=True, wikipedia_dumps=(), books_dir=None, tfds=None,
               openwebtext=None, dump_unit_bytes=DUMP_UNIT_BYTES):
  """The units of the sources in corpus order: text files (sorted), dumps (as given), books (sorted), the
  tfds split, then OpenWebText archives (sorted). Listing reads no text, only a multistream index; a
  missing directory or dump, or an index that does not match its dump, is an error here."""
  units = []
  if corpus_dir:
    units += [CorpusUnit(f"text/{os.path.basename(p)}", "text", p, blanks_separate_docs)
              for p in corpus.list_corpus_files(corpus_dir)]
  for i, dump in enumerate(wikipedia_dumps or ()):
    dump = str(dump)
    wikipedia.check_dump(dump)
    key = f"wikipedia/{i}/{os.path.basename(dump)}"
    index = wikipedia.index_path(dump)
    if index:
      units += [CorpusUnit(wikipedia.range_key(key, r), "wikipedia-range", dump, index=index,
                           span=(r.start, r.end, r.num_pages, j == 0))
                for j, r in enumerate(wikipedia.stream_ranges(dump, index, dump_unit_bytes))]
    else:
      units.append(CorpusUnit(key, "wikipedia", dump))
  if books_dir:
    root = str(books_dir)
    units += [CorpusUnit("books/" + os.path.relpath(p, root).replace(os.sep, "/"), "book", p)
              for p in corpus.list_books(root)]
  if tfds:
    units.append(CorpusUnit(f"tfds/{tfds['name']}/{tfds.get('split', 'train')}", "tfds",
                            tfds=tuple(sorted(tfds.items()))))
  if openwebtext:
    layout, found = owt.list_sources(openwebtext)
    if layout == "tarball":
      units.append(CorpusUnit(f"openwebtext/{os.path.basename(found)}", "openwebtext-tar", found))
    else:
      units += [CorpusUnit(_owt_key(p), "openwebtext", p) for p in found]
  return units


def _owt_key(archive_name):
  # The same key whether the archive is a file of the directory or a member of openwebtext.tar.xz.
  return f"openwebtext/{os.path.basename(archive_name)}"


def chunk_key(unit_key, chunk_index):
  return f"{unit_key}:{chunk_index}"


def _chunks(items, size, chunk_chars):
  """Groups items into lists of about ``chunk_chars`` characters (``size(item)`` each; never split)."""
  chunk, total = [], 0
  for item in items:
    chunk.append(item)
    total += size(item)
    if total >= chunk_chars:
      yield chunk
      chunk, total = [], 0
  if chunk:
    yield chunk


def _doc_size(doc):
  return sum(len(s) for s in doc)


def iter_unit_payloads(unit, stats, chunk_chars):
  """(chunk key, payload) for each chunk of one unit, in order; counts files read and skipped into
  ``stats`` (documents and sentences are counted where payloads become documents)."""
  if unit.kind in ("text", "book") and wikipedia.is_wikipedia_dump(unit.path):
    pages = corpus._iter_found_dump(unit.path, stats)  # pylint: disable=protected-access
    chunks = (("wikitext", c) for c in _chunks(pages, len, chunk_chars))
  elif unit.kind == "wikipedia":
    stats.files_read += 1
    chunks = (("wikitext", c) for c in _chunks(wikipedia.iter_articles(unit.path), len, chunk_chars))
  elif unit.kind == "wikipedia-range":
    stats.files_read += unit.span[3]  # the dump counts once
    chunks = iter([("wikipedia-range", (unit.path, unit.index) + tuple(unit.span[:3]))])
  elif unit.kind == "openwebtext":
    stats.files_read += 1
    chunks = iter([("openwebtext", (unit.path, None))])
  elif unit.kind == "openwebtext-tar":
    stats.files_read += 1
    for name, data in owt.iter_tarball(unit.path):
      yield chunk_key(_owt_key(name), 0), ("openwebtext", (name, data))
    return
  else:
    docs = _unit_documents(unit, stats)
    chunks = (("docs", c) for c in _chunks(docs, _doc_size, chunk_chars))
  for c, payload in enumerate(chunks):
    yield chunk_key(unit.key, c), payload


def _unit_documents(unit, stats):
  if unit.kind == "text":
    return corpus.iter_text_file(unit.path, unit.blanks_separate_docs, stats)
  if unit.kind == "book":
    return corpus.iter_book(unit.path, stats)
  if unit.kind == "tfds":
    return corpus.iter_tfds(stats=stats, **dict(unit.tfds))
  raise ValueError(f"unknown corpus unit kind {unit.kind!r}")


def payload_documents(payload):
  """A chunk's payload -> its documents (lists of sentences), where the chunk is packed."""
  kind, data = payload
  if kind == "docs":
    return data
  if kind == "wikitext":
    pages = data
  elif kind == "wikipedia-range":
    dump, index, start, end, pages = data
    pages = wikipedia.iter_range_articles(dump, index, wikipedia.StreamRange(start, end, pages))
  elif kind == "openwebtext":
    return owt.archive_documents(*data)
  else:
    raise DataPrepError(f"unknown chunk payload {kind!r}")
  return [d for d in map(corpus.article_document, pages) if d]


def iter_unit_documents(unit, stats=None, chunk_chars=1 << 20):
  """The documents of one unit, as the source's own reader yields them (read here, in this process)."""
  stats = stats if stats is not None else corpus.CorpusStats()
  for _, payload in iter_unit_payloads(unit, stats, chunk_chars):
    yield from payload_documents(payload)


def source_paths(units):
  """The files the units read (for the Dataflow check that every one is remote)."""
  return [p for u in units for p in (u.path, u.index) if p]
