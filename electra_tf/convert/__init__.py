"""Interoperability: Google's released TF1 checkpoints in; the reference TF1 layout, Hugging Face,
keras-hub and SavedModel out. Command line: ``python -m electra_tf.convert --help`` (see ``docs/interop.md``).

Library entry points:

* ``load_pretrained_weights(path, target)``: initialise our networks from a reference TF1 checkpoint,
  this project's model directory, a Hugging Face directory, a keras-hub preset or a pre-training TF2
  checkpoint.
* ``read_source(path)`` -> ``Source`` (reference-named arrays + detected ``Architecture``) from any of them,
  ``detect_format(path)``, and the writers ``write_model_dir``, ``write_tf1``, ``write_hf``, ``write_preset``;
  ``FORMATS`` is the registry behind them (``formats``).
* ``infer_architecture(shapes)``: model and generator sizes from variable shapes.
* ``electra_tf.serving.savedmodel.export_savedmodel`` and ``electra_tf.convert.hf_task_models`` (fine-tuned heads).
"""

from electra_tf.convert.architecture import Architecture, ConversionError, infer_architecture
from electra_tf.convert.formats import FORMATS, detect_format, read_source
from electra_tf.convert.hf_reader import reference_name_from_hf
from electra_tf.convert.keras_hub_preset import write_preset
from electra_tf.convert.layout import HF, KERAS_HUB, MODEL_DIR, PRETRAINING_RUN, TF1, TF2
from electra_tf.convert.source import Source, source_from_networks
from electra_tf.convert.writers import write_hf, write_model_dir, write_tf1
from electra_tf.convert.loading import LoadReport, load_pretrained_weights, target_variables
