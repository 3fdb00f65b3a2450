"""The host loop both jobs run around the compiled loop: interval hooks, stop signals and NaN detection.

``Controller.run`` calls the compiled loop (``loop.compile_loop``) for as many steps as fit before the next
hook is due, then runs the hooks that are due, in order: logging and TensorBoard, checkpoints, evaluation,
whatever else the job registers. SIGTERM and SIGINT (preemption, Ctrl-C) finish the running loop, save a
checkpoint and return ``"interrupted"``: rerunning the same command resumes there. A NaN or infinite loss
stops the run with one ``ElectraError`` line that names the step and the last good checkpoint, which is
kept (nothing is saved after the bad step).
"""

import dataclasses
import time
import typing

from electra_tf.errors import ElectraError
from electra_tf.runtime import stop_requests
from electra_tf.runtime.loop import loop_length


@dataclasses.dataclass
class LoopReport:
  """What a hook sees after a compiled loop: the step reached and the loop's summed values."""
  step: int
  totals: dict  # summed over the loop's steps (numpy)
  done: int  # steps the loop ran
  elapsed: float  # seconds


@dataclasses.dataclass
class Hook:
  """``fn(report)`` after a loop that ends on a multiple of ``every`` (0: after every loop); at the last step
  only if ``final``. A hook's ``every`` also ends the compiled loops there."""
  fn: typing.Callable[[LoopReport], typing.Any]
  every: int = 0
  final: bool = True

  def due(self, step: int, target: int) -> bool:
    if step >= target and not self.final:
      return False
    return not self.every or step % self.every == 0 or step >= target


class Controller:
  """Runs ``loop`` from the step in ``step_var`` to ``target``.

  ``intervals``: further steps at which compiled loops end (e.g. where a log line is due within a loop);
  ``stops``: single steps at which a compiled loop ends (where a profile starts and ends).
  ``save(step)`` writes a checkpoint (called on a stop signal unless ``saved_at(step)``); ``latest()`` names
  the last good checkpoint for the NaN message; ``error_type`` is the job's ``ElectraError`` subclass and
  ``nan_advice`` the fix the NaN line suggests.
  """

  def __init__(self, loop, step_var, iterations_per_loop: int, hooks: typing.Sequence[Hook],
               save: typing.Callable[[int], typing.Any], saved_at: typing.Callable[[int], bool],
               latest: typing.Callable[[], typing.Optional[str]], error_type=ElectraError,
               nan_advice: str = "lower learning_rate", intervals: typing.Sequence[int] = (),
               stops: typing.Sequence[int] = ()):
    self.loop, self.step_var, self.iterations_per_loop = loop, step_var, iterations_per_loop
    self.hooks, self.save, self.saved_at, self.latest = list(hooks), save, saved_at, latest
    self.error_type, self.nan_advice = error_type, nan_advice
    self.intervals = [h.every for h in self.hooks if h.every] + [every for every in intervals if every]
    self.stops = list(stops)
    self.stop_signal = None
    self.finish_requested = False

  def request_finish(self):
    """Ends the run after the hooks that are running (early stopping): ``run`` returns ``"finished"``."""
    self.finish_requested = True

  def run(self, iterator, target: int, log_fn=print, where: str = "") -> str:
    """Trains to ``target``; returns ``"finished"`` or ``"interrupted"`` (a stop signal; checkpoint saved, said
    through ``log_fn``; ``where``, e.g. " in trial 2", names the part of the job that stopped)."""
    step = int(self.step_var.numpy())
    with stop_requests() as stop:
      while step < target:
        start = time.perf_counter()
        n = loop_length(step, target, self.iterations_per_loop, *self.intervals, stops=self.stops)
        totals, done, bad = self.loop(iterator, n)
        done, bad = int(done.numpy()), int(bad.numpy())
        if bad >= 0:
          raise self.error_type(
              f"loss became NaN or infinite at step {bad}; stopped without saving, the last good "
              f"checkpoint is {self.latest() or 'none'}; {self.nan_advice}")
        step = int(self.step_var.numpy())
        report = LoopReport(step, {k: v.numpy() for k, v in totals.items()}, done, time.perf_counter() - start)
        for hook in self.hooks:
          if hook.due(step, target):
            hook.fn(report)
        if self.finish_requested:
          return "finished"
        if stop.signal is not None:
          break
      if stop.signal is not None:  # also when it came during the last loop: the job stops here
        self.stop_signal = stop.signal
        if not self.saved_at(step):
          self.save(step)
        log_fn(f"stopped by signal {stop.signal}{where} at step {step}; checkpoint saved, rerun the same command "
               "to resume")
        return "interrupted"
    return "finished"
