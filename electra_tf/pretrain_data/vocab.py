"""Learns a WordPiece vocab (tensorflow-text's learner) or a SentencePiece model from the corpus sources.

Special tokens go where the reference (BERT's vocab.txt) has them: [PAD]=0, [unused0..98]=1..99,
[UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103.
"""

import io

import sentencepiece as spm
import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset

from electra_tf import fileio, runtime, tokenization
from electra_tf.pretrain_data.corpus import DataPrepError


def reserved_tokens():
  """The first 104 entries of BERT's vocab layout."""
  return ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _sentences(documents):
  for doc in documents:
    yield from doc


def learn_wordpiece_vocab(documents, output_file, vocab_size=30522, do_lower_case=True,
                          strip_accents=None, max_sentences=None):
  """Learns a WordPiece vocab with the reference's special-token places; returns its size."""
  # Before the learning, which takes hours on a real corpus; the output's directory is not created.
  runtime.check_writable(output_file, "vocab", create_parents=False)
  # Pre-tokenize exactly as the reference tokenizer will (cleaning, CJK, casing, punctuation).
  basic = tokenization.BasicTokenizer(do_lower_case, strip_accents)
  lines = []
  for i, sentence in enumerate(_sentences(documents)):
    if max_sentences and i >= max_sentences:
      break
    lines.append(" ".join(basic.tokenize(sentence)))
  if not lines:
    raise DataPrepError("the corpus has no text to learn a vocab from; pass UTF-8 text sources")
  reserved = reserved_tokens()
  vocab = bert_vocab_from_dataset.bert_vocab_from_dataset(
      tf.data.Dataset.from_tensor_slices(lines).batch(1000), vocab_size=vocab_size,
      reserved_tokens=reserved,
      # Input is already reference-normalised; the learner must only split on whitespace.
      bert_tokenizer_params=dict(lower_case=False), learn_params={})
  runtime.atomic_write(output_file, "".join(token + "\n" for token in vocab))
  return len(vocab)


def learn_sentencepiece_model(documents, model_prefix, vocab_size=32000, do_lower_case=False,
                              model_type="unigram", max_sentences=None):
  """Trains ``{model_prefix}.model``; returns its path. Special tokens at the reference's ids."""
  runtime.check_writable(f"{model_prefix}.model", "SentencePiece model", create_parents=False)

  def sentences():
    for i, s in enumerate(_sentences(documents)):
      if max_sentences and i >= max_sentences:
        return
      yield s.lower() if do_lower_case else s

  # [PAD] 0 and [UNK] 100 as the reserved ids; [unused*], [CLS], [SEP], [MASK] as user-defined symbols
  # fill ids 1..99 and 101..103 in order.
  user_defined = [t for t in reserved_tokens() if t not in ("[PAD]", "[UNK]")]
  # The trainer writes local files only: a remote model (gs://) is trained into memory and written from
  # there (without the .vocab listing beside it).
  remote = fileio.is_remote(model_prefix)
  output = dict(model_writer=io.BytesIO()) if remote else dict(model_prefix=str(model_prefix))
  spm.SentencePieceTrainer.train(
      sentence_iterator=sentences(), vocab_size=vocab_size,
      model_type=model_type, pad_id=0, unk_id=100, bos_id=-1, eos_id=-1, pad_piece="[PAD]",
      unk_piece="[UNK]", user_defined_symbols=user_defined, minloglevel=2,
      hard_vocab_limit=False, **output)
  if remote:
    runtime.atomic_write(f"{model_prefix}.model", output["model_writer"].getvalue())
  return f"{model_prefix}.model"
