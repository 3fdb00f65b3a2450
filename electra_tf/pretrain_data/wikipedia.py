"""MediaWiki XML dumps: the raw wikitext of their articles, whole or by multistream byte ranges.

Reading only splits the XML into pages (bzip2/gzip + expat, cheap); turning wikitext into sentences
(wikitext.py, then the sentence splitter) is left to whoever packs the chunk, so that a build's worker
processes, or a Beam pipeline's workers, do the costly part.

A ``*-multistream.xml.bz2`` dump is a series of independent bzip2 streams of 100 pages each; its
``*-multistream-index.txt.bz2`` lists ``offset:page_id:title`` for every page. When the index sits beside
the dump, the dump is read as many byte ranges of whole streams, each decompressed and split alone, so no
reader streams the whole file.
"""

import bz2
import dataclasses
import gzip
import re
import xml.etree.ElementTree as ET

from electra_tf import fileio
from electra_tf.errors import DataPrepError

# The compression of a dump is read from its first bytes, so a renamed or oddly named dump still opens.
_BZ2_MAGIC, _GZIP_MAGIC = b"BZh", b"\x1f\x8b"
_DUMP_ROOT = b"<mediawiki"
_DUMP_SNIFF_BYTES = 1 << 12  # the root element follows at most an XML declaration and a comment
_PAGE = re.compile(rb"<page>.*?</page>", re.DOTALL)
# Index offsets spot-checked for a bzip2 stream header when the units are listed (each costs a seek).
_INDEX_CHECKS = 32


def decompressing(opener, path):
  # A remote file (gs://) is streamed through tf.io.gfile; local ones keep the library's own open.
  return opener(fileio.open_file(path, "rb") if fileio.is_remote(path) else path, "rb")


def open_dump(path):
  with fileio.open_file(path, "rb") as f:
    magic = f.read(3)
  if magic.startswith(_BZ2_MAGIC):
    return decompressing(bz2.open, path)
  if magic.startswith(_GZIP_MAGIC):
    return decompressing(gzip.open, path)
  return fileio.open_file(path, "rb")


def _dump_head(path):
  with open_dump(path) as f:
    return f.read(_DUMP_SNIFF_BYTES)


def is_wikipedia_dump(path):
  """True when ``path`` (plain, bzip2 or gzip) opens with a MediaWiki XML export's root element."""
  try:
    return _DUMP_ROOT in _dump_head(path)
  except (OSError, EOFError):
    return False  # unreadable: the text check skips it with the reason


def damaged_dump(path, problem):
  return DataPrepError(f"Wikipedia dump {path} is truncated or corrupt ({problem}); download it again and "
                       "pass the complete pages-articles .xml or .xml.bz2 file")


def check_dump(path):
  """A missing file, one that is no MediaWiki dump or one whose start does not decompress: one line."""
  if not fileio.isfile(path):
    raise DataPrepError(f"Wikipedia dump {path} not found; pass a pages-articles .xml or .xml.bz2 file")
  try:
    head = _dump_head(path)
  except EOFError as e:
    raise damaged_dump(path, f"the compressed stream ends early: {e}") from None
  except OSError as e:
    raise damaged_dump(path, f"{type(e).__name__}: {e}") from None
  if _DUMP_ROOT not in head:
    raise DataPrepError(f"{path} is not a MediaWiki XML dump (no <mediawiki> element at its start); pass a "
                        "pages-articles .xml or .xml.bz2 file (plain text files go in --corpus-dir)")


def _local(tag):
  return tag.rsplit("}", 1)[-1]


def _article_text(page):
  """The wikitext of a parsed <page> element, or None: only main-namespace pages that are no redirects."""
  ns = redirect = text = None
  for child in page.iter():
    name = _local(child.tag)
    if name == "ns":
      ns = (child.text or "").strip()
    elif name == "redirect":
      redirect = True
    elif name == "text":
      text = child.text or ""
  if ns not in (None, "0") or redirect or not text or text.lstrip()[:9].lower() == "#redirect":
    return None
  return text


def iter_articles(path):
  """Streams the raw wikitext of every article of a whole dump (``.xml``, ``.xml.bz2``, ``.xml.gz``).

  A truncated or corrupt file (bad XML, a bzip2 or gzip stream that ends early or fails to decompress)
  raises ``DataPrepError`` naming it.
  """
  try:
    with open_dump(path) as f:
      for _, elem in ET.iterparse(f, events=("end",)):
        if _local(elem.tag) != "page":
          continue
        text = _article_text(elem)
        elem.clear()  # keep memory flat while streaming
        if text is not None:
          yield text
  except ET.ParseError as e:
    raise damaged_dump(path, f"not valid XML: {e}") from None
  except EOFError as e:  # bz2/gzip: the stream ends before its end-of-stream marker
    raise damaged_dump(path, f"the compressed stream ends early: {e}") from None
  except OSError as e:  # bz2 "Invalid data stream", gzip BadGzipFile / CRC errors
    raise damaged_dump(path, f"{type(e).__name__}: {e}") from None


# ---------------------------------------------------------------------------------------------------
# Multistream dumps.


@dataclasses.dataclass(frozen=True)
class StreamRange:
  """Whole bzip2 streams ``[start, end)`` of a multistream dump holding ``num_pages`` pages (per the index)."""
  start: int
  end: int
  num_pages: int


def index_path(dump):
  """The multistream index that belongs beside ``dump`` (``X-multistream.xml.bz2`` ->
  ``X-multistream-index.txt.bz2``), or None when there is none."""
  name = str(dump)
  if not name.endswith(".xml.bz2"):
    return None
  candidate = name[:-len(".xml.bz2")] + "-index.txt.bz2"
  return candidate if fileio.isfile(candidate) else None


def _mismatch(dump, index, problem):
  return DataPrepError(f"multistream index {index} does not match Wikipedia dump {dump} ({problem}); put the "
                       "index of the same dump beside it, or move the index away to read the dump whole")


def read_index(dump, index):
  """Stream offsets and their page counts from ``index``, checked against ``dump``: [(offset, pages)]."""
  counts = {}
  try:
    with decompressing(bz2.open, index) as f:
      for number, line in enumerate(f, 1):
        head = line.split(b":", 1)[0]
        if not head.strip():
          continue
        if not head.isdigit():
          raise _mismatch(dump, index, f"line {number} does not start with a byte offset")
        offset = int(head)
        counts[offset] = counts.get(offset, 0) + 1
  except (OSError, EOFError) as e:
    raise _mismatch(dump, index, f"the index does not decompress: {type(e).__name__}: {e}") from None
  offsets = sorted(counts)
  size = fileio.getsize(dump)
  if not offsets:
    raise _mismatch(dump, index, "the index lists no pages")
  if offsets[-1] >= size:
    raise _mismatch(dump, index, f"offset {offsets[-1]} is past the dump's end ({size} bytes)")
  step = max(1, len(offsets) // _INDEX_CHECKS)
  with fileio.open_file(dump, "rb") as f:
    for offset in offsets[::step] + offsets[-1:]:
      f.seek(offset)
      if f.read(3) != _BZ2_MAGIC:
        raise _mismatch(dump, index, f"no bzip2 stream starts at offset {offset}")
  return [(o, counts[o]) for o in offsets]


def stream_ranges(dump, index, unit_bytes):
  """The dump cut into ranges of consecutive streams of at least ``unit_bytes`` compressed bytes each
  (the last range runs to the end of the file, taking the closing stream)."""
  streams = read_index(dump, index)
  size = fileio.getsize(dump)
  ranges, start, pages = [], streams[0][0], 0
  for i, (offset, count) in enumerate(streams):
    pages += count
    end = streams[i + 1][0] if i + 1 < len(streams) else size
    if end - start >= unit_bytes or end == size:
      ranges.append(StreamRange(start, end, pages))
      start, pages = end, 0
  return ranges


def iter_range_articles(dump, index, rng):
  """The raw wikitext of the articles in one StreamRange; the page count is checked against the index."""
  with fileio.open_file(dump, "rb") as f:
    f.seek(rng.start)
    data = f.read(rng.end - rng.start)
  try:
    xml = bz2.decompress(data)
  except (OSError, EOFError, ValueError) as e:
    raise _mismatch(dump, index, f"bytes {rng.start}-{rng.end} are no whole bzip2 streams: "
                    f"{type(e).__name__}: {e}") from None
  pages = _PAGE.findall(xml)
  if len(pages) != rng.num_pages:
    raise _mismatch(dump, index, f"bytes {rng.start}-{rng.end} hold {len(pages)} pages, the index lists "
                    f"{rng.num_pages}")
  texts = []
  for page in pages:
    try:
      text = _article_text(ET.fromstring(page))
    except ET.ParseError as e:
      raise damaged_dump(dump, f"not valid XML at bytes {rng.start}-{rng.end}: {e}") from None
    if text is not None:
      texts.append(text)
  return texts


def range_key(dump_key, rng):
  return f"{dump_key}@{rng.start}"
