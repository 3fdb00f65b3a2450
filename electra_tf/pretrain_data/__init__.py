"""Pre-training data: corpus readers, the reference's example packer, sharded TFRecords, metadata and
the input pipeline. See docs/data.md."""

from electra_tf.pretrain_data.build import build_pretraining_dataset, process_chunk
from electra_tf.pretrain_data.corpus import DataPrepError
from electra_tf.pretrain_data.metadata import check_metadata, read_metadata
from electra_tf.pretrain_data.packing import ExampleBuilder

__all__ = ["build_pretraining_dataset", "process_chunk", "DataPrepError", "check_metadata",
           "read_metadata", "ExampleBuilder", "pretraining_dataset"]


def pretraining_dataset(*args, **kwargs):
  """See ``electra_tf.pretrain_data.dataset.pretraining_dataset`` (imported lazily: it needs TF)."""
  from electra_tf.pretrain_data import dataset  # pylint: disable=g-import-not-at-top
  return dataset.pretraining_dataset(*args, **kwargs)
