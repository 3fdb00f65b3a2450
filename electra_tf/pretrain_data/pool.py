"""The local builder's process pool: the parent and spawned workers take chunks from one queue, results
come back in chunk order. A ``DataPrepError`` raised in a worker (a damaged archive, an index that does
not match its dump) reaches the parent as the same one-line error.

Stop signals are the parent's: ``interrupt_on_stop_signals`` turns SIGINT or SIGTERM into an exception in the
parent, whose clean-up terminates the workers. The workers ignore SIGINT (a terminal's Ctrl-C reaches every
process of the job), die on the parent's SIGTERM and end on their own when the parent is gone."""

import contextlib
import multiprocessing
import queue
import signal
import threading
import types

from electra_tf import runtime
from electra_tf.errors import DataPrepError


# Tasks submitted and not yet yielded, per process. Results leave in task order, so one slow task holds back
# the window: at 2 the worker of a 2-process dump build sat idle behind the parent's task. At 8, two processes
# against one: benchmarks/README.md, "Corpus builds end to end". Each task holds about ``chunk_chars`` of text
# and its examples.
IN_FLIGHT_PER_PROCESS = 8

# How often an idle worker checks that its parent is still running (a parent killed with SIGKILL cannot end it).
PARENT_CHECK_SECONDS = 1.0

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Interrupted(BaseException):
  """A stop signal ended the work: raised in the main thread where it arrived, as ``KeyboardInterrupt`` is, so
  that a blocking read or wait ends too; a ``BaseException``, so that no ``except Exception`` takes it for a
  failure of what it interrupted. ``signal`` is its number."""

  def __init__(self, number: int):
    super().__init__(f"interrupted by signal {number}")
    self.signal = number


@contextlib.contextmanager
def interrupt_on_stop_signals(error):
  """``with interrupt_on_stop_signals(error) as interrupts:`` the first SIGTERM or SIGINT raises ``Interrupted``
  in the main thread, and the block ends with ``error(signal number)`` in its place once its clean-up has run.

  Every stop signal is also recorded as ``runtime.stop_requests`` records it, so that a command exits 128 + its
  number. Signals after the first, and any after ``interrupts.hold()`` or the end of the block, are only
  recorded: hold before a clean-up or a publish that must not be cut short. Outside the main thread nothing is
  caught."""
  state = types.SimpleNamespace(armed=False)
  state.hold = lambda: setattr(state, "armed", False)
  with runtime.stop_requests(STOP_SIGNALS) as stop:
    record = {}
    if threading.current_thread() is threading.main_thread():
      record = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

      def interrupt(number, frame):
        if callable(record[number]):
          record[number](number, frame)
        if state.armed:
          state.armed = False
          raise Interrupted(number)
      for sig in STOP_SIGNALS:
        signal.signal(sig, interrupt)
    try:
      state.armed = True
      if stop.signal is not None:  # arrived while the handlers were being installed
        raise Interrupted(stop.signal)
      yield state
    except Interrupted as e:
      raise error(e.signal) from None
    finally:
      state.armed = False
      for sig, handler in record.items():
        signal.signal(sig, handler)


def serve(task_q, result_q, init, work):
  """A worker's loop: ``init()`` once, then ``result_q.put(work(task))`` until the task is None or the parent
  process is gone. SIGINT is ignored: the parent handles it and ends the workers with SIGTERM."""
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  parent = multiprocessing.parent_process()
  try:
    init()
    while True:
      try:
        task = task_q.get(timeout=PARENT_CHECK_SECONDS)
      except queue.Empty:
        if parent is not None and not parent.is_alive():
          result_q.cancel_join_thread()  # no one reads the results any more: exit without flushing them
          return
        continue
      if task is None:
        return
      result_q.put(work(task))
  except BaseException as e:  # pylint: disable=broad-except
    result_q.put(("error", type(e).__name__, str(e)))


class SharedWork:
  """The parent and ``num_workers`` spawned processes take tasks from one queue.

  The parent works too (``work(*task)``, its tokenizer is already loaded), so no time is lost while the
  workers start up; results (each with ``.index``, the task's first element) are yielded in task order and at
  most ``IN_FLIGHT_PER_PROCESS * processes`` tasks are in flight, which bounds memory.
  ``worker_main(task_q, result_q)`` is each worker's target (picklable: spawned). The workers start with SIGINT
  ignored: a Ctrl-C while one starts up prints nothing there.
  """

  def __init__(self, work, tasks, num_workers, worker_main, parent_works=True):
    self._parent_works = parent_works
    ctx = multiprocessing.get_context("spawn")
    self._work = work
    self._tasks = iter(tasks)
    self._task_q = ctx.Queue()
    self._result_q = ctx.Queue()
    self._max_pending = IN_FLIGHT_PER_PROCESS * (num_workers + 1)
    self._procs = [ctx.Process(target=worker_main, args=(self._task_q, self._result_q), daemon=True)
                   for _ in range(num_workers)]
    try:
      self._start()
    except BaseException:
      self.close(terminate=True)
      raise

  def _start(self):
    """Starts the workers with SIGINT ignored, a disposition they inherit (the handler this process has comes
    back afterwards; a SIGINT in those milliseconds is lost)."""
    if threading.current_thread() is not threading.main_thread():
      for proc in self._procs:
        proc.start()
      return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
      for proc in self._procs:
        proc.start()
    finally:
      signal.signal(signal.SIGINT, previous)

  @staticmethod
  def _receive(result, done):
    if isinstance(result, tuple) and result and result[0] == "error":
      if result[1] == "DataPrepError":
        raise DataPrepError(result[2])
      raise RuntimeError(f"a data prep worker failed: {result[1]}: {result[2]}")
    done[result.index] = result

  def results(self):
    done, submitted, next_index, exhausted = {}, 0, 0, False
    while True:
      while not exhausted and submitted - next_index < self._max_pending:
        task = next(self._tasks, None)
        if task is None:
          exhausted = True
        else:
          self._task_q.put(task)
          submitted += 1
      while True:
        try:
          self._receive(self._result_q.get_nowait(), done)
        except queue.Empty:
          break
      while next_index in done:
        yield done.pop(next_index)
        next_index += 1
      if exhausted and next_index == submitted:
        return
      try:  # no result ready: work on a queued task here instead of waiting
        if not self._parent_works:
          raise queue.Empty
        task = self._task_q.get(timeout=0.05)
        done[task[0]] = self._work(*task)
      except queue.Empty:
        try:
          self._receive(self._result_q.get(timeout=1.0), done)
        except queue.Empty:
          if not all(p.is_alive() for p in self._procs):
            raise RuntimeError("a data prep worker process died (out of memory?)") from None

  def close(self, terminate=False):
    """Stops the workers; all results are in, so one still starting up is simply terminated.

    ``terminate``: the work ended early (an error, a stop signal); the workers are terminated at once, and this
    process's exit does not wait for the tasks still queued for them."""
    if terminate:
      self._task_q.cancel_join_thread()  # its feeder thread may be blocked on a pipe no worker reads any more
    else:
      for _ in self._procs:
        self._task_q.put(None)
    for proc in self._procs:
      if proc.pid is None:  # never started
        continue
      proc.join(timeout=0 if terminate else 0.5)
      if proc.is_alive():
        proc.terminate()
        proc.join()
