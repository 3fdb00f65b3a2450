"""The local builder's process pool: the parent and spawned workers take chunks from one queue, results
come back in chunk order. A ``DataPrepError`` raised in a worker (a damaged archive, an index that does
not match its dump) reaches the parent as the same one-line error."""

import multiprocessing
import queue

from electra_tf.errors import DataPrepError


# Tasks submitted and not yet yielded, per process. Results leave in task order, so one slow task holds back
# the window: at 2 the worker of a 2-process dump build sat idle behind the parent's task. At 8, two processes
# against one: benchmarks/README.md, "Corpus builds end to end". Each task holds about ``chunk_chars`` of text
# and its examples.
IN_FLIGHT_PER_PROCESS = 8


def serve(task_q, result_q, init, work):
  """A worker's loop: ``init()`` once, then ``result_q.put(work(task))`` until the task is None."""
  try:
    init()
    while True:
      task = task_q.get()
      if task is None:
        return
      result_q.put(work(task))
  except BaseException as e:  # pylint: disable=broad-except
    result_q.put(("error", type(e).__name__, str(e)))


class SharedWork:
  """The parent and ``num_workers`` spawned processes take tasks from one queue.

  The parent works too (``work(*task)``, its tokenizer is already loaded), so no time is lost while the
  workers start up; results (each with ``.index``, the task's first element) are yielded in task order and at most ``IN_FLIGHT_PER_PROCESS * processes`` tasks are in flight,
  which bounds memory. ``worker_main(task_q, result_q)`` is each worker's target (picklable: spawned).
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
    for proc in self._procs:
      proc.start()

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
    """Stops the workers; all results are in, so one still starting up is simply terminated."""
    if not terminate:
      for _ in self._procs:
        self._task_q.put(None)
    for proc in self._procs:
      proc.join(timeout=0 if terminate else 0.5)
      if proc.is_alive():
        proc.terminate()
        proc.join()
