"""Reading and writing ELECTRA weights in every supported format, always through reference names: the
names of ``detect``, ``source``, ``vocab_files``, ``readers``, ``hf_reader`` and ``writers`` in one
namespace (``from electra_tf.convert import checkpoints as ckpt``; ``ckpt.read_source(...)``).

Every reader returns a ``Source`` whose ``arrays`` are keyed by reference names; every writer takes such
arrays. The formats are listed in ``detect``.
"""

# pylint: disable=unused-import
from electra_tf.convert.detect import (CONFIG_FILE, FORMAT_TAG, HF, HF_WEIGHT_FILES, MODEL_DIR, PRETRAINING_RUN,
                                       RUN_CONFIG_FILE, TF1, TF2, WEIGHTS_PREFIX, detect_format,
                                       find_checkpoint_prefix, run_config_path)
from electra_tf.convert.hf_reader import read_hf, read_hf_state, reference_name_from_hf
from electra_tf.convert.readers import (read_model_config, read_model_dir, read_pretraining_config,
                                        read_pretraining_run, read_source, read_tf1)
from electra_tf.convert.source import (Source, assign_arrays, generator_arrays, holds_weight,
                                       source_from_networks)
from electra_tf.convert.vocab_files import (SPM_FILE, VOCAB_FILE, check_vocab, copy_vocab, count_vocab,
                                            hf_tokenizer_config, sibling_vocab, vocab_file_name, vocab_kind)
from electra_tf.convert.writers import hf_config, write_hf, write_model_dir, write_tf1
