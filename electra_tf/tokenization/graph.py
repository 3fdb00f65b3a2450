"""The batched TensorFlow WordPiece path: the reference's normalisation as RE2 regexes over whole lines,
then tensorflow-text's ``FastWordpieceTokenizer``.

Doing a step on the whole line equals doing it per whitespace token: lowercasing's only context rule
(final sigma) and NFD's reordering both stop at a space.
"""

import tensorflow as tf

from electra_tf.tokenization.basic import CJK_RANGES, MAX_INPUT_CHARS_PER_WORD


def tf_text():
  """tensorflow-text, imported where a tokenizer graph is built (serving, ``tf_tokenize``); data preparation,
  featurizing fine-tuning text and the training steps never build one."""
  import tensorflow_text  # pylint: disable=import-outside-toplevel
  return tensorflow_text


def _re2_ranges(ranges):
  return "".join(f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in ranges)


# Cc/Cf plus NUL and U+FFFD are dropped; \t\n\r are mapped to a space first so they survive as spaces.
_RE_TAB_NEWLINE = r"[\t\n\r]"
_RE_DROP = r"[\x{0}\x{FFFD}\p{Cc}\p{Cf}]"
# Zs is the reference's whitespace; U+2028/9 (Zl/Zp) survive its cleaning but its str.split() splits on
# them, so they separate words too.
_RE_SPACE = r"[\p{Zs}\x{2028}\x{2029}]"
_RE_CJK = "[" + _re2_ranges(CJK_RANGES) + "]"
RE_MN = r"\p{Mn}"
_RE_PUNCT = r"[!-/:-@\[-`{-~\p{P}]"
_RE_LONG_WORD = "[^ ]{%d,}" % (MAX_INPUT_CHARS_PER_WORD + 1)


class TFWordpiece:
  """Builds the in-graph normaliser + ``FastWordpieceTokenizer`` once per vocab and casing."""

  def __init__(self, vocab, do_lower_case, strip_accents):

    self._tf = tf
    self._tf_text = tf_text()
    self._lower = do_lower_case
    self._strip = strip_accents
    # no_pretokenization: words come pre-split by our exact normaliser, so tf-text's own punctuation
    # and whitespace tables (ICU version) never decide a boundary. 4 bytes per char at most.
    self._wordpiece = self._tf_text.FastWordpieceTokenizer(
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
      text = tf.strings.regex_replace(text, RE_MN, "")
    text = tf.strings.regex_replace(text, _RE_PUNCT, r" \0 ")
    # Words over 200 characters become [UNK] (a vocab entry, so WordPiece maps it to the unk id).
    return tf.strings.regex_replace(text, _RE_LONG_WORD, " [UNK] ")

  def _tokenize(self, text):
    words = self._tf.strings.split(self.normalize(text))  # [batch, (words)]
    pieces = self._wordpiece.tokenize(words)  # [batch, (words), (pieces)]
    return pieces.merge_dims(1, 2)  # [batch, (pieces)] int64
