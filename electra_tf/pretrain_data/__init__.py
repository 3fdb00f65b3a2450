"""Pre-training data: corpus readers, the reference's example packer, sharded TFRecords, metadata and
the input pipeline (``pretraining_dataset``, imported with TensorFlow on first use: building data from local
text needs no TensorFlow). See docs/data.md."""

from electra_tf.pretrain_data.build import build_pretraining_dataset, process_chunk
from electra_tf.errors import DataPrepError
from electra_tf.pretrain_data.metadata import check_metadata, read_metadata
from electra_tf.pretrain_data.packing import ExampleBuilder

__all__ = ["build_pretraining_dataset", "process_chunk", "DataPrepError", "check_metadata",
           "read_metadata", "ExampleBuilder", "pretraining_dataset"]


def __getattr__(name):
  if name == "pretraining_dataset":
    from electra_tf.pretrain_data.dataset import pretraining_dataset  # pylint: disable=import-outside-toplevel
    return pretraining_dataset
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
