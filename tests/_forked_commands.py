"""The checkout's commands run in children forked from one process that has already imported TensorFlow and the
package, so that a command starts in a fraction of a second instead of paying the 5-6 s import each time.

``CommandServer().run(argv, cwd, timeout)`` stands in for ``subprocess.run([python, *argv], cwd=cwd, ...)``:
``argv`` is what follows ``python`` (a script path or ``-m`` and a module, then the flags). The child is a
process of its own: its working directory, ``sys.argv``, stdin (``/dev/null``), stdout and stderr (files the
server reads back), and its exit status as the interpreter would give it (``SystemExit``'s code; 1 and the
traceback on stderr for an uncaught exception; the ``atexit`` functions run). What differs from a fresh
interpreter: the modules the server imported are imported already (their start-up lines were printed once,
by the server), and the environment is the server's, which is the one the commands would get
(``environment()``), plus the variables a command is given (``run(..., env=...)``). tests/test_bad_inputs.py
compares both ways on a few cases.

Nothing here needs pytest.
"""

import json
import os
import pathlib
import select
import signal
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent


def environment() -> dict:
  """The environment the commands run with: this one, TensorFlow's start-up logging quiet, the checkout first
  on the import path."""
  return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))


class Completed:
  """What ``subprocess.run(..., capture_output=True, text=True)`` would return."""

  def __init__(self, args, returncode: int, stdout: str, stderr: str):
    self.args, self.returncode, self.stdout, self.stderr = args, returncode, stdout, stderr


class CommandServer:
  """A server process (started on first use, ended by ``close``) that forks one child per command."""

  def __init__(self):
    self._proc = None
    self._dir = None

  def _start(self):
    self._dir = self._dir or tempfile.mkdtemp(prefix="forked_commands_")
    with open(os.path.join(self._dir, "server.log"), "w", encoding="utf-8") as log:
      self._proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=log, text=True, env=environment(),
                                    cwd=self._dir)
    reply = self._proc.stdout.readline()
    if reply.strip() != "ready":
      raise RuntimeError(f"the command server did not start: {self._server_log()}")

  def _server_log(self) -> str:
    return pathlib.Path(self._dir, "server.log").read_text(encoding="utf-8", errors="replace")[-3000:]

  def run(self, argv, cwd, timeout: float = 900, env=None) -> Completed:
    """``env``: variables the command sees besides (or instead of) the server's environment."""
    if self._proc is None or self._proc.poll() is not None:
      self._start()
    out, err = os.path.join(self._dir, "stdout"), os.path.join(self._dir, "stderr")
    argv = [str(a) for a in argv]
    self._proc.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd), "stdout": out, "stderr": err,
                                       "timeout": timeout, "env": dict(env or {})}) + "\n")
    self._proc.stdin.flush()
    reply = self._proc.stdout.readline()
    if not reply:
      raise RuntimeError(f"the command server ended: {self._server_log()}")
    returncode = json.loads(reply)["returncode"]
    if returncode is None:
      raise subprocess.TimeoutExpired([sys.executable, *argv], timeout)
    read = lambda path: pathlib.Path(path).read_text(encoding="utf-8", errors="replace")
    return Completed([sys.executable, *argv], returncode, read(out), read(err))

  def close(self):
    if self._proc is not None:
      self._proc.stdin.close()
      self._proc.wait(timeout=60)
      self._proc = None
    if self._dir is not None:
      for name in ("stdout", "stderr", "server.log"):
        pathlib.Path(self._dir, name).unlink(missing_ok=True)
      os.rmdir(self._dir)
      self._dir = None


# ---- the server ----------------------------------------------------------------------------------------------


def _exit_code(code) -> int:
  """The status the interpreter gives ``sys.exit(code)``."""
  if code is None:
    return 0
  if isinstance(code, int):
    return code
  print(code, file=sys.stderr)
  return 1


def _child(request):
  """Runs the command in this forked child; never returns."""
  code = 1
  try:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
      os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    os.chdir(request["cwd"])
    os.environ.update(request["env"])
    import atexit  # pylint: disable=import-outside-toplevel
    import runpy  # pylint: disable=import-outside-toplevel
    import traceback  # pylint: disable=import-outside-toplevel
    argv = request["argv"]
    try:
      if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        sys.path[0] = os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
      else:
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")
      code = 0
    except SystemExit as e:
      code = _exit_code(e.code)
    except BaseException:  # pylint: disable=broad-except
      traceback.print_exc()
      code = 1
    atexit._run_exitfuncs()  # pylint: disable=protected-access
  finally:
    for stream in (sys.stdout, sys.stderr):
      try:
        stream.flush()
      except Exception:  # pylint: disable=broad-except
        pass
    os._exit(code)  # pylint: disable=protected-access


def _wait(pid: int, timeout: float):
  """The child's exit status, or None after killing it at ``timeout`` seconds."""
  deadline = time.monotonic() + timeout
  while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
      return os.waitstatus_to_exitcode(status)
    if time.monotonic() > deadline:
      os.kill(pid, signal.SIGKILL)
      os.waitpid(pid, 0)
      return None
    select.select([], [], [], 0.02)


def _serve():
  # What every command imports: TensorFlow and the package's jobs (their import is what the children save).
  import electra_tf.cli.common  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
  import electra_tf.convert  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
  import electra_tf.finetuning.run  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
  import electra_tf.pretraining.trainer  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
  import electra_tf.pretrain_data.build  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
  print("ready", flush=True)
  for line in sys.stdin:
    request = json.loads(line)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
      _child(request)
    print(json.dumps({"returncode": _wait(pid, request["timeout"])}), flush=True)


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
  _serve()
