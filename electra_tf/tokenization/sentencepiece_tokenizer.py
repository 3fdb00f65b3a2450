"""``SentencePieceTokenizer``: a SentencePiece model in place of a WordPiece vocab, with the same interface
(tf-text's SentencePiece op for the in-graph path)."""

import collections

import numpy as np

from electra_tf import fileio
from electra_tf.tokenization.basic import BasicTokenizer
from electra_tf.tokenization.vocab import default_strip_accents, sentencepiece_processor, sentencepiece_special


class SentencePieceTokenizer:
  """A SentencePiece model in place of a WordPiece vocab, with the same interface.

  Special tokens ([PAD], [UNK], [CLS], [SEP], [MASK]) must be pieces of the model (build_vocab.py adds
  them as user-defined symbols and makes [UNK] the unknown piece). ``do_lower_case`` lowercases the text
  before encoding (the model's own normalisation rule is applied by SentencePiece itself).
  """

  kind = "sentencepiece"

  def __init__(self, model_file, do_lower_case=False, strip_accents=None):

    self.vocab_file = str(model_file)
    self.do_lower_case = bool(do_lower_case)
    self.strip_accents = default_strip_accents(self.kind, do_lower_case, strip_accents)
    self._sp = sentencepiece_processor(self.vocab_file)
    self.vocab = collections.OrderedDict(
        (self._sp.id_to_piece(i), i) for i in range(self._sp.get_piece_size()))
    self.inv_vocab = {v: k for k, v in self.vocab.items()}
    self.vocab_size = len(self.vocab)
    # A model with <cls>/<s>-style names still answers to the bracketed names the packers use.
    for name, i in sentencepiece_special(self._sp).items():
      self.vocab.setdefault(name, i)
    self._tf_sp = None

  def _prep(self, text):
    if self.do_lower_case:
      text = text.lower()
    if self.strip_accents:
      text = BasicTokenizer._run_strip_accents(text)
    return text

  def tokenize(self, text):
    return self._sp.encode(self._prep(text), out_type=str)

  def convert_tokens_to_ids(self, tokens):
    return [self.vocab[t] if t in self.vocab else self._sp.piece_to_id(t) for t in tokens]

  def convert_ids_to_tokens(self, ids):
    return [self._sp.id_to_piece(int(i)) for i in ids]

  def batch_ids(self, lines):
    ids = self._sp.encode([self._prep(line) for line in lines], out_type=int)
    lengths = np.fromiter((len(x) for x in ids), np.int64, len(ids))
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    flat = np.fromiter((i for x in ids for i in x), np.int64, int(splits[-1]))
    return flat, splits

  def tf_module(self):
    """tf-text's SentencePiece op over this model (a trackable object: keep it on a SavedModel's module)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from electra_tf.tokenization.graph import tf_text  # pylint: disable=import-outside-toplevel
    if self._tf_sp is None:
      with fileio.open_file(self.vocab_file, "rb") as f, tf.init_scope():
        self._tf_sp = tf_text().SentencepieceTokenizer(model=f.read(), out_type=tf.int32)
    return self._tf_sp

  def tf_tokenize(self, text):
    """In-graph: [batch] tf.string -> tf.RaggedTensor [batch, (pieces)] int64 (tf-text SentencePiece)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from electra_tf.tokenization.graph import RE_MN, tf_text  # pylint: disable=import-outside-toplevel
    self.tf_module()
    if self.do_lower_case:
      text = tf.strings.lower(text, encoding="utf-8")
    if self.strip_accents:
      text = tf.strings.regex_replace(tf_text().normalize_utf8(text, "NFD"), RE_MN, "")
    return tf.cast(self._tf_sp.tokenize(text), tf.int64)  # int64 like the WordPiece path
