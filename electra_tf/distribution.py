"""Picking a ``tf.distribute`` strategy by name (shared by pre-training and fine-tuning).

``auto``: TPU if ``tpu_name`` is given, Mirrored over all GPUs if there are several, else one device.
"""

import tensorflow as tf

from electra_tf.hparams import HParamError

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker", "tpu")


def get_strategy(name: str = "auto", tpu_name=None) -> tf.distribute.Strategy:
  if name not in STRATEGIES:
    raise HParamError(f"strategy {name!r} is not one of {', '.join(STRATEGIES)}")
  gpus = tf.config.list_logical_devices("GPU")
  if name == "auto":
    name = "tpu" if tpu_name else ("mirrored" if len(gpus) > 1 else "one_device")
  if name == "one_device":
    return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
  if name == "mirrored":
    return tf.distribute.MirroredStrategy()
  if name == "multi_worker":
    return tf.distribute.MultiWorkerMirroredStrategy()
  resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_name or "")
  tf.config.experimental_connect_to_cluster(resolver)
  tf.tpu.experimental.initialize_tpu_system(resolver)
  return tf.distribute.TPUStrategy(resolver)
