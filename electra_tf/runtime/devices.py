"""Devices: the ``tf.distribute`` strategy a ``RuntimeConfig`` asks for, whether the step is XLA-compiled
(``xla_choice``: ``use_xla`` null picks the fast path for the devices present), and whether this process writes
the job's outputs (one writer per job)."""

import json
import os
import typing

import tensorflow as tf

from electra_tf.configs import RuntimeConfig
from electra_tf.errors import HParamError
from electra_tf.runtime import GPU_XLA_FLAGS, set_default_xla_flags


def _tf_config_workers() -> int:
  try:
    cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
  except ValueError:
    raise HParamError("TF_CONFIG is not valid JSON; see docs/pretraining.md for an example") from None
  return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


# One strategy of each kind per process, made on first use: a second MirroredStrategy (or multi-worker one)
# starts its collective keys where the first did, and TensorFlow then mixes up the two jobs' all-reduces ("Shape
# mismatch in the collective instance 100"); a second TPU strategy would initialise the TPU system again.
_STRATEGIES: typing.Dict[tuple, tf.distribute.Strategy] = {}


def select_strategy(cfg: RuntimeConfig) -> tf.distribute.Strategy:
  """``cfg.strategy``: auto (TPU if use_tpu/tpu_name, multi-worker if TF_CONFIG names several workers,
  Mirrored over several GPUs, else one device), one_device, mirrored, multi_worker or tpu. Jobs of one process
  (pre-training then fine-tuning, several fine-tuning runs) that ask for the same kind share one strategy.

  Call it before anything else touches TensorFlow devices: multi-worker collectives are set up when the
  runtime starts."""
  name = cfg.strategy
  if name == "auto" and (cfg.use_tpu or cfg.tpu_name):
    name = "tpu"
  elif name == "auto" and _tf_config_workers() > 1:
    name = "multi_worker"
  if name == "auto":
    name = "mirrored" if len(tf.config.list_logical_devices("GPU")) > 1 else "one_device"
  key = ((name, cfg.tpu_name or "", cfg.tpu_zone, cfg.gcp_project, cfg.tpu_job_name, cfg.num_tpu_cores)
         if name == "tpu" else (name,))
  if key not in _STRATEGIES:
    _STRATEGIES[key] = _new_strategy(name, cfg)
  return _STRATEGIES[key]


def _new_strategy(name: str, cfg: RuntimeConfig) -> tf.distribute.Strategy:
  if name == "multi_worker":
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "one_device":
    return tf.distribute.OneDeviceStrategy("/gpu:0" if tf.config.list_logical_devices("GPU") else "/cpu:0")
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


def xla_choice(cfg: RuntimeConfig, strategy: tf.distribute.Strategy) -> typing.Tuple[bool, str]:
  """(compile the replica step with XLA, why: a line for the run's start). ``use_xla`` true or false is the
  user's; null is auto: on when the strategy's devices include a GPU, off on CPUs and TPUs. With XLA on a GPU,
  sets ``GPU_XLA_FLAGS`` in this process's ``XLA_FLAGS`` unless the user set that variable (the commands set it
  when they start, before TensorFlow: ``electra_tf.cli``)."""
  try:
    devices = strategy.extended.worker_devices
  except RuntimeError:  # the default strategy (no scope entered): this process's devices
    devices = [d.name for d in tf.config.list_logical_devices()]
  gpu = any("GPU" in d.upper() for d in devices)
  if cfg.use_xla is None:
    use, why = gpu, ("auto: a GPU is present" if gpu else "auto: no GPU (set use_xla true to compile on a CPU)")
  else:
    use, why = bool(cfg.use_xla), f"use_xla {str(cfg.use_xla).lower()}"
  if use and gpu:
    set_default_xla_flags()  # the commands set them before TensorFlow starts; library callers get them here
    flags = os.environ["XLA_FLAGS"]
    why += (f"; XLA_FLAGS={flags} (the project's; set XLA_FLAGS to choose others)" if flags == GPU_XLA_FLAGS
            else f"; XLA_FLAGS as set: {flags}")
  return use, why


def is_chief(strategy: tf.distribute.Strategy) -> bool:
  """True for the one process of a job that writes checkpoints, logs and results."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or isinstance(strategy, tf.distribute.TPUStrategy):
    return True
  task_type, task_id = resolver.task_type, resolver.task_id
  return task_type in (None, "chief") or (task_type == "worker" and task_id == 0 and
                                          "chief" not in resolver.cluster_spec().as_dict())
