"""What every training and export job shares: devices, precision, logging and safe writes.

- ``select_strategy`` / ``is_chief``: the ``tf.distribute`` strategy a ``RuntimeConfig`` asks for, and
  whether this process writes the outputs (one writer per job).
- ``set_precision_policy``: float32 / bfloat16 / float16 compute with float32 variables.
- ``write_scalars``, ``progress_bar``, ``format_duration``: TensorBoard scalars, the progress bar, ETAs.
- ``atomic_write`` / ``atomic_directory``: outputs appear whole or not at all (write to a temporary name
  beside the destination, then rename), so an interrupted job never leaves a half-written file.
- ``check_writable``: an output that could not be written is reported before the work, not after it.
- ``restore_checkpoint``: a restore that may not fit, reported in one line without TensorFlow's noise.
"""

import contextlib
import gc
import json
import logging
import math
import os
import shutil
import signal
import tempfile
import threading
import types
import typing
import uuid

import keras
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from electra_tf import fileio
from electra_tf.configs import RuntimeConfig
from electra_tf.errors import HParamError, OutputExistsError, OutputPathError

PRECISION_POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


# --- devices ------------------------------------------------------------------------------------------------

def _tf_config_workers() -> int:
  try:
    cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
  except ValueError:
    raise HParamError("TF_CONFIG is not valid JSON; see docs/pretraining.md for an example") from None
  return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def select_strategy(cfg: RuntimeConfig) -> tf.distribute.Strategy:
  """``cfg.strategy``: auto (TPU if use_tpu/tpu_name, multi-worker if TF_CONFIG names several workers,
  Mirrored over several GPUs, else one device), one_device, mirrored, multi_worker or tpu.

  Call it before anything else touches TensorFlow devices: multi-worker collectives are set up when the
  runtime starts."""
  name = cfg.strategy
  if name == "auto" and (cfg.use_tpu or cfg.tpu_name):
    name = "tpu"
  elif name == "auto" and _tf_config_workers() > 1:
    name = "multi_worker"
  if name == "multi_worker":
    return tf.distribute.MultiWorkerMirroredStrategy()
  gpus = tf.config.list_logical_devices("GPU")
  if name == "auto":
    name = "mirrored" if len(gpus) > 1 else "one_device"
  if name == "one_device":
    return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
  if name == "mirrored":
    return tf.distribute.MirroredStrategy()
  resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
      tpu=cfg.tpu_name or "", zone=cfg.tpu_zone, project=cfg.gcp_project,
      job_name=cfg.tpu_job_name or "worker")
  tf.config.experimental_connect_to_cluster(resolver)
  topology = tf.tpu.experimental.initialize_tpu_system(resolver)
  if cfg.num_tpu_cores is None:
    return tf.distribute.TPUStrategy(resolver)
  # The reference's TPUConfig(num_shards=num_tpu_cores): replicate over that many cores, one per replica.
  available = topology.num_tasks * topology.num_tpus_per_task
  if cfg.num_tpu_cores > available:
    raise HParamError(f"num_tpu_cores is {cfg.num_tpu_cores} but the TPU has {available} cores; use at most "
                      f"{available}, or null for all of them")
  assignment = tf.tpu.experimental.DeviceAssignment.build(topology, num_replicas=cfg.num_tpu_cores)
  return tf.distribute.TPUStrategy(resolver, experimental_device_assignment=assignment)


def is_chief(strategy: tf.distribute.Strategy) -> bool:
  """True for the one process of a job that writes checkpoints, logs and results."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or isinstance(strategy, tf.distribute.TPUStrategy):
    return True
  task_type, task_id = resolver.task_type, resolver.task_id
  return task_type in (None, "chief") or (task_type == "worker" and task_id == 0 and
                                          "chief" not in resolver.cluster_spec().as_dict())


def set_precision_policy(mixed_precision: str):
  """float32 / bfloat16 / float16 -> the Keras global dtype policy (variables stay float32)."""
  keras.mixed_precision.set_global_policy(PRECISION_POLICIES[mixed_precision])


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


# --- logging ------------------------------------------------------------------------------------------------

def _scalar_metadata() -> bytes:
  # What TensorBoard's scalar dashboard reads; ``tf.summary.scalar`` would need the tensorboard package.
  return summary_pb2.SummaryMetadata(
      plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
      data_class=summary_pb2.DATA_CLASS_SCALAR).SerializeToString()


class LazySummaryWriter:
  """A TensorBoard writer whose events file appears with the first scalar written, so that a run that fails
  before logging anything (bad data, a wrong model size) leaves no events file behind."""

  def __init__(self, logdir: str):
    self.logdir, self._writer = logdir, None

  def as_default(self, step=None):
    if self._writer is None:
      self._writer = tf.summary.create_file_writer(self.logdir)
    return self._writer.as_default(step=step)

  def flush(self):
    if self._writer is not None:
      self._writer.flush()


def write_scalars(writer, step: int, values: typing.Mapping[str, float], prefix: str = ""):
  """TensorBoard scalars ``prefix + name`` at ``step`` (non-numbers are skipped); ``writer`` None: no-op."""
  if writer is None:
    return
  metadata = _scalar_metadata()
  with writer.as_default(step=step):
    for k, v in values.items():
      if isinstance(v, (int, float)) and not isinstance(v, bool):
        tf.summary.write(prefix + k, tf.constant(float(v), tf.float32), metadata=metadata)


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


# --- safe writes --------------------------------------------------------------------------------------------

def check_writable(path: str, what: str = "output", directory: bool = False, create_parents: bool = True):
  """Raises ``OutputPathError`` (naming the problem and the fix) when ``path`` could not be written.

  Call it before long work, so that hours of it are not lost to a typo in an output path. ``path`` is a
  file (with ``directory``: a directory) the job will create, replace or write into; ``what`` names it in
  the message. Missing directories above it are fine (jobs create them) unless ``create_parents`` is False.
  Remote paths (``gs://...``) are left to the job.
  """
  if fileio.is_remote(path):
    return
  path = os.path.abspath(os.fspath(path))
  parent = os.path.dirname(path)
  if os.path.isdir(path):
    if not directory:
      raise OutputPathError(f"cannot write the {what} {path}: it is a directory; name a file")
    probe = path
  elif os.path.lexists(path) and directory:
    raise OutputPathError(f"cannot write the {what} {path}: a file is in the way; remove it or choose "
                          "another path")
  else:
    probe = parent
    while not os.path.lexists(probe):
      probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
      raise OutputPathError(f"cannot write the {what} {path}: {probe} is a file, not a directory; choose "
                            "another path")
    if probe != parent and not create_parents:
      raise OutputPathError(f"cannot write the {what} {path}: directory {parent} does not exist; create it "
                            f"(mkdir -p {parent}) or choose another path")
  try:
    # Creating a file is the real test: os.access() ignores ACLs, quotas and, for root, the mode bits.
    with tempfile.TemporaryFile(dir=probe):
      pass
  except OSError as e:
    raise OutputPathError(f"cannot write the {what} {path}: {probe} is not writable ({e.strerror}); choose "
                          "another path or fix its permissions") from None


def atomic_write(path: str, data: typing.Union[str, bytes]):
  """Writes ``data`` (text as UTF-8) to ``path`` through a temporary file in the same directory.

  On a remote filesystem (``gs://``) the final rename is a copy then a delete: not atomic, but ``path``
  never holds a half-written file."""
  data = data.encode("utf-8") if isinstance(data, str) else data
  if fileio.is_remote(path):
    _remote_atomic_write(str(path), data)
    return
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp_")
  try:
    with os.fdopen(fd, "wb") as f:
      f.write(data)
    os.chmod(tmp, 0o644)  # mkstemp makes it private; the renamed result should not be
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise


def _remote_atomic_write(path: str, data: bytes):
  directory = os.path.dirname(path)
  fileio.makedirs(directory)
  tmp = fileio.join(directory, f".tmp_{uuid.uuid4().hex}")
  try:
    with fileio.open_file(tmp, "wb") as f:
      f.write(data)
    fileio.rename(tmp, path)
  except BaseException:
    if fileio.exists(tmp):
      fileio.remove(tmp)
    raise


class atomic_directory:  # pylint: disable=invalid-name
  """``with atomic_directory(dest, overwrite) as tmp:`` write into ``tmp``; it becomes ``dest`` on success.

  The old ``dest`` (with ``overwrite``) survives until the new one is complete; on an exception the
  temporary directory is removed and ``dest`` is untouched. Without ``overwrite`` an existing ``dest``
  raises ``OutputExistsError`` before any work.

  A remote ``dest`` (``gs://``): ``tmp`` is a local staging directory (so writers that only know local
  files work), uploaded beside ``dest`` when complete; then the old ``dest`` is deleted and the files are
  renamed in one by one. Not atomic (object stores have no directory rename), but no file under ``dest``
  is ever half-written, and a failed upload leaves the old ``dest`` in place.
  """

  def __init__(self, dest: str, overwrite: bool = False):
    if fileio.is_remote(dest):
      self.dest = str(dest).rstrip("/")
      if fileio.exists(self.dest) and not overwrite:
        raise OutputExistsError(f"{dest} already exists; pass --overwrite to replace it")
      self.tmp = tempfile.mkdtemp(prefix=".electra-staging-")
      os.chmod(self.tmp, 0o755)
      return
    self.dest = os.path.abspath(os.fspath(dest))
    if os.path.exists(self.dest) and not overwrite:
      raise OutputExistsError(f"{dest} already exists; pass --overwrite to replace it")
    parent = os.path.dirname(self.dest)
    os.makedirs(parent, exist_ok=True)
    self.tmp = tempfile.mkdtemp(prefix="." + os.path.basename(self.dest) + ".tmp-", dir=parent)
    os.chmod(self.tmp, 0o755)  # mkdtemp makes it private; the renamed result should not be

  def __enter__(self) -> str:
    return self.tmp

  def __exit__(self, exc_type, exc, tb):
    if exc_type is not None:
      shutil.rmtree(self.tmp, ignore_errors=True)
      return False
    if fileio.is_remote(self.dest):
      try:
        self._publish_remote()
      finally:
        shutil.rmtree(self.tmp, ignore_errors=True)
      return False
    if os.path.exists(self.dest):
      old = self.tmp + ".old"
      os.rename(self.dest, old)
      os.rename(self.tmp, self.dest)
      shutil.rmtree(old, ignore_errors=True)
    else:
      os.rename(self.tmp, self.dest)
    return False


  def _publish_remote(self):
    staged = fileio.join(os.path.dirname(self.dest), f".{os.path.basename(self.dest)}.tmp-{uuid.uuid4().hex}")
    fileio.upload(self.tmp, staged)  # the slow part; the old dest is untouched until it is done
    fileio.makedirs(staged)  # an empty result is still a directory
    if fileio.exists(self.dest):
      fileio.rmtree(self.dest)
    fileio.makedirs(self.dest)
    for rel in fileio.walk_files(self.tmp):
      target = fileio.join(self.dest, rel)
      fileio.makedirs(os.path.dirname(target))
      fileio.rename(fileio.join(staged, rel), target)
    fileio.rmtree(staged, ignore_errors=True)


# --- checkpoints --------------------------------------------------------------------------------------------

def restore_checkpoint(prefix: str, objects: typing.Mapping[str, typing.Any],
                       require_match: bool = True) -> typing.Optional[str]:
  """Restores ``objects`` (the root's children of a ``tf.train.Checkpoint``) from ``prefix``; returns None,
  or the first line of why the checkpoint does not fit (another model size or structure), for the caller's
  one-line error. ``require_match``: every object must be in the checkpoint (else only what is restored
  must fit).

  A restore that fails half-way leaves TensorFlow's restore state behind, and when that is collected it
  logs a warning per value it did not restore: hundreds of lines after the error. The checkpoint and that
  state are collected here, with TensorFlow's logger quiet, before the caller reports anything.
  """
  logger = tf.get_logger()
  level = logger.level
  logger.setLevel(logging.ERROR)
  try:
    checkpoint = tf.train.Checkpoint(**objects)
    try:
      status = checkpoint.read(prefix).expect_partial()
      if require_match:
        status.assert_existing_objects_matched()
      return None
    except (ValueError, AssertionError, tf.errors.OpError) as e:
      reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    del checkpoint  # it holds the restore state too
    gc.collect()  # the failure (its traceback holds the restore state) is gone once the except block ends
    return reason
  finally:
    logger.setLevel(level)
