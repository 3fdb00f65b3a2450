"""Signals: SIGTERM / SIGINT turned into a stop request a training loop polls between steps."""

import contextlib
import signal
import threading
import types


@contextlib.contextmanager
def stop_requests(signals=(signal.SIGTERM, signal.SIGINT)):
  """``with stop_requests() as stop:`` ``stop.signal`` becomes the number of a stop signal once one arrives,
  so a loop can finish its step, checkpoint and exit cleanly; the previous handlers come back afterwards.
  Outside the main thread (where Python cannot install handlers) nothing is caught."""
  stop = types.SimpleNamespace(signal=None)
  previous = {}
  if threading.current_thread() is threading.main_thread():
    previous = {sig: signal.signal(sig, lambda s, _: setattr(stop, "signal", s)) for sig in signals}
  try:
    yield stop
  finally:
    for sig, handler in previous.items():
      signal.signal(sig, handler)
