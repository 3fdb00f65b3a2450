"""Tiny real-text pre-training data for the pre-training tests: WikiText-2 with the BERT vocab (or its most
frequent pieces), built by the library's own data builder as users build theirs."""

import gzip
import pathlib

import numpy as np

from conftest import TINY_MODEL
from electra_tf.pretraining.masking import SpecialIds



def _wikitext_lines(data_dir: pathlib.Path, split: str, max_lines: int):
  with gzip.open(data_dir / "corpus" / "wikitext-2" / f"{split}.raw.gz", "rt", encoding="utf-8") as f:
    for i, line in enumerate(f):
      if i >= max_lines:
        break
      line = line.strip()
      if line and not line.startswith("="):
        yield line


def frequent_pieces_vocab(tokenizer, lines, top_k):
  """The 5 special tokens, then the ``top_k`` most frequent word pieces of ``lines``."""
  from collections import Counter
  special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  counts = Counter(t for line in lines for t in tokenizer.tokenize(line) if t not in special)
  return special + [t for t, _ in counts.most_common(top_k)]


def build_tfrecords(out_dir: pathlib.Path, data_dir: pathlib.Path, vocab_file: pathlib.Path,
                    max_seq_length: int = 32, max_lines: int = 600, num_files: int = 2,
                    heldout: bool = True, top_k: int = 0) -> pathlib.Path:
  """Writes ``out_dir/pretrain_tfrecords`` and ``out_dir/vocab.txt`` with the library's own builder (the
  reference's packing), from the first ``max_lines`` lines of WikiText-2's training text: each paragraph a
  document, each line of it a sentence. ``heldout``: a tenth of the documents go to the held-out
  ``pretrain_eval.tfrecord*``.

  ``top_k`` > 0: the vocab is the 5 special tokens plus the ``top_k`` most frequent word pieces of the
  text (the rest become [UNK]), so a tiny model sees every token often. Returns out_dir.
  """
  from electra_tf import tokenization
  from electra_tf.pretrain_data.build import build_pretraining_dataset

  out_dir = pathlib.Path(out_dir)
  corpus = out_dir / "corpus"
  corpus.mkdir(parents=True, exist_ok=True)
  paragraphs = list(_wikitext_lines(data_dir, "train", max_lines))
  # the reference's text format: one sentence per line, a blank line between documents
  (corpus / "wiki.txt").write_text("\n\n".join(p.replace(" . ", " .\n") for p in paragraphs) + "\n",
                                   encoding="utf-8")
  vocab_copy = out_dir / "vocab.txt"
  if top_k:
    tok = tokenization.FullTokenizer(str(vocab_file), do_lower_case=True)
    vocab_copy.write_text("\n".join(frequent_pieces_vocab(tok, paragraphs, top_k)) + "\n", encoding="utf-8")
  else:
    vocab_copy.write_bytes(pathlib.Path(vocab_file).read_bytes())
  build_pretraining_dataset(str(out_dir / "pretrain_tfrecords"), str(vocab_copy), corpus_dir=str(corpus),
                            max_seq_length=max_seq_length, num_shards=num_files,
                            eval_fraction=0.1 if heldout else 0.0, num_eval_shards=1 if heldout else None,
                            progress=False)
  return out_dir


def tiny_hparams(**extra) -> dict:
  """A tiny ELECTRA on the real 30522-token vocab: H 32, 1 layer, batch 8, length 32, no warmup."""
  hp = {"model_hparam_overrides": dict(TINY_MODEL), "embedding_size": 32, "max_seq_length": 32,
        "train_batch_size": 8, "eval_batch_size": 8, "num_train_steps": 40, "num_warmup_steps": 0,
        "learning_rate": 2e-3, "iterations_per_loop": 10, "save_checkpoints_steps": 20,
        "num_eval_steps": 4, "generator_hidden_size": 1.0}
  hp.update(extra)
  return hp


def token_batch(rows=64, length=32, seed=0, special=None):
  """Random BERT-id rows of 6..length real tokens: [CLS] ... [SEP] ... [SEP], then padding.
  Returns (ids, input_mask), int32 [rows, length]."""
  special = special or SpecialIds()
  rng = np.random.default_rng(seed)
  lengths = rng.integers(6, length + 1, rows)
  ids = np.zeros([rows, length], np.int32)
  for r, n in enumerate(lengths):
    ids[r, :n] = rng.integers(1000, 2000, n)
    ids[r, 0], ids[r, n - 1] = special.cls, special.sep
    ids[r, n // 2] = special.sep  # a second segment boundary
  mask = (np.arange(length)[None] < lengths[:, None]).astype(np.int32)
  return ids, mask
