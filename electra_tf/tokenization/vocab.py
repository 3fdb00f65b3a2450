"""Vocabs of either format: a WordPiece ``vocab.txt`` or a SentencePiece ``.model``.

``read_vocab(path)`` is the one reader of a vocab's size and special ids for both formats: every part that
needs them (pre-training's masking, ``convert``, the SavedModel export) calls it.
"""

import collections
import functools
import hashlib
import typing

import sentencepiece as spm

from electra_tf import fileio
from electra_tf.errors import VocabError

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


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


def sentencepiece_processor(path):
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


def sentencepiece_special(sp):
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
    sp = sentencepiece_processor(path)
    tokens = collections.OrderedDict((sp.id_to_piece(i), i) for i in range(sp.get_piece_size()))
    return Vocab(path, "sentencepiece", tokens, sentencepiece_special(sp))
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
