"""The training log (``runtime/training_log.py``): what a run writes at each point, from the loops' sums."""

import types

import numpy as np
import pytest

from electra_tf import reporting, runtime
from electra_tf.runtime.controller import LoopReport
from electra_tf.runtime.training_log import Logging, TrainingLog


class _Runner:
  """What the log reads from the runner: schedule, writer, loss scale, the task's loss key, say/postfix."""

  def __init__(self, logdir, loss_scale=None):
    self.schedule = lambda step: 1e-3 * (1 - step / 100)
    self.writer = runtime.LazySummaryWriter(str(logdir))
    self.loss_scale = loss_scale
    self.task = types.SimpleNamespace(loss_key="loss")
    self.lines, self.postfixes = [], []
    self.say = self.lines.append
    self.postfix = lambda **values: self.postfixes.append(values)


def _report(step, loss_sum, done, elapsed):
  return LoopReport(step, {"loss": np.float32(loss_sum), "grad_norm": np.float32(2 * done)}, done, elapsed)


def test_a_point_over_several_loops_logs_their_means_rate_learning_rate_and_eta(tmp_path):
  runner = _Runner(tmp_path)
  values = lambda totals, steps: {k: float(totals[k]) / steps for k in ("loss", "grad_norm")}
  log = TrainingLog(Logging(values, batch_size=8, seq_length=16, total=100, prefix="train/", lines=True), runner)
  for report in (_report(4, 10.0, 4, 2.0), _report(10, 3.0, 6, 1.0)):  # two loops, then the point at step 10
    log.add(report)
  log.point(report)
  assert log.last == pytest.approx({"loss": 1.3, "grad_norm": 2.0, "learning_rate": 1e-3 * (1 - 9 / 100),
                                    "examples_per_sec": 10 * 8 / 3.0, "tokens_per_sec": 10 * 8 * 16 / 3.0})
  assert runner.lines == [f"step 10/100  loss 1.3  grad_norm 2  learning_rate 0.00091  examples_per_sec 26.67  "
                          f"eta 0m27s"]  # 90 steps at 0.3 s; tokens/s in TensorBoard only
  assert runner.postfixes == [{"loss": "1.3", "examples_per_sec": "26.7"}]
  log.add(_report(12, 1.0, 2, 0.5))  # the next point counts only the steps after the last one
  log.point(_report(12, 1.0, 2, 0.5))
  assert log.last["loss"] == pytest.approx(0.5) and log.last["examples_per_sec"] == pytest.approx(32.0)
  runner.writer.flush()
  scalars = reporting.read_scalars(str(tmp_path))
  assert set(scalars) == {"train/" + k for k in ("loss", "grad_norm", "learning_rate", "examples_per_sec",
                                                   "tokens_per_sec")}
  assert scalars["train/loss"] == [(10, pytest.approx(1.3)), (12, pytest.approx(0.5))]


def test_the_loss_scale_is_in_the_line_and_the_result_not_in_tensorboard(tmp_path):
  scale = types.SimpleNamespace(scale=types.SimpleNamespace(numpy=lambda: 1024.0))
  runner = _Runner(tmp_path, loss_scale=scale)
  log = TrainingLog(Logging(lambda t, s: {"loss": float(t["loss"]) / s}, 4, 8, 10, rate="sequences_per_sec"),
                    runner)
  log.point(_report(1, 1.0, 1, 1.0))  # no steps since the last point: nothing to log
  assert log.last == {} and not runner.postfixes
  log.add(_report(2, 1.0, 2, 1.0))
  log.point(_report(2, 1.0, 2, 1.0))
  assert log.last["loss_scale"] == 1024.0 and log.last["sequences_per_sec"] == 8.0 and not runner.lines
  runner.writer.flush()
  assert "loss_scale" not in reporting.read_scalars(str(tmp_path))
