"""Tokenizers that give exactly the ids of the reference (google-research/electra ``tokenization.py``).

Three tokenizers behind one small interface (``vocab``, ``tokenize``, ``convert_tokens_to_ids``,
``convert_ids_to_tokens``, ``batch_ids`` and the in-graph ``tf_tokenize``):

* ``FullTokenizer(vocab_file, do_lower_case)``: the reference's pure-Python BERT WordPiece tokenizer, for
  users porting reference code. Its ``tokenize`` cleans with one ``str.translate`` and caches each distinct
  word's pieces (~7x the reference's speed on WikiText-2, same output; benchmarks/tokenizer.py); its
  ``batch_ids`` does many lines at once with a cache of each distinct word's ids and NumPy, without
  TensorFlow (data preparation, featurizing fine-tuning text).
* the same class's ``tf_tokenize`` / ``tf_batch_ids``: a batched TensorFlow graph built from RE2 regexes,
  ICU lowercasing/NFD and tensorflow-text's ``FastWordpieceTokenizer``. It reproduces every normalisation
  step of the reference (tf-text's own BERT normaliser differs on control characters, U+FFFD, accents
  without lowercasing and CJK), so its ids equal the slow path's; it also runs inside a serving graph.
* ``SentencePieceTokenizer(model_file, do_lower_case)``: a SentencePiece model used in place of a vocab.

``load_tokenizer(path, do_lower_case, strip_accents)`` picks the right one from the file, and
``read_vocab(path)`` is the one reader of a vocab's size and special ids for both formats: every part that
needs them (pre-training's masking, ``convert``, the SavedModel export) calls it.

Modules: ``vocab`` (reading either format), ``basic`` (the reference's pure-Python steps), ``graph`` (the
batched TensorFlow WordPiece path), ``wordpiece`` (``FullTokenizer``), ``sentencepiece_tokenizer``,
``load`` (``load_tokenizer``). Every public name is importable from ``electra_tf.tokenization``.
"""

from electra_tf.tokenization.basic import (MAX_INPUT_CHARS_PER_WORD, BasicTokenizer, WordpieceTokenizer,
                                           clean_split)
from electra_tf.tokenization.load import load_tokenizer
from electra_tf.tokenization.sentencepiece_tokenizer import SentencePieceTokenizer
from electra_tf.tokenization.vocab import (SENTENCEPIECE_EQUIVALENTS, SPECIAL_TOKENS, Vocab, check_special_tokens,
                                           default_strip_accents, file_checksum, is_sentencepiece_model,
                                           load_vocab, read_vocab)
from electra_tf.tokenization.wordpiece import FullTokenizer
