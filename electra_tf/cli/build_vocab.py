"""Learns a WordPiece vocab.txt or a SentencePiece .model from the same corpus sources as data prep.

  python data_prep/build_vocab.py --corpus-dir corpus/ --output vocab.txt --vocab-size 30522
  python data_prep/build_vocab.py --wikipedia-dump dump.xml.bz2 --sentencepiece --output sp.model

WordPiece is learnt by Hugging Face tokenizers' Rust trainer (--learner hf, the default: minutes per GB of
text) or tensorflow-text's learner (--learner tf-text, the one before: for continuity with its vocabs;
pure Python, too slow beyond a few MB unless --max-sentences limits it). The output's directory must
exist; it is checked before the (long) learning.
"""

import argparse
import sys

from electra_tf.cli import common
from electra_tf.errors import DataPrepError
from electra_tf.pretrain_data import build, corpus, vocab_learning


def parse_args(argv=None):
  p = common.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--corpus-dir")
  p.add_argument("--wikipedia-dump", action="append", default=[])
  p.add_argument("--books-dir")
  p.add_argument("--tfds-name")
  p.add_argument("--tfds-split", default="train")
  p.add_argument("--tfds-text-key", default="text")
  p.add_argument("--tfds-data-dir", default=None)
  p.add_argument("--blanks-separate-docs", action=argparse.BooleanOptionalAction, default=True)
  p.add_argument("--output", required=True,
                 help="vocab.txt path (WordPiece), or the SentencePiece model in an existing directory: "
                 "sp.model (or the prefix sp) writes sp.model and its piece list sp.vocab")
  p.add_argument("--sentencepiece", action="store_true", help="train a SentencePiece model instead")
  p.add_argument("--sentencepiece-model-type", default="unigram", choices=["unigram", "bpe"])
  p.add_argument("--vocab-size", type=int, default=30522)
  p.add_argument("--do-lower-case", action=argparse.BooleanOptionalAction, default=True)
  p.add_argument("--do-strip-accents", dest="strip_accents", action=argparse.BooleanOptionalAction,
                 default=None)
  p.add_argument("--learner", choices=vocab_learning.LEARNERS, default=vocab_learning.DEFAULT_LEARNER,
                 help="WordPiece learner: hf (Hugging Face tokenizers, fast; default) or tf-text "
                 "(tensorflow-text's learner; slow)")
  p.add_argument("--max-unique-chars", type=int, default=vocab_learning.MAX_UNIQUE_CHARS,
                 help="WordPiece: at most this many characters (the most frequent) become pieces; a word "
                 "with another one tokenizes to [UNK]")
  p.add_argument("--max-sentences", type=int, default=None,
                 help="learn from the first N sentences only (default: all of them)")
  p.add_argument("--no-progress", dest="progress", action="store_false",
                 help="no sentences/s bar on stderr while the WordPiece learner reads the corpus")
  return p.parse_args(argv)


def _run(args):
  tfds = None
  if args.tfds_name:
    tfds = dict(name=args.tfds_name, split=args.tfds_split, text_key=args.tfds_text_key,
                data_dir=args.tfds_data_dir)
  if not any([args.corpus_dir, args.wikipedia_dump, args.books_dir, tfds]):
    raise DataPrepError("no corpus given; pass --corpus-dir, --wikipedia-dump, --books-dir or --tfds-name")
  if args.vocab_size < 200:
    raise DataPrepError(f"--vocab-size is {args.vocab_size}; use at least 200 (104 entries are reserved "
                        "for [PAD], [unused*], [UNK], [CLS], [SEP], [MASK])")
  if args.max_sentences is not None and args.max_sentences < 1:
    raise DataPrepError(f"--max-sentences is {args.max_sentences}; pass a positive count, or leave it out "
                        "to learn from every sentence")
  if args.max_unique_chars < 1:
    raise DataPrepError(f"--max-unique-chars is {args.max_unique_chars}; pass a positive count (default "
                        f"{vocab_learning.MAX_UNIQUE_CHARS})")
  stats = corpus.CorpusStats()
  docs = build.iter_documents(stats, args.corpus_dir, args.blanks_separate_docs, args.wikipedia_dump,
                             args.books_dir, tfds)
  try:
    if args.sentencepiece:
      prefix = args.output[:-len(".model")] if args.output.endswith(".model") else args.output
      path = vocab_learning.learn_sentencepiece_model(docs, prefix, args.vocab_size, args.do_lower_case,
                                                      args.sentencepiece_model_type, args.max_sentences)
    else:
      n = vocab_learning.learn_wordpiece_vocab(docs, args.output, args.vocab_size, args.do_lower_case,
                                               args.strip_accents, args.max_sentences, args.learner,
                                               args.max_unique_chars, args.progress)
      path = f"{args.output} ({n} tokens)"
  finally:
    # Said whether or not the learning went through: an all-binary corpus fails with "no text".
    if stats.files_skipped:
      print(f"warning: skipped {len(stats.files_skipped)} file(s) that are binary or not UTF-8: "
            + "; ".join(stats.files_skipped[:5]) + (" ..." if len(stats.files_skipped) > 5 else ""),
            file=sys.stderr)
  used = min(stats.sentences, args.max_sentences or stats.sentences)
  print(f"wrote {path} from {used:,} sentences")


def main(argv=None) -> int:
  args = parse_args(argv)
  return common.run_cli(lambda: _run(args))
