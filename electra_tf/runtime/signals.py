"""Signals: SIGTERM / SIGINT turned into a stop request a training loop polls between steps."""

import contextlib
import signal
import threading
import types
import typing

_caught = []  # every stop signal a stop_requests block caught in this process, in order


def stop_signals_caught() -> typing.Tuple[int, ...]:
  """The stop signals caught so far in this process: a command that stopped on one exits 128 + its number,
  as a process the signal ended would (143 for SIGTERM, 130 for Ctrl-C), so that a script's next step does not
  run on an unfinished job."""
  return tuple(_caught)


@contextlib.contextmanager
def stop_requests(signals=(signal.SIGTERM, signal.SIGINT)):
  """``with stop_requests() as stop:`` ``stop.signal`` becomes the number of a stop signal once one arrives,
  so a loop can finish its step, checkpoint and exit cleanly; the previous handlers come back afterwards.
  Outside the main thread (where Python cannot install handlers) nothing is caught."""
  stop = types.SimpleNamespace(signal=None)
  previous = {}
  if threading.current_thread() is threading.main_thread():

    def caught(number, _):
      stop.signal = number
      _caught.append(number)
    previous = {sig: signal.signal(sig, caught) for sig in signals}
  try:
    yield stop
  finally:
    for sig, handler in previous.items():
      signal.signal(sig, handler)
