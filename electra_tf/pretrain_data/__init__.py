"""Pre-training data: corpus readers, the reference's example packer, sharded TFRecords, metadata and
the input pipeline. See docs/data.md."""

from electra_tf.pretrain_data.build import build_pretraining_dataset, process_chunk
from electra_tf.pretrain_data.dataset import pretraining_dataset
from electra_tf.errors import DataPrepError
from electra_tf.pretrain_data.metadata import check_metadata, read_metadata
from electra_tf.pretrain_data.packing import ExampleBuilder

__all__ = ["build_pretraining_dataset", "process_chunk", "DataPrepError", "check_metadata",
           "read_metadata", "ExampleBuilder", "pretraining_dataset"]
