"""Safe outputs: every output appears whole or not at all (written under a temporary name beside the
destination, then renamed), so an interrupted job never leaves a half-written file; and an output that
could not be written is reported before the work, not after it (``check_writable``)."""

import contextlib
import os
import shutil
import tempfile
import typing
import uuid

from electra_tf import fileio
from electra_tf.errors import OutputExistsError, OutputPathError


def check_writable(path: str, what: str = "output", directory: bool = False, create_parents: bool = True):
  """Raises ``OutputPathError`` (naming the problem and the fix) when ``path`` could not be written.

  Call it before long work, so that hours of it are not lost to a typo in an output path. ``path`` is a
  file (with ``directory``: a directory) the job will create, replace or write into; ``what`` names it in
  the message. Missing directories above it are fine (jobs create them) unless ``create_parents`` is False.
  Remote paths (``gs://...``) are left to the job.
  """
  if fileio.is_remote(path):
    return
  path = os.path.abspath(os.fspath(path))
  parent = os.path.dirname(path)
  if os.path.isdir(path):
    if not directory:
      raise OutputPathError(f"cannot write the {what} {path}: it is a directory; name a file")
    probe = path
  elif os.path.lexists(path) and directory:
    raise OutputPathError(f"cannot write the {what} {path}: a file is in the way; remove it or choose "
                          "another path")
  else:
    probe = parent
    while not os.path.lexists(probe):
      probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
      raise OutputPathError(f"cannot write the {what} {path}: {probe} is a file, not a directory; choose "
                            "another path")
    if probe != parent and not create_parents:
      raise OutputPathError(f"cannot write the {what} {path}: directory {parent} does not exist; create it "
                            f"(mkdir -p {parent}) or choose another path")
  try:
    # Creating a file is the real test: os.access() ignores ACLs, quotas and, for root, the mode bits.
    with tempfile.TemporaryFile(dir=probe):
      pass
  except OSError as e:
    raise OutputPathError(f"cannot write the {what} {path}: {probe} is not writable ({e.strerror}); choose "
                          "another path or fix its permissions") from None


@contextlib.contextmanager
def atomic_output(path: str, binary: bool = False, through_links: bool = False):
  """``with atomic_output(path) as f:`` what is written to ``f`` (text: UTF-8, newlines as written) lands at
  ``path`` whole when the block ends, and nowhere if it raises: it goes to a temporary file beside the
  destination, renamed over it at the end.

  The result has the mode the umask gives a new file, or the mode of the file it replaces. A destination that
  exists and is not a regular file (a named pipe), or is under ``/dev`` or ``/proc`` (``/dev/null``,
  ``/dev/stdout``), is written directly. With ``through_links`` a symbolic link is written through (its target
  replaced, the link kept); without, the link itself is replaced. On a remote filesystem (``gs://``) the text is staged locally, copied beside ``path``
  and renamed: not atomic, but ``path`` never holds a half-written file."""
  mode = "wb" if binary else "w"
  text = {} if binary else {"encoding": "utf-8", "newline": ""}
  if fileio.is_remote(path):
    fd, staged = tempfile.mkstemp(prefix=".electra-staging-")
    remote_tmp = fileio.join(os.path.dirname(str(path)), f".tmp_{uuid.uuid4().hex}")
    try:
      with os.fdopen(fd, mode, **text) as f:
        yield f
      fileio.makedirs(os.path.dirname(str(path)))
      fileio.copy(staged, remote_tmp)
      fileio.rename(remote_tmp, str(path))
    except BaseException:
      if fileio.exists(remote_tmp):
        fileio.remove(remote_tmp)
      raise
    finally:
      os.remove(staged)
    return
  path = os.fspath(path)
  if os.path.abspath(path).startswith(("/dev/", "/proc/")) or (os.path.exists(path) and not os.path.isfile(path)):
    with open(path, mode, **text) as f:
      yield f
    return
  target = os.path.realpath(path) if through_links else os.path.abspath(path)
  directory = os.path.dirname(target)
  os.makedirs(directory, exist_ok=True)
  replaced = os.stat(target).st_mode & 0o7777 if os.path.isfile(target) and not os.path.islink(target) else None
  tmp = os.path.join(directory, f".tmp_{uuid.uuid4().hex}")
  fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)  # the umask applies, as to any new file
  try:
    with os.fdopen(fd, mode, **text) as f:
      yield f
    if replaced is not None:
      os.chmod(tmp, replaced)
    os.replace(tmp, target)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise


def atomic_write(path: str, data: typing.Union[str, bytes]):
  """Writes ``data`` (text as UTF-8) to ``path`` whole or not at all (``atomic_output``)."""
  with atomic_output(path, binary=True) as f:
    f.write(data.encode("utf-8") if isinstance(data, str) else data)


class atomic_directory:  # pylint: disable=invalid-name
  """``with atomic_directory(dest, overwrite) as tmp:`` write into ``tmp``; it becomes ``dest`` on success.

  The old ``dest`` (with ``overwrite``) survives until the new one is complete; on an exception the
  temporary directory is removed and ``dest`` is untouched. Without ``overwrite`` an existing ``dest``
  raises ``OutputExistsError`` before any work.

  A remote ``dest`` (``gs://``): ``tmp`` is a local staging directory (so writers that only know local
  files work), uploaded beside ``dest`` when complete; then the old ``dest`` is deleted and the files are
  renamed in one by one. Not atomic (object stores have no directory rename), but no file under ``dest``
  is ever half-written, and a failed upload leaves the old ``dest`` in place.
  """

  def __init__(self, dest: str, overwrite: bool = False):
    if fileio.is_remote(dest):
      self.dest = str(dest).rstrip("/")
      if fileio.exists(self.dest) and not overwrite:
        raise OutputExistsError(f"{dest} already exists; pass --overwrite to replace it")
      self.tmp = tempfile.mkdtemp(prefix=".electra-staging-")
      os.chmod(self.tmp, 0o755)
      return
    self.dest = os.path.abspath(os.fspath(dest))
    if os.path.exists(self.dest) and not overwrite:
      raise OutputExistsError(f"{dest} already exists; pass --overwrite to replace it")
    parent = os.path.dirname(self.dest)
    os.makedirs(parent, exist_ok=True)
    self.tmp = tempfile.mkdtemp(prefix="." + os.path.basename(self.dest) + ".tmp-", dir=parent)
    os.chmod(self.tmp, 0o755)  # mkdtemp makes it private; the renamed result should not be

  def __enter__(self) -> str:
    return self.tmp

  def __exit__(self, exc_type, exc, tb):
    if exc_type is not None:
      shutil.rmtree(self.tmp, ignore_errors=True)
      return False
    if fileio.is_remote(self.dest):
      try:
        self._publish_remote()
      finally:
        shutil.rmtree(self.tmp, ignore_errors=True)
      return False
    if os.path.exists(self.dest):
      old = self.tmp + ".old"
      os.rename(self.dest, old)
      os.rename(self.tmp, self.dest)
      shutil.rmtree(old, ignore_errors=True)
    else:
      os.rename(self.tmp, self.dest)
    return False


  def _publish_remote(self):
    staged = fileio.join(os.path.dirname(self.dest), f".{os.path.basename(self.dest)}.tmp-{uuid.uuid4().hex}")
    fileio.upload(self.tmp, staged)  # the slow part; the old dest is untouched until it is done
    fileio.makedirs(staged)  # an empty result is still a directory
    if fileio.exists(self.dest):
      fileio.rmtree(self.dest)
    fileio.makedirs(self.dest)
    for rel in fileio.walk_files(self.tmp):
      target = fileio.join(self.dest, rel)
      fileio.makedirs(os.path.dirname(target))
      fileio.rename(fileio.join(staged, rel), target)
    fileio.rmtree(staged, ignore_errors=True)
