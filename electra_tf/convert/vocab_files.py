"""The vocab that travels with weights: its size checked against the embeddings, the name it is copied
under, where it is found beside a checkpoint, and the tokenizer config transformers reads for it."""

import os
import typing

from electra_tf import fileio
from electra_tf.convert.architecture import Architecture
from electra_tf.errors import ConversionError, VocabError
from electra_tf.tokenization import read_vocab

VOCAB_FILE = "vocab.txt"
# A SentencePiece model travels under the name transformers' SentencePiece tokenizers look for.
SPM_FILE = "spiece.model"


def _vocab(vocab_file: str, check_special: bool = False):
  """``tokenization.read_vocab`` with its error as a ConversionError."""
  try:
    return read_vocab(vocab_file, check_special=check_special)
  except VocabError as e:
    raise ConversionError(str(e)) from None


def count_vocab(vocab_file: str) -> int:
  """Tokens in a WordPiece vocab (counted as the reference reads it: up to the first empty line) or pieces
  in a SentencePiece model."""
  return _vocab(vocab_file).size


def vocab_kind(vocab_file: str) -> str:
  """"wordpiece" or "sentencepiece"."""
  return _vocab(vocab_file).kind


def vocab_file_name(vocab_file: str) -> str:
  """The name a vocab is copied under beside exported weights (where ``sibling_vocab`` finds it)."""
  return SPM_FILE if vocab_kind(vocab_file) == "sentencepiece" else VOCAB_FILE


def copy_vocab(vocab_file: typing.Optional[str], folder: str):
  if vocab_file:
    fileio.copy(vocab_file, os.path.join(folder, vocab_file_name(vocab_file)))


def check_vocab(vocab_file: typing.Optional[str], arch: Architecture):
  if vocab_file is None:
    return
  if not fileio.isfile(vocab_file):
    raise ConversionError(f"vocab {vocab_file}: no such file")
  n, rows = count_vocab(vocab_file), arch.discriminator.vocab_size
  if n != rows:
    unused = ("; a model pre-trained with vocab_size above its vocab's size exports only with a vocab of that size"
              if n < rows else "")
    raise ConversionError(f"vocab {vocab_file} has {n} tokens but the checkpoint's word embeddings have "
                          f"{rows} rows; pass the vocab the model was trained with{unused}")


def sibling_vocab(path: str) -> typing.Optional[str]:
  folder = path if fileio.isdir(path) else os.path.dirname(path)
  for name in (VOCAB_FILE, SPM_FILE):
    candidate = os.path.join(folder, name)
    if fileio.isfile(candidate):
      return candidate
  return None


def hf_tokenizer_config(vocab_file: str, do_lower_case: bool, max_length: int) -> dict:
  """``tokenizer_config.json`` for the copied vocab. WordPiece: ``ElectraTokenizer``. SentencePiece:
  transformers has no ELECTRA SentencePiece tokenizer; ``AlbertTokenizer`` over ``spiece.model`` builds the
  same ``[CLS] a [SEP] b [SEP]`` inputs with the same ids as the sentencepiece library (keep_accents: no
  accent stripping of its own; remove_space only collapses spaces, as the model's normaliser does), its
  special tokens named after the model's pieces. It also turns `` and '' into a double quote, which
  electra-tf does not: text with those differs (docs/interop.md)."""
  vocab = read_vocab(vocab_file)
  if vocab.kind != "sentencepiece":
    return {"tokenizer_class": "ElectraTokenizer", "do_lower_case": do_lower_case,
            "model_max_length": max_length}
  pieces = vocab.id_to_token()
  token = {name: pieces[i] for name, i in vocab.special.items()}
  return {"tokenizer_class": "AlbertTokenizer", "do_lower_case": do_lower_case, "keep_accents": True,
          "remove_space": True, "model_max_length": max_length,
          "unk_token": token["[UNK]"], "pad_token": token["[PAD]"], "cls_token": token["[CLS]"],
          "sep_token": token["[SEP]"], "mask_token": token["[MASK]"], "bos_token": token["[CLS]"],
          "eos_token": token["[SEP]"]}
