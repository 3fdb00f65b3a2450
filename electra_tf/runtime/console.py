"""The console: the progress bar, one training log line, durations as ETAs."""

import math
import typing


def progress_bar(enabled: bool, total: typing.Optional[int] = None, initial: int = 0, desc: str = "",
                 unit: str = "step", **kwargs):
  """A tqdm bar (throughput and ETA), or None when disabled."""
  if not enabled:
    return None
  from tqdm.auto import tqdm  # pylint: disable=g-import-not-at-top  (CLI start-up: tqdm.auto probes IPython)
  return tqdm(total=total, initial=initial, desc=desc, unit=unit, dynamic_ncols=True, **kwargs)


def log_line(step: int, total: int, values: typing.Mapping[str, float], eta_seconds: float,
             skip=("tokens_per_sec",)) -> str:
  """``step 200/800  total_loss 12.3  ...  eta 4m07s``: one training log line."""
  return (f"step {step}/{total}  " + "  ".join(f"{k} {v:.4g}" for k, v in values.items() if k not in skip)
          + f"  eta {format_duration(eta_seconds)}")


def format_duration(seconds: float) -> str:
  """``1h05m`` / ``4m07s``; ``?`` when unknown."""
  if not math.isfinite(seconds):
    return "?"
  seconds = int(seconds)
  h, rem = divmod(seconds, 3600)
  return f"{h}h{rem // 60:02d}m" if h else f"{rem // 60}m{rem % 60:02d}s"
