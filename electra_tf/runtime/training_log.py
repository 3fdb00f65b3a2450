"""What a run logs while it trains, one policy for both jobs (``Runner.fit``'s ``logging``).

Every ``Logging.every`` steps (0: after every compiled loop) the values the compiled loop summed since the
last point become the job's metrics (``Logging.values``), to which the runner adds the learning rate of the
last step, the throughput and the ETA; they go to TensorBoard (the chief's writer) under ``Logging.prefix``,
beside the progress bar, and with ``Logging.lines`` into one log line. The last point's values
(``TrainingLog.last``, with the float16 loss scale when there is one) are the run's ``runner.FitResult.last_log``.
"""

import dataclasses
import typing

import numpy as np

from electra_tf.runtime.console import log_line
from electra_tf.runtime.summaries import write_scalars


@dataclasses.dataclass
class Logging:
  """``values(totals, steps)``: the job's metrics (floats) from its values summed over ``steps`` steps.
  A step is ``batch_size`` examples of ``seq_length`` tokens: the throughput is logged as ``rate`` (examples
  per second under the job's name for them) and ``tokens_per_sec``. ``total``: the run's last step (the ETA)."""
  values: typing.Callable[[dict, int], dict]
  batch_size: int
  seq_length: int
  total: int
  every: int = 0
  prefix: str = ""
  rate: str = "examples_per_sec"
  lines: bool = False


class TrainingLog:
  """The points of one ``fit``: ``add`` after every compiled loop, ``point`` where one is due."""

  def __init__(self, spec: Logging, runner):
    self.spec, self.runner = spec, runner
    self.last = {}
    self._reset()

  def _reset(self):
    self.totals, self.steps, self.seconds = None, 0, 0.0

  def add(self, report):
    """Sums a loop's values (float64, so a point over many loops adds what the loop summed in float32)."""
    totals = {k: np.asarray(v, np.float64) for k, v in report.totals.items()}
    self.totals = totals if self.totals is None else {k: self.totals[k] + v for k, v in totals.items()}
    self.steps += report.done
    self.seconds += report.elapsed

  def point(self, report):
    spec, runner = self.spec, self.runner
    if not self.steps:
      return
    values = spec.values(self.totals, self.steps)
    schedule = runner.schedule
    values["learning_rate"] = float(schedule(report.step - 1)) if callable(schedule) else float("nan")
    rate = self.steps * spec.batch_size / max(self.seconds, 1e-9)
    values[spec.rate] = rate
    values["tokens_per_sec"] = rate * spec.seq_length
    write_scalars(runner.writer, report.step, values, spec.prefix)
    if runner.loss_scale is not None:
      values["loss_scale"] = float(runner.loss_scale.scale.numpy())
    loss = values.get(runner.task.loss_key, float("nan"))
    runner.postfix(loss=f"{loss:.4g}", **{spec.rate: f"{rate:.1f}"})
    if spec.lines:
      eta = (spec.total - report.step) * self.seconds / self.steps
      runner.say(log_line(report.step, spec.total, values, eta))
    self.last = values
    self._reset()
