"""OpenWebText as the reference's quickstart has it: ``openwebtext.tar.xz`` holds about 20,000
``urlsf_subset*.xz`` archives (tar + xz), each holding ``.txt`` files, one web page per file.

Archives are streamed with tarfile + lzma, never extracted to disk. Each ``.txt`` is one document, read as
the reference's ``build_openwebtext_pretraining_dataset.py`` reads it (``blanks_separate_docs=False``:
lines stripped, empty lines skipped). The reference extracts each archive and shuffles its files with
the global unseeded ``random``; here they are taken in archive order (packing's own seeded randomness
is unchanged), so a seed gives the same examples.
"""

import io
import lzma
import os
import tarfile

from electra_tf import fileio
from electra_tf.errors import DataPrepError

TARBALL = "openwebtext.tar.xz"


def _archives_in(directory):
  return sorted(os.path.join(directory, n) for n in fileio.listdir(directory)
                if not n.startswith(".") and n.endswith(".xz") and n != TARBALL
                and fileio.isfile(os.path.join(directory, n)))


def list_sources(source):
  """``source`` (a directory of ``urlsf_subset*.xz`` archives, ``openwebtext.tar.xz`` itself, or a
  directory holding only that) -> ("archives", [paths]) or ("tarball", path)."""
  source = str(source)
  if fileio.isfile(source):
    return "tarball", source
  if not fileio.isdir(source):
    raise DataPrepError(f"OpenWebText source {source} does not exist; pass --openwebtext-dir with the "
                        f"urlsf_subset*.xz archives (the directory {TARBALL} unpacks to) or {TARBALL} itself")
  archives = _archives_in(source)
  if archives:
    return "archives", archives
  if fileio.isfile(os.path.join(source, TARBALL)):
    return "tarball", os.path.join(source, TARBALL)
  raise DataPrepError(f"--openwebtext-dir {source} holds no .xz archives; pass the directory of "
                      f"urlsf_subset*.xz archives (what {TARBALL} unpacks to) or {TARBALL} itself")


def _damaged(name, error):
  return DataPrepError(f"OpenWebText archive {name} is truncated or corrupt ({type(error).__name__}: "
                       f"{error}); download {TARBALL} again")


def text_to_document(text):
  """One ``.txt`` -> one document: the reference's reading with blanks_separate_docs=False."""
  return [line.strip() for line in text.split("\n") if line.strip()]


def archive_documents(name, data=None):
  """The documents of one ``urlsf_subset*.xz`` archive: read from ``name`` (a path) or from ``data``
  (its bytes, as the tarball hands them over). Empty files give no document."""
  docs, found = [], 0
  try:
    fileobj = io.BytesIO(data) if data is not None else fileio.open_file(name, "rb")
    with fileobj, tarfile.open(fileobj=fileobj, mode="r:*") as tar:
      for member in tar:
        if not (member.isfile() and member.name.endswith(".txt")):
          continue
        found += 1
        doc = text_to_document(tar.extractfile(member).read().decode("utf-8", errors="replace"))
        if doc:
          docs.append(doc)
  except (tarfile.TarError, lzma.LZMAError, EOFError, OSError) as e:
    raise _damaged(name, e) from None
  if not found:
    raise DataPrepError(f"OpenWebText archive {name} holds no .txt documents; pass the urlsf_subset*.xz "
                        f"archives that {TARBALL} unpacks to")
  return docs


def iter_tarball(path):
  """(archive name, archive bytes) for each ``.xz`` member of ``openwebtext.tar.xz``, streamed in order."""
  found = 0
  try:
    with fileio.open_file(path, "rb") as raw, tarfile.open(fileobj=raw, mode="r|*") as tar:
      for member in tar:
        if member.isfile() and member.name.endswith(".xz"):
          found += 1
          yield os.path.basename(member.name), tar.extractfile(member).read()
  except (tarfile.TarError, lzma.LZMAError, EOFError, OSError) as e:
    raise _damaged(path, e) from None
  if not found:
    raise DataPrepError(f"{path} holds no urlsf_subset*.xz archives; pass {TARBALL} or the directory it "
                        "unpacks to")
