"""Detects the constant-discriminator state while pre-training runs.

A short or small run can settle on "every token is original": replaced-token recall near 0 and a real-token
AUC near 0.5. The cause (docs/short_runs.md#what-collapse-looks-like-and-why): once the
generator has learnt the unigram distribution, a replaced token is no rarer than any other, so the token's
identity, the cue the discriminator learns first, stops telling, and only contextual features (which take
many more steps) can; a peak learning rate too hot for the warmup and length (worse with the reference's
AdamW, whose missing bias correction multiplies early updates by up to 6.6x) gets there sooner and deeper.
Fine-tuning from that state has measured worse than from random weights. The loss still looks plausible (it
is the entropy of the replacement rate), and the reference's ``disc_auc`` reads about 0.63 on the sample data
because it counts padding as certain negatives, so nothing else flags it.

``CollapseGuard.update`` sees each training log window (``disc_recall`` and ``disc_auc_real`` averaged over
the loop) and reports once the state has held for ``window_steps`` steps after ``start_step``.
"""

import dataclasses
import typing

from electra_tf.errors import PretrainingError

RECALL_MAX = 0.05
AUC_REAL_MAX = 0.6


@dataclasses.dataclass
class CollapseGuard:
  """``start_step``: first step judged (the end of warmup); ``window_steps``: how long the state must last."""
  start_step: int
  window_steps: int
  recall_max: float = RECALL_MAX
  auc_real_max: float = AUC_REAL_MAX
  _onset: typing.Optional[int] = None
  _last_step: int = 0
  reported: bool = False

  @classmethod
  def for_run(cls, num_train_steps: int, num_warmup_steps: int, first_step: int = 0) -> "CollapseGuard":
    """Judged from the end of warmup (at least a tenth of the run); the state must last a tenth of the run,
    at least 50 and at most 1,000 steps. ``first_step``: where a resumed run starts its first window."""
    start = max(num_warmup_steps, num_train_steps // 10)
    return cls(start_step=start, window_steps=min(1000, max(50, num_train_steps // 10)), _last_step=first_step)

  def update(self, step: int, values: typing.Mapping[str, float]) -> typing.Optional[str]:
    """Takes the window that ended at ``step``; returns the warning the first time collapse is seen."""
    window_start, self._last_step = self._last_step, step
    if "disc_recall" not in values or window_start < self.start_step:
      return None
    collapsed = values["disc_recall"] < self.recall_max and values["disc_auc_real"] < self.auc_real_max
    if not collapsed:
      self._onset = None
      return None
    if self._onset is None:
      self._onset = window_start
    if self.reported or step - self._onset < self.window_steps:
      return None
    self.reported = True
    return (f"the discriminator has collapsed to a constant: from step {self._onset} to {step} it called almost "
            f"every token original (disc_recall {values['disc_recall']:.3f}, real-token AUC "
            f"{values['disc_auc_real']:.3f}); fine-tuning from this state has measured worse than from random "
            "weights. The generator now replaces tokens with words as frequent as the text's own, which only "
            "context gives away, and the discriminator has not learnt that yet; a peak learning_rate too hot for "
            "num_warmup_steps and the run's length brings this on sooner and deeper (the reference's Adam has no "
            "bias correction). Fix: more steps, and for a short run "
            '{"short_run_recipe": true} (on with --model-size tiny) or a lower learning_rate, a longer '
            "num_warmup_steps and adam_bias_correction true; see docs/short_runs.md")

  def check(self, step: int, values: typing.Mapping[str, float], stop: bool,
            latest: typing.Optional[str]) -> typing.Optional[str]:
    """``update``, as the run acts on it: with ``stop`` (``stop_on_collapse``) a collapse raises
    ``PretrainingError`` naming the last checkpoint ``latest``; else the warning line, or None."""
    collapse = self.update(step, values)
    if collapse and stop:
      raise PretrainingError(f"stopped at step {step} (stop_on_collapse): {collapse}; the last checkpoint is "
                             f"{latest or 'none'}")
    return f"warning: {collapse}" if collapse else None
