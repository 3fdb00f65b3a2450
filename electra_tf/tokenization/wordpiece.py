"""``FullTokenizer``: the reference's WordPiece tokenizer, with a cached fast pure-Python path and the
batched in-graph path (``tokenization.graph``) giving the same ids."""

import numpy as np
import tensorflow as tf

from electra_tf.tokenization.basic import BasicTokenizer, WordpieceTokenizer, clean_split
from electra_tf.tokenization.graph import TFWordpiece
from electra_tf.tokenization.vocab import load_vocab


class FullTokenizer:
  """The reference's tokenizer: ``FullTokenizer(vocab_file, do_lower_case)`` with its methods.

  Extras: ``strip_accents`` (None = follow ``do_lower_case``, as the reference), ``batch_ids`` and
  ``tf_tokenize`` (the fast batched TensorFlow path with identical ids).
  """

  kind = "wordpiece"

  def __init__(self, vocab_file, do_lower_case=True, strip_accents=None):
    self.vocab_file = str(vocab_file)
    self.vocab = load_vocab(vocab_file)
    self.inv_vocab = {v: k for k, v in self.vocab.items()}
    self.vocab_size = len(self.vocab)
    self.do_lower_case = bool(do_lower_case)
    self.strip_accents = self.do_lower_case if strip_accents is None else bool(strip_accents)
    self.basic_tokenizer = BasicTokenizer(self.do_lower_case, self.strip_accents)
    self.wordpiece_tokenizer = WordpieceTokenizer(self.vocab)
    self._tf_path = None
    self._word_cache = {}  # whitespace token after cleaning -> its word pieces

  # Bounds the per-word cache (a few hundred MB at most); it is emptied, not evicted, when full.
  _WORD_CACHE_SIZE = 1 << 20

  def tokenize(self, text):
    """str -> list of word-piece strings (pure Python, reference-exact).

    The same steps as ``BasicTokenizer`` then ``WordpieceTokenizer`` (``_tokenize_per_char``), faster:
    cleaning and CJK spacing are one ``str.translate``, and everything after the whitespace split
    (lowercasing, accent stripping, punctuation splitting, WordPiece) depends on one token alone, so each
    distinct token is worked out once by those per-character steps and its pieces are cached.
    """
    cache = self._word_cache
    out = []
    for token in clean_split(text):
      pieces = cache.get(token)
      if pieces is None:
        pieces = self._word_pieces(token)
        if len(cache) >= self._WORD_CACHE_SIZE:
          cache.clear()
        cache[token] = pieces
      out.extend(pieces)
    return out

  def _word_pieces(self, token):
    """One cleaned whitespace token -> its word pieces, by the reference's per-character steps."""
    basic = self.basic_tokenizer
    if basic.do_lower_case:
      token = token.lower()
    if basic.strip_accents:
      token = basic._run_strip_accents(token)  # pylint: disable=protected-access
    words = " ".join(basic._run_split_on_punc(token)).split()  # pylint: disable=protected-access
    return tuple(p for w in words for p in self.wordpiece_tokenizer.tokenize(w))

  def _tokenize_per_char(self, text):
    """The reference's own composition (BasicTokenizer then WordpieceTokenizer), uncached: what
    ``tokenize`` must equal (tests and benchmarks/tokenizer.py check it)."""
    split_tokens = []
    for token in self.basic_tokenizer.tokenize(text):
      split_tokens.extend(self.wordpiece_tokenizer.tokenize(token))
    return split_tokens

  def convert_tokens_to_ids(self, tokens):
    return [self.vocab[t] for t in tokens]

  def convert_ids_to_tokens(self, ids):
    return [self.inv_vocab[i] for i in ids]

  def _graph(self):
    if self._tf_path is None:
      # Eager constants even when first called inside a user's tf.function (the object is reused).
      with tf.init_scope():
        self._tf_path = TFWordpiece(self.vocab, self.do_lower_case, self.strip_accents)
    return self._tf_path

  def tf_tokenize(self, text):
    """In-graph: [batch] tf.string -> tf.RaggedTensor [batch, (pieces)] of int64 ids."""
    return self._graph().tokenize(text)

  def batch_ids(self, lines):
    """list of str -> (flat ids int64 [total], row_splits int64 [len(lines)+1]) via the fast path."""
    if not lines:
      return np.zeros([0], np.int64), np.zeros([1], np.int64)
    ragged = self._graph().tokenize(self._graph()._tf.constant(lines))
    return ragged.flat_values.numpy(), ragged.row_splits.numpy()
