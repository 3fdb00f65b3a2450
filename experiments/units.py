"""Resumable units of work for the experiments: a unit runs once, keeps its result in ``<work>/stages/<name>.json``
(written whole or not at all, through the library's atomic writer) and is reused from that file afterwards, so
rerunning an experiment's command continues it."""

import json
import os
import time

import tensorflow as tf

from electra_tf.runtime.atomic_files import atomic_write

# How often a shard looks for a unit another shard runs: reading a small file, cheap beside any unit.
POLL_SECONDS = 1.0


def log(msg: str):
  print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def read_json(path, default=None):
  try:
    with open(path, encoding="utf-8") as f:
      return json.load(f)
  except (OSError, ValueError):
    return default


def write_json(path, obj):
  atomic_write(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def stage_path(work_dir: str, name: str) -> str:
  return os.path.join(work_dir, "stages", f"{name}.json")


def unit(args, name: str, work, *work_args, owner: bool = True):
  """Runs ``work(*work_args)`` once: its result is kept in ``<args.work_dir>/stages/<name>.json`` and reused
  afterwards. A unit another process owns (``owner=False``) is waited for (its file polled) instead."""
  path = stage_path(args.work_dir, name)
  done = read_json(path)
  if done is not None:
    log(f"skip (done): {name}")
    return done
  if not owner:
    log(f"wait (another shard runs it): {name}")
    while (done := read_json(path)) is None:
      time.sleep(POLL_SECONDS)
    return done
  log(f"run: {name}")
  start = time.time()
  result = work(*work_args)
  result["unit_seconds"] = round(time.time() - start, 1)
  write_json(path, result)
  # many models are built in one process: Keras's global state is reset; Python's collector frees their memory
  # when it runs (a forced collection here took about half a second per unit)
  tf.keras.backend.clear_session(free_memory=False)
  return result
