"""The collapse guard (``pretraining/collapse.py``) on log windows of collapsed and healthy runs."""

from electra_tf.pretraining.collapse import CollapseGuard

COLLAPSED = {"disc_recall": 0.01, "disc_auc_real": 0.52}
LEARNING = {"disc_recall": 0.20, "disc_auc_real": 0.70}
EARLY = {"disc_recall": 0.0, "disc_auc_real": 0.55}  # every run starts by calling everything original


def _feed(guard, windows, every=25):
  messages = []
  for i, values in enumerate(windows, 1):
    message = guard.update(i * every, values)
    if message:
      messages.append((i * every, message))
  return messages


def test_a_constant_discriminator_after_warmup_is_reported_once_with_the_fix():
  guard = CollapseGuard.for_run(num_train_steps=800, num_warmup_steps=80)
  assert (guard.start_step, guard.window_steps) == (80, 80)
  messages = _feed(guard, [EARLY] * 4 + [COLLAPSED] * 28)
  assert len(messages) == 1
  step, text = messages[0]
  assert step == 200  # collapsed from the window starting at 100 (the first after warmup), for 80+ steps
  assert "from step 100 to 200" in text and "learning_rate" in text and "adam_bias_correction" in text


def test_a_run_that_learns_is_never_reported():
  guard = CollapseGuard.for_run(num_train_steps=800, num_warmup_steps=80)
  # the initial plateau lasts past warmup but the run leaves it before the window is full
  assert _feed(guard, [EARLY] * 6 + [LEARNING] * 26) == []


def test_an_interrupted_plateau_restarts_the_window():
  guard = CollapseGuard(start_step=0, window_steps=100)
  windows = [COLLAPSED] * 3 + [LEARNING] + [COLLAPSED] * 3 + [LEARNING] * 5
  assert _feed(guard, windows) == []


def test_mlm_only_runs_have_nothing_to_judge():
  guard = CollapseGuard(start_step=0, window_steps=10)
  assert _feed(guard, [{"mlm_loss": 5.0}] * 20) == []
