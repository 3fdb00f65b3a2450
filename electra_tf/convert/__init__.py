"""Interoperability: Google's released TF1 checkpoints in; the reference TF1 layout, Hugging Face and
SavedModel out. Command line: ``python -m electra_tf.convert --help`` (see ``docs/interop.md``).

Library entry points:

* ``load_pretrained_weights(path, target)``: initialise our networks from a reference TF1 checkpoint,
  this project's model directory, a Hugging Face directory or a pre-training TF2 checkpoint.
* ``read_source(path)`` -> ``Source`` (reference-named arrays + detected ``Architecture``), and the writers
  ``write_model_dir``, ``write_tf1``, ``write_hf``.
* ``infer_architecture(shapes)``: model and generator sizes from variable shapes.
* ``electra_tf.serving.savedmodel.export_savedmodel`` and ``electra_tf.convert.hf_heads`` (fine-tuned heads).
"""

from electra_tf.convert.architecture import Architecture, ConversionError, infer_architecture
from electra_tf.convert.detect import HF, MODEL_DIR, TF1, TF2, detect_format
from electra_tf.convert.hf_reader import reference_name_from_hf
from electra_tf.convert.readers import read_source
from electra_tf.convert.source import Source, source_from_networks
from electra_tf.convert.writers import write_hf, write_model_dir, write_tf1
from electra_tf.convert.loading import LoadReport, load_pretrained_weights, target_variables
