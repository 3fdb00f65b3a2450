"""Files on any TensorFlow filesystem: local paths, ``gs://`` buckets (TPU users), ``ram://`` (tests).

Every module reads and writes data, vocabs, models, metadata and results through these helpers, so a path
with a scheme (``gs://...``) works wherever a local one does. Local paths keep Python's own file APIs (the
same permissions, newlines and errors as before); paths with ``://`` go through ``tf.io.gfile``.

Libraries that open only local file names (safetensors, torch) read through ``local_copy``; directory
writers stage locally (``runtime.atomic_directory``) and ``upload`` when complete.
"""

import contextlib
import glob as _glob
import io
import os
import shutil
import tempfile
import typing


class _LazyTensorFlow:
  """``tensorflow``, imported at the first remote path: local work (building data from local text, for one)
  starts without paying TensorFlow's import."""

  def __getattr__(self, name):
    import tensorflow  # pylint: disable=import-outside-toplevel
    return getattr(tensorflow, name)


tf = _LazyTensorFlow()


def is_remote(path) -> bool:
  """``gs://bucket/x``, ``ram://x``, ``s3://x``: a TensorFlow filesystem path rather than a local one."""
  return "://" in str(path)


def abspath(path) -> str:
  """``os.path.abspath`` for local paths; remote ones are absolute already."""
  return str(path) if is_remote(path) else os.path.abspath(path)


def join(*parts) -> str:
  return os.path.join(*[str(p) for p in parts])  # posixpath semantics also hold for URLs


def exists(path) -> bool:
  return tf.io.gfile.exists(str(path)) if is_remote(path) else os.path.exists(path)


def isdir(path) -> bool:
  if not is_remote(path):
    return os.path.isdir(path)
  if not tf.io.gfile.isdir(str(path)):
    return False
  # ram:// calls any prefix of a file name a directory ("x/ckpt-4" of "x/ckpt-4.index"): ask for a child
  # there (its empty directories then read as absent, which no caller minds).
  return not str(path).startswith("ram://") or bool(tf.io.gfile.glob(str(path).rstrip("/") + "/*"))


def isfile(path) -> bool:
  if not is_remote(path):
    return os.path.isfile(path)
  # gfile has no isfile; stat fails on a missing path and reports directories (buckets list "x/" objects).
  try:
    return not tf.io.gfile.stat(str(path)).is_directory
  except tf.errors.OpError:
    return False


def getmtime(path) -> float:
  return tf.io.gfile.stat(str(path)).mtime_nsec / 1e9 if is_remote(path) else os.path.getmtime(path)


def getsize(path) -> int:
  return tf.io.gfile.stat(str(path)).length if is_remote(path) else os.path.getsize(path)


def listdir(path) -> typing.List[str]:
  if is_remote(path):
    return [n.rstrip("/") for n in tf.io.gfile.listdir(str(path))]  # buckets list subdirectories as "x/"
  return os.listdir(path)


def glob(pattern) -> typing.List[str]:
  return tf.io.gfile.glob(str(pattern)) if is_remote(pattern) else _glob.glob(pattern)


def makedirs(path):
  if is_remote(path):
    tf.io.gfile.makedirs(str(path))
  else:
    os.makedirs(path, exist_ok=True)


class _GFileRaw(io.RawIOBase):
  """A remote file as a raw binary stream, so ``io.TextIOWrapper``, ``gzip`` and ``bz2`` can wrap it (GFile
  itself lacks ``readable``/``readinto``)."""

  def __init__(self, path: str):
    super().__init__()
    self._f = tf.io.gfile.GFile(path, "rb")

  def readable(self) -> bool:
    return True

  def readinto(self, b) -> int:
    data = self._f.read(len(b))
    b[:len(data)] = data
    return len(data)

  def close(self):
    self._f.close()
    super().close()


def open_file(path, mode: str = "r", encoding: str = "utf-8", newline=None):
  """``open`` for local paths; ``tf.io.gfile.GFile`` (text is UTF-8) for remote ones, and a buffered binary
  stream for remote ``"rb"``."""
  if is_remote(path):
    if mode == "rb":
      return io.BufferedReader(_GFileRaw(str(path)), buffer_size=1 << 20)
    return tf.io.gfile.GFile(str(path), mode)
  if "b" in mode:
    return open(path, mode)  # pylint: disable=unspecified-encoding
  return open(path, mode, encoding=encoding, newline=newline)


def read_bytes(path) -> bytes:
  with open_file(path, "rb") as f:
    return f.read()


def read_text(path) -> str:
  return read_bytes(path).decode("utf-8")


def remove(path):
  if is_remote(path):
    tf.io.gfile.remove(str(path))
  else:
    os.remove(path)


def rmtree(path, ignore_errors: bool = False):
  if not is_remote(path):
    shutil.rmtree(path, ignore_errors=ignore_errors)
    return
  try:
    tf.io.gfile.rmtree(str(path))
  except tf.errors.OpError:
    if not ignore_errors:
      raise


def copy(src, dst):
  """Copies one file's bytes (either side may be remote); ``dst`` is replaced."""
  if is_remote(src) or is_remote(dst):
    tf.io.gfile.copy(str(src), str(dst), overwrite=True)
  else:
    shutil.copyfile(src, dst)


def rename(src, dst):
  """Replaces ``dst`` by the file ``src``. Local: one atomic ``os.replace``. Object stores (``gs://``):
  a copy then a delete, not atomic, but ``dst`` only ever holds the old or the whole new bytes."""
  if is_remote(src) or is_remote(dst):
    tf.io.gfile.rename(str(src), str(dst), overwrite=True)
  else:
    os.replace(src, dst)


def move(src, dst):
  """Moves a file or a directory tree. Remote: file by file (object stores have no directory rename)."""
  if not (is_remote(src) or is_remote(dst)):
    shutil.move(src, dst)
    return
  if not isdir(src):
    rename(src, dst)
    return
  for rel in list(walk_files(src)):
    makedirs(os.path.dirname(join(dst, rel)))
    rename(join(src, rel), join(dst, rel))
  rmtree(src, ignore_errors=True)


def walk(root):
  """``os.walk`` on any filesystem: (directory, subdirectory names, file names)."""
  if not is_remote(root):
    return os.walk(root)
  return ((top, [d.rstrip("/") for d in dirs], files) for top, dirs, files in tf.io.gfile.walk(str(root)))


def walk_files(root) -> typing.Iterator[str]:
  """Every file under ``root``, as paths relative to it."""
  for top, _, files in walk(root):
    rel = os.path.relpath(top, root) if not is_remote(root) else top[len(str(root).rstrip("/")):].lstrip("/")
    for name in files:
      yield os.path.normpath(os.path.join(rel, name)) if rel not in ("", ".") else name


def upload(local_dir, dest_dir):
  """Copies the files of a local directory into ``dest_dir`` (any filesystem), keeping the layout."""
  for rel in walk_files(local_dir):
    target = join(dest_dir, rel)
    makedirs(os.path.dirname(target))
    copy(os.path.join(local_dir, rel), target)


@contextlib.contextmanager
def local_copy(path, suffix: str = ""):
  """``with local_copy(path) as local:`` a local file name with ``path``'s bytes: ``path`` itself when it
  is local, else a temporary copy (for libraries that only open local files, e.g. sentencepiece)."""
  if not is_remote(path):
    yield str(path)
    return
  fd, tmp = tempfile.mkstemp(suffix=suffix or os.path.splitext(str(path))[1])
  try:
    with os.fdopen(fd, "wb") as f:
      f.write(read_bytes(path))
    yield tmp
  finally:
    os.remove(tmp)
