"""Builds ELECTRA pre-training TFRecords from raw text (flags as the reference's script; see docs/data.md).

  python data_prep/build_pretraining_dataset.py --corpus-dir corpus/ --vocab-file vocab.txt \
      --output-dir pretrain_tfrecords --num-processes 2 --num-shards 64 --eval-fraction 0.01

With no corpus, vocab or output arguments it builds the embedded sample setup (./sample_run: IMDB
reviews, a learned 8k vocab) so the command can be tried alone.

  python data_prep/build_pretraining_dataset.py --verify --output-dir pretrain_tfrecords

reads every record of every shard of a built directory and checks it against its metadata.json.

  python data_prep/build_pretraining_dataset.py --runner DataflowRunner --corpus-dir gs://b/corpus ... \
      -- --project P --region R --temp_location gs://b/tmp --setup_file ./setup.py

runs the same job as an Apache Beam pipeline (DirectRunner, DataflowRunner, SparkRunner, FlinkRunner);
arguments after ``--`` are Beam's pipeline options (docs/data.md).
"""

import argparse
import gc
import sys

from electra_tf.cli import common
from electra_tf.errors import DataPrepError
from electra_tf.pretrain_data import build


def split_pipeline_args(argv):
  """argv -> (this command's arguments, the Beam pipeline options after the first ``--``)."""
  argv = list(sys.argv[1:] if argv is None else argv)
  if "--" in argv:
    i = argv.index("--")
    return argv[:i], argv[i + 1:]
  return argv, []


def parse_args(argv=None):
  argv, pipeline_args = split_pipeline_args(argv)
  p = common.ArgumentParser(description=__doc__.splitlines()[0],
                              usage="%(prog)s [options] [-- BEAM_PIPELINE_OPTIONS]")
  src = p.add_argument_group("corpus sources (any combination)")
  src.add_argument("--corpus-dir", help="directory of text files: one sentence per line, blank line "
                   "between documents (.gz/.bz2 allowed)")
  src.add_argument("--wikipedia-dump", action="append", default=[],
                   help="MediaWiki pages-articles .xml or .xml.bz2 (repeatable); a multistream dump with "
                   "its -index.txt.bz2 beside it is read as many ranges of streams")
  src.add_argument("--books-dir", help="directory of books, one book per text file")
  src.add_argument("--tfds-name", help="tensorflow-datasets text set, e.g. wikipedia/20230601.en")
  src.add_argument("--tfds-split", default="train")
  src.add_argument("--tfds-text-key", default="text")
  src.add_argument("--tfds-data-dir", default=None)
  src.add_argument("--tfds-download", action="store_true", help="let tfds download and prepare it")
  src.add_argument("--openwebtext-dir", help="OpenWebText: the directory of urlsf_subset*.xz archives that "
                   "openwebtext.tar.xz unpacks to, or openwebtext.tar.xz itself (streamed, never extracted); "
                   "each .txt is one document")
  p.add_argument("--vocab-file", help="WordPiece vocab.txt or SentencePiece .model")
  p.add_argument("--output-dir", help="where the TFRecords and metadata.json go")
  p.add_argument("--max-seq-length", type=int, default=128)
  p.add_argument("--num-processes", type=int, default=1)
  p.add_argument("--blanks-separate-docs", action=argparse.BooleanOptionalAction, default=True,
                 help="a blank line ends a document (default; the reference's flag)")
  p.add_argument("--do-lower-case", action=argparse.BooleanOptionalAction, default=True,
                 help="lowercase (default); --no-lower-case for cased vocabs")
  p.add_argument("--no-lower-case", dest="do_lower_case", action="store_false", help=argparse.SUPPRESS)
  p.add_argument("--do-strip-accents", dest="strip_accents", action=argparse.BooleanOptionalAction,
                 default=None, help="strip accents (default: when lowercasing, as the reference)")
  p.add_argument("--no-strip-accents", dest="strip_accents", action="store_false",
                 help=argparse.SUPPRESS)
  p.add_argument("--seed", type=int, default=0, help="same seed -> same output files")
  p.add_argument("--num-shards", type=int, default=1000, help="training shards (reference: 1000)")
  p.add_argument("--eval-fraction", type=float, default=0.0,
                 help="fraction of documents held out as pretrain_eval.tfrecord-*")
  p.add_argument("--num-eval-shards", type=int, default=None)
  p.add_argument("--no-progress", dest="progress", action="store_false")
  p.add_argument("--runner", default=None,
                 help="run as an Apache Beam pipeline on this runner: DirectRunner, DataflowRunner, "
                 "SparkRunner, FlinkRunner (pip install .[beam]); Beam's own options go after `--`. "
                 "Default: this machine's process pool. Same examples for a seed either way")
  p.add_argument("--verify", action="store_true",
                 help="build nothing: read every record of every shard in --output-dir and check CRCs, "
                 "feature shapes, record counts and checksums against its metadata.json")
  args = p.parse_args(argv)
  args.pipeline_args = pipeline_args
  return args


def _use_sample_setup_if_no_data(args):
  """No data arguments at all: the embedded sample setup. Some but not all: say what is missing."""
  sources = args.corpus_dir or args.wikipedia_dump or args.books_dir or args.tfds_name or args.openwebtext_dir
  if not (sources or args.vocab_file or args.output_dir):
    sample = common.sample_setup(build_records=False)
    args.corpus_dir, args.vocab_file = str(sample.root / "corpus"), str(sample.vocab_file)
    args.output_dir = str(sample.root / "pretrain_tfrecords")
    if args.num_shards == 1000:  # the reference's 1000 shards are far too many for a small corpus
      args.num_shards = 8
    return
  missing = [flag for flag, value in (("--vocab-file", args.vocab_file), ("--output-dir", args.output_dir))
             if not value]
  if missing:
    raise DataPrepError(f"{' and '.join(missing)} required (or give no data arguments to build the sample "
                        "setup)")


def _verify(args):
  if not args.output_dir:
    raise DataPrepError("--verify needs --output-dir DIR, the directory the data was built into")
  from electra_tf.pretrain_data import verify  # pylint: disable=import-outside-toplevel  (TensorFlow)
  report = verify.verify_pretraining_data(args.output_dir, progress=args.progress)
  report.raise_if_bad()
  print(report.summary())


def _run(args):
  if args.verify:
    return _verify(args)
  # A build allocates millions of small objects, most of them kept (the tokenizer's cache, the examples of a
  # chunk): the collector need not walk what the imports made again and again, nor run every 700 of them.
  gc.freeze()
  gc.set_threshold(100_000, 50, 100)
  _use_sample_setup_if_no_data(args)
  tfds = None
  if args.tfds_name:
    tfds = dict(name=args.tfds_name, split=args.tfds_split, text_key=args.tfds_text_key,
                data_dir=args.tfds_data_dir, download=args.tfds_download)
  if args.pipeline_args and not args.runner:
    raise DataPrepError(f"Beam pipeline options after `--` ({' '.join(args.pipeline_args)}) need --runner; "
                        "pass --runner DirectRunner|DataflowRunner|SparkRunner|FlinkRunner")
  kwargs = dict(
      corpus_dir=args.corpus_dir, wikipedia_dumps=args.wikipedia_dump, books_dir=args.books_dir, tfds=tfds,
      openwebtext=args.openwebtext_dir,
      max_seq_length=args.max_seq_length, num_processes=args.num_processes,
      blanks_separate_docs=args.blanks_separate_docs, do_lower_case=args.do_lower_case,
      strip_accents=args.strip_accents, seed=args.seed, num_shards=args.num_shards,
      eval_fraction=args.eval_fraction, num_eval_shards=args.num_eval_shards)
  if args.runner:
    from electra_tf.pretrain_data import beam_pipeline  # pylint: disable=import-outside-toplevel
    beam_pipeline.note_runner(args.runner)
    meta = beam_pipeline.build_with_beam(args.output_dir, args.vocab_file, args.runner, args.pipeline_args,
                                         **kwargs)
  else:
    meta = build.build_pretraining_dataset(args.output_dir, args.vocab_file, progress=args.progress, **kwargs)
  splits = ", ".join(f"{s}: {v['num_examples']} examples" for s, v in meta["splits"].items())
  print(f"wrote {args.output_dir} ({splits}; {meta['num_word_pieces']} word pieces in "
        f"{meta['build_seconds']:.1f} s)")


def main(argv=None) -> int:
  args = parse_args(argv)
  return common.run_cli(lambda: _run(args))
