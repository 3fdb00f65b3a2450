"""``FullTokenizer``: the reference's WordPiece tokenizer, with a cached fast pure-Python path and the
batched in-graph path (``tokenization.graph``, imported with TensorFlow only where it is used) giving the
same ids."""

import itertools
import re

import numpy as np

from electra_tf.tokenization.basic import BasicTokenizer, WordpieceTokenizer, clean_split
from electra_tf.tokenization.vocab import load_vocab

# An ASCII token's basic-tokenizer words: each punctuation character alone, the runs between them whole.
# For ASCII, the reference's punctuation is exactly these four ranges, and NFD (accent stripping) is a no-op.
_ASCII_WORDS = re.compile(r"[!-/:-@\[-`{-~]|[^!-/:-@\[-`{-~]+")


class FullTokenizer:
  """The reference's tokenizer: ``FullTokenizer(vocab_file, do_lower_case)`` with its methods.

  Extras: ``strip_accents`` (None = follow ``do_lower_case``, as the reference), ``batch_ids`` (many lines
  at once, pure Python and NumPy) and ``tf_tokenize`` / ``tf_batch_ids`` (the batched TensorFlow graph),
  all with identical ids.
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
    self._reset_id_cache()  # the same tokens' ids (batch_ids)
    self._longest_entry = None

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

  def _basic_words(self, token):
    """One cleaned whitespace token -> its words after the reference's per-character steps (lowercasing,
    accent stripping, punctuation splitting)."""
    basic = self.basic_tokenizer
    if basic.do_lower_case:
      token = token.lower()
    if basic.strip_accents:
      token = basic._run_strip_accents(token)  # pylint: disable=protected-access
    return " ".join(basic._run_split_on_punc(token)).split()  # pylint: disable=protected-access

  def _word_pieces(self, token):
    """One cleaned whitespace token -> its word pieces, by the reference's per-character steps."""
    return tuple(p for w in self._basic_words(token) for p in self.wordpiece_tokenizer.tokenize(w))

  def _word_ids(self, token):
    """One cleaned whitespace token -> the ids of its word pieces, as ``_word_pieces`` then the vocab: ASCII
    tokens take a shortcut (lowercasing is per character, accents and non-ASCII punctuation cannot occur),
    and words not whole in the vocab go through ``_greedy_ids``."""
    if token.isascii():
      words = _ASCII_WORDS.findall(token.lower() if self.do_lower_case else token)
    else:
      words = self._basic_words(token)
    vocab, max_chars = self.vocab, self.wordpiece_tokenizer.max_input_chars_per_word
    ids = []
    for word in words:
      whole = vocab.get(word)
      if whole is not None and len(word) <= max_chars:
        ids.append(whole)  # the greedy longest match takes a whole word that is in the vocab
      else:
        ids.extend(self._greedy_ids(word))
    return tuple(ids)

  def _greedy_ids(self, word):
    """``WordpieceTokenizer.tokenize`` of one word, as ids: the same greedy longest-match-first, on string
    slices, trying no candidate longer than the vocab's longest entry (it could not match)."""
    vocab = self.vocab
    n = len(word)
    if n > self.wordpiece_tokenizer.max_input_chars_per_word:
      return (vocab[self.wordpiece_tokenizer.unk_token],)
    if self._longest_entry is None:
      self._longest_entry = max(map(len, vocab))
    ids = []
    start = 0
    while start < n:
      end = min(n, start + self._longest_entry)
      while start < end:
        i = vocab.get(word[start:end] if start == 0 else "##" + word[start:end])
        if i is not None:
          break
        end -= 1
      else:
        return (vocab[self.wordpiece_tokenizer.unk_token],)
      ids.append(i)
      start = end
    return ids

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
      import tensorflow as tf  # pylint: disable=import-outside-toplevel
      from electra_tf.tokenization.graph import TFWordpiece  # pylint: disable=import-outside-toplevel
      # Eager constants even when first called inside a user's tf.function (the object is reused).
      with tf.init_scope():
        self._tf_path = TFWordpiece(self.vocab, self.do_lower_case, self.strip_accents)
    return self._tf_path

  def tf_tokenize(self, text):
    """In-graph: [batch] tf.string -> tf.RaggedTensor [batch, (pieces)] of int64 ids."""
    return self._graph().tokenize(text)

  def batch_ids(self, lines):
    """list of str -> (flat ids int64 [total], row_splits int64 [len(lines)+1]): ``tokenize``'s ids of every
    line, without TensorFlow. Each distinct whitespace token is worked out once and cached (its index into
    one flat array of every cached token's ids); the lines are then gathered from that array by NumPy."""
    tokens_per_line = [clean_split(line) for line in lines]
    tokens = list(itertools.chain.from_iterable(tokens_per_line))
    which = np.fromiter(map(self._token_index.get, tokens, itertools.repeat(-1)), np.int64, len(tokens))
    unseen = np.flatnonzero(which < 0)
    if len(unseen):
      missing = {tokens[k] for k in unseen.tolist()}
      if len(self._token_index) + len(missing) > self._WORD_CACHE_SIZE:
        self._reset_id_cache()  # emptied, not evicted, as tokenize's cache; this batch's tokens stay cached
        missing, unseen = set(tokens), np.arange(len(tokens))
      self._cache_ids(missing)
      which[unseen] = np.fromiter(map(self._token_index.__getitem__, (tokens[k] for k in unseen.tolist())),
                                  np.int64, len(unseen))
    lengths = self._cached_lengths[which]
    piece_ends = np.zeros([len(tokens) + 1], np.int64)
    np.cumsum(lengths, out=piece_ends[1:])
    # Output position p of token j reads cached_ids[start[j] + p - piece_ends[j]].
    positions = np.repeat(self._cached_starts[which] - piece_ends[:-1], lengths) + np.arange(piece_ends[-1])
    token_ends = np.zeros([len(lines) + 1], np.int64)
    np.cumsum(np.fromiter(map(len, tokens_per_line), np.int64, len(lines)), out=token_ends[1:])
    return self._cached_ids[positions], piece_ends[token_ends]

  def _cache_ids(self, tokens):
    """Works out the ids of ``tokens`` (not cached yet) and appends them to the cache."""
    tokens = list(tokens)
    index = self._token_index
    new_ids = [self._word_ids(token) for token in tokens]
    index.update(zip(tokens, range(len(index), len(index) + len(tokens))))
    new_lengths = np.fromiter(map(len, new_ids), np.int64, len(new_ids))
    self._cached_lengths = np.concatenate([self._cached_lengths, new_lengths])
    self._cached_starts = np.concatenate([self._cached_starts,
                                          len(self._cached_ids) + np.cumsum(new_lengths) - new_lengths])
    self._cached_ids = np.concatenate([
        self._cached_ids, np.fromiter(itertools.chain.from_iterable(new_ids), np.int64, int(new_lengths.sum()))])

  def _reset_id_cache(self):
    self._token_index = {}  # cleaned whitespace token -> its row in the arrays below
    self._cached_ids = np.zeros([0], np.int64)  # every cached token's ids, one after another
    self._cached_starts = np.zeros([0], np.int64)
    self._cached_lengths = np.zeros([0], np.int64)

  def tf_batch_ids(self, lines):
    """``batch_ids`` through the TensorFlow graph (``tf_tokenize``): the same ids."""
    if not lines:
      return np.zeros([0], np.int64), np.zeros([1], np.int64)
    ragged = self._graph().tokenize(self._graph()._tf.constant(lines))
    return ragged.flat_values.numpy(), ragged.row_splits.numpy()
