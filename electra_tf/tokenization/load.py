"""``load_tokenizer``: the right tokenizer for a vocab file, checked once and cached."""

import functools

from electra_tf import fileio
from electra_tf.errors import VocabError
from electra_tf.tokenization.sentencepiece_tokenizer import SentencePieceTokenizer
from electra_tf.tokenization.vocab import is_sentencepiece_model, read_vocab
from electra_tf.tokenization.wordpiece import FullTokenizer


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
