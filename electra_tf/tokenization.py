"""Tokenizers that give exactly the ids of the reference (google-research/electra ``tokenization.py``).

Three tokenizers behind one small interface (``vocab``, ``tokenize``, ``convert_tokens_to_ids``,
``convert_ids_to_tokens``, ``batch_ids`` and the in-graph ``tf_tokenize``):

* ``FullTokenizer(vocab_file, do_lower_case)``: the reference's pure-Python BERT WordPiece tokenizer, for
  users porting reference code. Its ``tokenize`` cleans with one ``str.translate`` and caches each distinct
  word's pieces (~7x the reference's speed on WikiText-2, same output; benchmarks/tokenizer.py).
* the same class's ``batch_ids`` / ``tf_tokenize``: a batched TensorFlow graph built from RE2 regexes,
  ICU lowercasing/NFD and tensorflow-text's ``FastWordpieceTokenizer``. It reproduces every normalisation
  step of the reference (tf-text's own BERT normaliser differs on control characters, U+FFFD, accents
  without lowercasing and CJK), so its ids equal the slow path's; it also runs inside a serving graph.
* ``SentencePieceTokenizer(model_file, do_lower_case)``: a SentencePiece model used in place of a vocab.

``load_tokenizer(path, do_lower_case, strip_accents)`` picks the right one from the file, and
``read_vocab(path)`` is the one reader of a vocab's size and special ids for both formats: every part that
needs them (pre-training's masking, ``convert``, the SavedModel export) calls it.
"""

import collections
import functools
import hashlib
import os
import typing
import unicodedata

import numpy as np
import sentencepiece as spm
import tensorflow as tf
import tensorflow_text as tf_text

from electra_tf import fileio
from electra_tf.errors import VocabError

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# The reference's WordpieceTokenizer limit (Hugging Face uses 100; the reference 200).
MAX_INPUT_CHARS_PER_WORD = 200

# CJK Unified Ideographs blocks the reference puts spaces around (not Hangul, Hiragana or Katakana).
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def load_vocab(vocab_file):
  """Reads a WordPiece vocab (one token per line) into an ordered {token: id} dict, as the reference."""
  vocab = collections.OrderedDict()
  with fileio.open_file(vocab_file) as f:
    for index, line in enumerate(f):
      token = line.strip()
      if not token:
        break  # the reference stops at the first empty line
      vocab[token] = index
  return vocab


def file_checksum(path):
  """SHA-256 of a vocab or SentencePiece model file (recorded in the dataset metadata)."""
  h = hashlib.sha256()
  with fileio.open_file(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      h.update(block)
  return h.hexdigest()


# What a SentencePiece model may call ELECTRA's special tokens when it was not built by build_vocab.py (which
# uses the bracketed names): ALBERT/XLNet-style names, then the model's own pad/unk/bos/eos pieces.
SENTENCEPIECE_EQUIVALENTS = {"[PAD]": ("<pad>",), "[UNK]": ("<unk>",), "[CLS]": ("<cls>", "<s>"),
                             "[SEP]": ("<sep>", "</s>"), "[MASK]": ("<mask>",)}


class Vocab(typing.NamedTuple):
  """A vocab of either format: ``tokens`` {token or piece: id} in id order, ``special`` {"[PAD]", "[UNK]",
  "[CLS]", "[SEP]", "[MASK]": id} (SentencePiece equivalents resolved; absent ones left out)."""
  path: str
  kind: str  # "wordpiece" or "sentencepiece"
  tokens: typing.Mapping[str, int]
  special: typing.Mapping[str, int]

  @property
  def size(self) -> int:
    return len(self.tokens)

  def id_to_token(self) -> typing.List[str]:
    return list(self.tokens)


def _sentencepiece_processor(path):
  """A loaded ``SentencePieceProcessor``; VocabError (one line) for a file that is not a SentencePiece model."""
  sp = spm.SentencePieceProcessor()
  try:
    with fileio.open_file(path, "rb") as f:
      sp.load_from_serialized_proto(f.read())
  except (RuntimeError, OSError, TypeError) as e:
    reason = (str(e).strip().splitlines() or [type(e).__name__])[0]
    if "ParseFromArray" in reason:  # the library's message names its own source line; say what it means
      reason = "its bytes do not parse as a SentencePiece ModelProto"
    raise VocabError(f"{path} is not a SentencePiece model ({reason}); pass a .model written by "
                     "build_vocab.py --sentencepiece (or spm_train), or a WordPiece vocab.txt") from None
  return sp


def _sentencepiece_special(sp):
  pieces = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
  own = {"[PAD]": sp.pad_id(), "[UNK]": sp.unk_id(), "[CLS]": sp.bos_id(), "[SEP]": sp.eos_id()}
  special = {}
  for name, alternatives in SENTENCEPIECE_EQUIVALENTS.items():
    for piece in (name,) + alternatives:
      if piece in pieces:
        special[name] = pieces[piece]
        break
    else:
      if own.get(name, -1) >= 0:  # e.g. a pad_id whose piece has another name
        special[name] = own[name]
  return special


@functools.lru_cache(maxsize=16)
def _read_vocab_cached(path, mtime):
  del mtime  # part of the cache key only
  if is_sentencepiece_model(path):
    sp = _sentencepiece_processor(path)
    tokens = collections.OrderedDict((sp.id_to_piece(i), i) for i in range(sp.get_piece_size()))
    return Vocab(path, "sentencepiece", tokens, _sentencepiece_special(sp))
  try:
    tokens = load_vocab(path)
  except UnicodeDecodeError:
    raise VocabError(f"cannot read vocab {path}: it is neither UTF-8 text (a WordPiece vocab.txt) nor named "
                     "*.model (a SentencePiece model)") from None
  return Vocab(path, "wordpiece", tokens, {t: tokens[t] for t in SPECIAL_TOKENS if t in tokens})


def read_vocab(path, check_special=True) -> Vocab:
  """The one reader of a vocab for every part of electra-tf: a WordPiece ``vocab.txt`` or a SentencePiece
  ``.model`` -> ``Vocab`` (size, tokens, special ids). VocabError (one line) if the file is missing, is not
  what its name says, or (``check_special``) lacks one of [PAD]/[UNK]/[CLS]/[SEP]/[MASK]."""
  path = str(path)
  if not fileio.isfile(path):
    raise VocabError(f"vocab file {path} not found; pass a WordPiece vocab.txt or a SentencePiece .model")
  vocab = _read_vocab_cached(path, fileio.getmtime(path))
  if check_special:
    check_special_tokens(vocab.special, path)
  return vocab


def default_strip_accents(kind, do_lower_case, strip_accents=None) -> bool:
  """Whether a tokenizer of this kind strips accents: as given, else WordPiece follows ``do_lower_case``
  (the reference) and SentencePiece does not (its model's own normaliser decides)."""
  if strip_accents is not None:
    return bool(strip_accents)
  return False if kind == "sentencepiece" else bool(do_lower_case)


def check_special_tokens(vocab, path):
  """Raises a one-line ValueError if a special token the data prep and models need is missing."""
  missing = [t for t in SPECIAL_TOKENS if t not in vocab]
  if missing:
    raise VocabError(
        f"vocab {path} lacks the special tokens {', '.join(missing)}; add them (build one with "
        "data_prep/build_vocab.py, which places them where the reference expects)")


# ---------------------------------------------------------------------------------------------------
# Reference-exact pure-Python path.


def _is_whitespace(char):
  if char in (" ", "\t", "\n", "\r"):
    return True
  return unicodedata.category(char) == "Zs"


def _is_control(char):
  if char in ("\t", "\n", "\r"):
    return False
  # The reference drops only Cc/Cf (Hugging Face drops all C*: private use and unassigned too).
  return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
  cp = ord(char)
  # ASCII non-alphanumerics count as punctuation even where Unicode says symbol ("$", "^", "`").
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp):
  if cp < 0x3400:  # most text: skip the range scan
    return False
  for lo, hi in _CJK_RANGES:
    if lo <= cp <= hi:
      return True
  return False


class _CleanTable(dict):
  """A ``str.translate`` table: cleaning and CJK spacing in one C-level pass. Each character's mapping is
  worked out once, by the per-character rules below, and kept (str.translate calls ``__missing__``)."""

  def __missing__(self, cp):
    char = chr(cp)
    if cp == 0 or cp == 0xFFFD or _is_control(char):
      out = ""
    elif _is_whitespace(char):
      out = " "
    elif _is_chinese_char(cp):
      out = " " + char + " "
    else:
      out = char
    self[cp] = out
    return out


_CLEAN_TABLE = _CleanTable()


def clean_split(text):
  """``BasicTokenizer``'s first steps, fast: cleaning and CJK spacing (one ``str.translate``), then the
  whitespace split. Each token's remaining steps depend on it alone (``BasicTokenizer.tokenize(token)``
  finishes it), so callers can work out each distinct token once."""
  return text.translate(_CLEAN_TABLE).split()


class BasicTokenizer:
  """Cleaning, CJK spacing, lowercasing, accent stripping and punctuation splitting (reference order)."""

  def __init__(self, do_lower_case=True, strip_accents=None):
    self.do_lower_case = do_lower_case
    # The reference strips accents exactly when lowercasing; None keeps that, a bool overrides it.
    self.strip_accents = do_lower_case if strip_accents is None else strip_accents

  def tokenize(self, text):
    text = self._clean_text(text)
    text = self._tokenize_chinese_chars(text)
    split_tokens = []
    for token in text.split():
      if self.do_lower_case:
        token = token.lower()
      if self.strip_accents:
        token = self._run_strip_accents(token)
      split_tokens.extend(self._run_split_on_punc(token))
    return " ".join(split_tokens).split()

  @staticmethod
  def _run_strip_accents(text):
    text = unicodedata.normalize("NFD", text)
    return "".join(c for c in text if unicodedata.category(c) != "Mn")

  @staticmethod
  def _run_split_on_punc(text):
    output = []
    start_new_word = True
    for char in text:
      if _is_punctuation(char):
        output.append([char])
        start_new_word = True
      else:
        if start_new_word:
          output.append([])
        start_new_word = False
        output[-1].append(char)
    return ["".join(x) for x in output]

  @staticmethod
  def _tokenize_chinese_chars(text):
    output = []
    for char in text:
      if _is_chinese_char(ord(char)):
        output.extend((" ", char, " "))
      else:
        output.append(char)
    return "".join(output)

  @staticmethod
  def _clean_text(text):
    output = []
    for char in text:
      cp = ord(char)
      if cp == 0 or cp == 0xFFFD or _is_control(char):
        continue
      output.append(" " if _is_whitespace(char) else char)
    return "".join(output)


class WordpieceTokenizer:
  """Greedy longest-match-first WordPiece with ``##`` continuations; ``[UNK]`` for failed/long words."""

  def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD):
    self.vocab = vocab
    self.unk_token = unk_token
    self.max_input_chars_per_word = max_input_chars_per_word

  def tokenize(self, text):
    output_tokens = []
    for token in text.split():
      chars = list(token)
      if len(chars) > self.max_input_chars_per_word:
        output_tokens.append(self.unk_token)
        continue
      sub_tokens = []
      start = 0
      while start < len(chars):
        end = len(chars)
        cur_substr = None
        while start < end:
          substr = "".join(chars[start:end])
          if start > 0:
            substr = "##" + substr
          if substr in self.vocab:
            cur_substr = substr
            break
          end -= 1
        if cur_substr is None:
          sub_tokens = None
          break
        sub_tokens.append(cur_substr)
        start = end
      output_tokens.extend(sub_tokens if sub_tokens is not None else [self.unk_token])
    return output_tokens


# ---------------------------------------------------------------------------------------------------
# Batched TensorFlow path: the same normalisation as RE2 regexes over whole lines, then tf-text WordPiece.
# Doing a step on the whole line equals doing it per whitespace token: lowercasing's only context rule
# (final sigma) and NFD's reordering both stop at a space.


def _re2_ranges(ranges):
  return "".join(f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in ranges)


# Cc/Cf plus NUL and U+FFFD are dropped; \t\n\r are mapped to a space first so they survive as spaces.
_RE_TAB_NEWLINE = r"[\t\n\r]"
_RE_DROP = r"[\x{0}\x{FFFD}\p{Cc}\p{Cf}]"
# Zs is the reference's whitespace; U+2028/9 (Zl/Zp) survive its cleaning but its str.split() splits on
# them, so they separate words too.
_RE_SPACE = r"[\p{Zs}\x{2028}\x{2029}]"
_RE_CJK = "[" + _re2_ranges(_CJK_RANGES) + "]"
_RE_MN = r"\p{Mn}"
_RE_PUNCT = r"[!-/:-@\[-`{-~\p{P}]"
_RE_LONG_WORD = "[^ ]{%d,}" % (MAX_INPUT_CHARS_PER_WORD + 1)


class _TFWordpiece:
  """Builds the in-graph normaliser + ``FastWordpieceTokenizer`` once per vocab and casing."""

  def __init__(self, vocab, do_lower_case, strip_accents):

    self._tf = tf
    self._tf_text = tf_text
    self._lower = do_lower_case
    self._strip = strip_accents
    # no_pretokenization: words come pre-split by our exact normaliser, so tf-text's own punctuation
    # and whitespace tables (ICU version) never decide a boundary. 4 bytes per char at most.
    self._wordpiece = tf_text.FastWordpieceTokenizer(
        vocab=list(vocab.keys()), suffix_indicator="##", max_bytes_per_word=4 * MAX_INPUT_CHARS_PER_WORD,
        token_out_type=tf.int64, unknown_token="[UNK]", no_pretokenization=True,
        support_detokenization=False)
    self.tokenize = tf.function(self._tokenize, input_signature=[tf.TensorSpec([None], tf.string)])

  def normalize(self, text):
    """[batch] tf.string -> [batch] tf.string of space-separated reference basic tokens."""
    tf, tf_text = self._tf, self._tf_text
    text = tf.strings.regex_replace(text, _RE_TAB_NEWLINE, " ")
    text = tf.strings.regex_replace(text, _RE_DROP, "")
    text = tf.strings.regex_replace(text, _RE_SPACE, " ")
    text = tf.strings.regex_replace(text, _RE_CJK, r" \0 ")
    if self._lower:
      text = tf.strings.lower(text, encoding="utf-8")  # ICU full lowercasing, as Python's str.lower
    if self._strip:
      text = tf_text.normalize_utf8(text, "NFD")
      text = tf.strings.regex_replace(text, _RE_MN, "")
    text = tf.strings.regex_replace(text, _RE_PUNCT, r" \0 ")
    # Words over 200 characters become [UNK] (a vocab entry, so WordPiece maps it to the unk id).
    return tf.strings.regex_replace(text, _RE_LONG_WORD, " [UNK] ")

  def _tokenize(self, text):
    words = self._tf.strings.split(self.normalize(text))  # [batch, (words)]
    pieces = self._wordpiece.tokenize(words)  # [batch, (words), (pieces)]
    return pieces.merge_dims(1, 2)  # [batch, (pieces)] int64


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
        self._tf_path = _TFWordpiece(self.vocab, self.do_lower_case, self.strip_accents)
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
    self._sp = _sentencepiece_processor(self.vocab_file)
    self.vocab = collections.OrderedDict(
        (self._sp.id_to_piece(i), i) for i in range(self._sp.get_piece_size()))
    self.inv_vocab = {v: k for k, v in self.vocab.items()}
    self.vocab_size = len(self.vocab)
    # A model with <cls>/<s>-style names still answers to the bracketed names the packers use.
    for name, i in _sentencepiece_special(self._sp).items():
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
    if self._tf_sp is None:
      with fileio.open_file(self.vocab_file, "rb") as f, tf.init_scope():
        self._tf_sp = tf_text.SentencepieceTokenizer(model=f.read(), out_type=tf.int32)
    return self._tf_sp

  def tf_tokenize(self, text):
    """In-graph: [batch] tf.string -> tf.RaggedTensor [batch, (pieces)] int64 (tf-text SentencePiece)."""
    self.tf_module()
    if self.do_lower_case:
      text = tf.strings.lower(text, encoding="utf-8")
    if self.strip_accents:
      text = tf.strings.regex_replace(tf_text.normalize_utf8(text, "NFD"), _RE_MN, "")
    return tf.cast(self._tf_sp.tokenize(text), tf.int64)  # int64 like the WordPiece path


def is_sentencepiece_model(path):
  """SentencePiece models are binary protos; WordPiece vocabs are UTF-8 text."""
  path = str(path)
  if path.endswith(".model"):
    return True
  with fileio.open_file(path, "rb") as f:
    head = f.read(4096)
  try:
    head.decode("utf-8")
    return False
  except UnicodeDecodeError:
    return True


@functools.lru_cache(maxsize=8)
def _load_cached(path, do_lower_case, strip_accents, mtime):
  del mtime  # part of the cache key only
  cls = SentencePieceTokenizer if is_sentencepiece_model(path) else FullTokenizer
  return cls(path, do_lower_case, strip_accents)


def load_tokenizer(vocab_or_spm_path, do_lower_case=True, strip_accents=None, check_special=True):
  """WordPiece ``vocab.txt`` -> FullTokenizer; SentencePiece ``.model`` -> SentencePieceTokenizer.

  Raises ValueError (one line) if the file is missing or lacks [PAD]/[UNK]/[CLS]/[SEP]/[MASK].
  """
  path = str(vocab_or_spm_path)
  read_vocab(path, check_special)  # the one check of existence, format and special tokens
  try:
    return _load_cached(path, bool(do_lower_case), strip_accents, fileio.getmtime(path))
  except (UnicodeDecodeError, RuntimeError, OSError) as e:
    raise VocabError(f"cannot read vocab {path} ({type(e).__name__}); pass a WordPiece vocab.txt "
                     "or a SentencePiece .model") from None
