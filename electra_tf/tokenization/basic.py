"""The reference's pure-Python tokenizer steps: ``BasicTokenizer`` (cleaning, CJK spacing, lowercasing,
accent stripping, punctuation splitting) and ``WordpieceTokenizer`` (greedy longest-match-first), plus
``clean_split``, the first steps in one ``str.translate``."""

import unicodedata

# The reference's WordpieceTokenizer limit (Hugging Face uses 100; the reference 200).
MAX_INPUT_CHARS_PER_WORD = 200

# CJK Unified Ideographs blocks the reference puts spaces around (not Hangul, Hiragana or Katakana).
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


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
  for lo, hi in CJK_RANGES:
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
