"""The pre-training data build as an Apache Beam pipeline: the same job on Dataflow, Spark, Flink or locally.

  corpus units (listed here) -> read a unit, cut it into chunks (units.iter_unit_payloads)
    -> Reshuffle -> clean, tokenize + pack each chunk (build.process_payload, the local builder's function)
    -> each example to a shard -> GroupByKey -> write each shard file (sorted, with its count and SHA-256)
    -> metadata.json (build.build_metadata) -> the temporary directory becomes ``output_dir``

A dump is many units when its multistream index sits beside it (ranges of its bzip2 streams, each read by
the worker that packs it); read whole, only its XML is split into pages by one reader, and the wikitext
cleanup runs after the Reshuffle, on every worker. Each OpenWebText archive is a unit.

A chunk's randomness is seeded from (seed, unit key, chunk index within the unit), never from the worker,
so for a seed the pipeline writes exactly the multiset of examples the local builder writes; examples go to
shards by a hash of their chunk (not round-robin in corpus order: that needs the whole corpus in order), and
each shard is sorted by corpus position, so a seed also gives the same files on every runner. Every step
is deterministic and a shard's file name is fixed, so a bundle the runner retries writes the same bytes.

Workers write into a hidden ``.NAME.tmp-<id>`` directory beside ``output_dir``; ``metadata.json`` is written
after every shard, and the directory replaces ``output_dir`` only after the pipeline succeeded (a rename
on a local disk; on an object store the files are moved in one by one, ``metadata.json`` last). A failed
pipeline leaves no ``output_dir`` that looks complete, and its temporary directory is removed.

apache-beam is an optional dependency (``pip install .[beam]``); it is imported only here.
"""

import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
import uuid


from electra_tf import fileio, tokenization
from electra_tf.errors import DataPrepError
from electra_tf.pretrain_data import build
from electra_tf.pretrain_data import corpus as corpus_lib
from electra_tf.pretrain_data import metadata as metadata_lib
from electra_tf.pretrain_data import tfrecord
from electra_tf.pretrain_data import units as units_lib

try:
  import apache_beam as beam
  from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions
except ImportError:  # the optional extra is not installed: build_with_beam says how to get it
  beam = None

RUNNERS = ("DirectRunner", "DataflowRunner", "SparkRunner", "FlinkRunner", "PortableRunner", "PrismRunner")


def _require_beam():
  if beam is None:
    raise DataPrepError("--runner needs Apache Beam, which is not installed; pip install 'electra-tf[beam]' "
                        "(or apache-beam==2.77.*), or build without --runner")


# ---------------------------------------------------------------------------------------------------
# Pipeline steps. Module-level classes and functions: the runner pickles them to its workers.


def _read_unit(element, chunk_chars):
  """(unit ordinal, CorpusUnit) -> ((ordinal, chunk index), chunk key, payload) per chunk, then its
  reading statistics (files read and skipped) as the "stats" output."""
  ordinal, unit = element
  stats = corpus_lib.CorpusStats()
  for c, (key, payload) in enumerate(units_lib.iter_unit_payloads(unit, stats, chunk_chars)):
    yield (ordinal, c), key, payload
  yield beam.pvalue.TaggedOutput("stats", (ordinal, stats))


def _sum_counts(counts):
  """(word pieces, documents, sentences) summed; CombineGlobally's function."""
  total = [0, 0, 0]
  for c in counts:
    total = [a + b for a, b in zip(total, c)]
  return tuple(total)


def _shard_offset(key, split, num_shards):
  """Where a chunk's examples start in the split's shards (then round-robin): a hash of the chunk key,
  the same on every worker (Python's hash() is salted per process)."""
  digest = hashlib.sha256(f"{split}:{key}".encode("utf-8")).digest()
  return int.from_bytes(digest[:8], "big") % num_shards


class _PackChunks(beam.DoFn if beam else object):
  """Cleans, tokenizes and packs chunks with build.process_payload; emits ((split, shard), (position,
  length, serialized tf.train.Example)), position = (unit ordinal, chunk index, row) orders each shard,
  and (word pieces, documents, sentences) as the "counts" output."""

  def __init__(self, vocab_name, vocab_bytes, do_lower_case, strip_accents, seed, max_seq_length,
               eval_fraction, shard_counts):
    # The vocab travels inside the pipeline, so workers need no access to the launcher's files.
    self._vocab = (vocab_name, vocab_bytes)
    self._casing = (do_lower_case, strip_accents)
    self._seed, self._max_seq_length, self._eval_fraction = seed, max_seq_length, eval_fraction
    self._shard_counts = shard_counts
    self._tokenizer = None

  def setup(self):
    self._vocab_dir = tempfile.mkdtemp(prefix="electra-vocab-")
    path = os.path.join(self._vocab_dir, self._vocab[0])  # the same suffix: .model is SentencePiece
    with open(path, "wb") as f:
      f.write(self._vocab[1])
    self._tokenizer = tokenization.load_tokenizer(path, *self._casing)

  def teardown(self):
    shutil.rmtree(getattr(self, "_vocab_dir", ""), ignore_errors=True)

  def infer_output_type(self, input_type):
    # Beam would infer a union with the TaggedOutput, which GroupByKey's type check refuses.
    return beam.typehints.Any

  def process(self, element):
    (ordinal, c), key, payload = element
    result = build.process_payload(self._tokenizer, 0, payload, self._seed, self._max_seq_length,
                                   self._eval_fraction, key)
    for split, num_shards in self._shard_counts.items():
      ids, seg, lengths = result.splits[split]
      offset = _shard_offset(key, split, num_shards)
      for row, record in enumerate(tfrecord.encode_examples(ids, seg, lengths)):
        yield ((split, (offset + row) % num_shards), ((ordinal, c, row), int(lengths[row]), record))
    yield beam.pvalue.TaggedOutput("counts", (result.num_pieces, result.num_documents, result.num_sentences))


def _shard_name(split, shard, shard_counts):
  prefix = build.TRAIN_PREFIX if split == "train" else build.EVAL_PREFIX
  return build.shard_name(prefix, shard, shard_counts[split])


def _write_shard(shard_and_records, tmp_dir, shard_counts):
  """Writes one shard file, its examples in corpus order; -> (split, name, tokens, metadata entry)."""
  (split, shard), records = shard_and_records
  records = sorted(records, key=lambda r: r[0])
  name = _shard_name(split, shard, shard_counts)
  path = fileio.join(tmp_dir, name)
  with tfrecord.TFRecordWriter(path) as writer:
    for _, _, data in records:
      writer.write(data)
  return split, name, sum(r[1] for r in records), metadata_lib.shard_entry(path, len(records))


def _finalize(_, tmp_dir, shard_counts, unit_stats, shard_results, counts, settings):
  """Writes the shards no example went to (empty files, as the local builder leaves them) and then
  ``metadata.json``, the mark of a complete build."""
  stats = corpus_lib.CorpusStats()
  for _, s in sorted(unit_stats, key=lambda item: item[0]):  # corpus order, as the local builder lists them
    stats.files_read += s.files_read
    stats.files_skipped += s.files_skipped
  num_pieces, stats.documents, stats.sentences = counts
  written = {name: (tokens, entry) for _, name, tokens, entry in shard_results}
  splits = {}
  for split, num_shards in shard_counts.items():
    shards, examples, tokens = {}, 0, 0
    for i in range(num_shards):
      name = _shard_name(split, i, shard_counts)
      if name not in written:
        path = fileio.join(tmp_dir, name)
        tfrecord.TFRecordWriter(path).close()
        written[name] = (0, metadata_lib.shard_entry(path, 0))
      t, shards[name] = written[name]
      examples, tokens = examples + shards[name]["num_records"], tokens + t
    prefix = build.TRAIN_PREFIX if split == "train" else build.EVAL_PREFIX
    splits[split] = build.split_metadata(prefix, shards, examples, tokens)
  meta = build.build_metadata(settings["tokenizer_fields"], settings["max_seq_length"],
                              settings["blanks_separate_docs"], settings["seed"], num_pieces, stats, splits,
                              time.time() - settings["start"], num_processes=settings["num_processes"],
                              runner=settings["runner"])
  metadata_lib.write_metadata(tmp_dir, meta)


def make_pipeline(pipeline, units, tmp_dir, vocab_file, do_lower_case, strip_accents, seed, max_seq_length,
                  eval_fraction, shard_counts, chunk_chars, settings):
  """Adds the build's steps to ``pipeline`` (a beam.Pipeline); the caller runs it."""
  vocab = (os.path.basename(str(vocab_file)), fileio.read_bytes(str(vocab_file)))
  read = (pipeline
          | "Units" >> beam.Create(list(enumerate(units)))
          | "SpreadUnits" >> beam.Reshuffle()
          | "ReadAndChunk" >> beam.FlatMap(_read_unit, chunk_chars).with_outputs("stats", main="chunks"))
  packed = (read.chunks
            | "SpreadChunks" >> beam.Reshuffle()  # one large unit (a dump) still packs on every worker
            | "TokenizeAndPack" >> beam.ParDo(_PackChunks(*vocab, do_lower_case, strip_accents, seed,
                                                          max_seq_length, eval_fraction, shard_counts))
            .with_outputs("counts", main="examples"))
  shards = (packed.examples
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteShards" >> beam.Map(_write_shard, tmp_dir, shard_counts))
  counts = packed.counts | "Count" >> beam.CombineGlobally(_sum_counts)
  _ = (pipeline
       | "Once" >> beam.Create([None])
       | "Finalize" >> beam.Map(_finalize, tmp_dir, shard_counts, beam.pvalue.AsList(read.stats),
                                beam.pvalue.AsList(shards), beam.pvalue.AsSingleton(counts), settings))


# ---------------------------------------------------------------------------------------------------
# Launching.


def pipeline_options(runner, pipeline_args=(), num_workers=None):
  """PipelineOptions for ``runner`` from the arguments after ``--``; on the DirectRunner
  ``--num-processes N`` (N > 1) means N worker processes unless those arguments say otherwise."""
  args = list(pipeline_args)
  given = lambda name: any(a.startswith(name) for a in args)
  if runner == "DirectRunner":
    if num_workers and num_workers > 1 and not given("--direct_num_workers"):
      args.append(f"--direct_num_workers={num_workers}")
    if num_workers and num_workers > 1 and not given("--direct_running_mode"):
      args.append("--direct_running_mode=multi_processing")
    if not given("--default_sdk_harness_log_level"):  # local worker processes: no INFO lines on stderr
      args.append("--default_sdk_harness_log_level=WARNING")
  return PipelineOptions(args, runner=runner)


def _temporary_dir(output_dir):
  parent, name = os.path.split(str(output_dir).rstrip("/"))
  return fileio.join(parent, f".{name}.tmp-{uuid.uuid4().hex[:12]}")


def _publish(tmp_dir, output_dir):
  """The complete temporary directory becomes ``output_dir`` (an old one is replaced)."""
  if not fileio.is_remote(output_dir):
    old = tmp_dir + ".old"
    if os.path.exists(output_dir):
      os.rename(output_dir, old)
    os.rename(tmp_dir, output_dir)
    fileio.rmtree(old, ignore_errors=True)
    return
  # Object stores have no directory rename: move the files in, metadata.json last.
  if fileio.exists(output_dir):
    fileio.rmtree(output_dir)
  fileio.makedirs(output_dir)
  names = sorted(fileio.listdir(tmp_dir), key=lambda n: n == metadata_lib.METADATA_FILE)
  for name in names:
    fileio.rename(fileio.join(tmp_dir, name), fileio.join(output_dir, name))
  fileio.rmtree(tmp_dir, ignore_errors=True)


def _worker_error(error):
  """A DataPrepError raised on a worker: its one line, or None. In-process runners re-raise it with
  "[while running 'STEP']" appended; worker processes send it inside the runner's own exception, with the
  worker's traceback as text."""
  text = str(error)
  if not isinstance(error, DataPrepError):
    found = re.findall(r"DataPrepError: ([^\n]+)", text)
    if not found:
      return None
    text = found[-1].strip().rstrip("'\"")
  return re.sub(r"\s*\[while running [^\]]*\]\s*$", "", text.strip())


def build_with_beam(output_dir, vocab_file, runner="DirectRunner", pipeline_args=(), corpus_dir=None,
                    wikipedia_dumps=(), books_dir=None, tfds=None, openwebtext=None, max_seq_length=128,
                    num_processes=1, blanks_separate_docs=True, do_lower_case=True, strip_accents=None,
                    seed=0, num_shards=1000, eval_fraction=0.0, num_eval_shards=None, chunk_chars=1 << 20,
                    dump_unit_bytes=units_lib.DUMP_UNIT_BYTES):
  """build.build_pretraining_dataset's job as a Beam pipeline on ``runner``; same arguments and output
  (the same multiset of examples for a seed), plus ``runner`` and ``pipeline_args`` (Beam's own flags,
  e.g. ``--project``, ``--region``, ``--temp_location`` for Dataflow). Blocks until the pipeline ends.

  Returns:
    The metadata dict (also ``output_dir/metadata.json``).

  Raises:
    DataPrepError: bad input (before the pipeline starts, or raised by a worker), one line.
  """
  _require_beam()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # inherited by DirectRunner worker processes
  sources, tokenizer, units = build.prepare(output_dir, vocab_file, corpus_dir, wikipedia_dumps, books_dir,
                                            tfds, max_seq_length, num_processes, blanks_separate_docs,
                                            do_lower_case, strip_accents, num_shards, eval_fraction,
                                            num_eval_shards, openwebtext, dump_unit_bytes)
  if runner == "DataflowRunner":
    local = [str(p) for p in (output_dir, *units_lib.source_paths(units)) if not fileio.is_remote(p)]
    if local:
      raise DataPrepError(f"--runner DataflowRunner: its workers cannot read or write {local[0]} on this "
                          "machine; put the corpus and --output-dir in Cloud Storage (gs://...)")
  options = pipeline_options(runner, pipeline_args, num_processes)
  shard_counts = {"train": num_shards}
  if eval_fraction > 0:
    shard_counts["eval"] = build.eval_shard_count(num_shards, eval_fraction, num_eval_shards)
  output_dir = str(output_dir) if fileio.is_remote(output_dir) else os.path.abspath(output_dir)
  tmp_dir = _temporary_dir(output_dir)
  fileio.makedirs(tmp_dir)
  settings = {"tokenizer_fields": build.tokenizer_metadata(tokenizer, vocab_file),
              "max_seq_length": max_seq_length, "blanks_separate_docs": blanks_separate_docs, "seed": seed,
              "start": time.time(), "runner": runner,
              # worker processes on the DirectRunner; elsewhere the runner decides
              "num_processes": options.view_as(DirectOptions).direct_num_workers
                               if runner == "DirectRunner" else None}
  try:
    pipeline = beam.Pipeline(options=options)
    make_pipeline(pipeline, units, tmp_dir, vocab_file, do_lower_case, strip_accents, seed, max_seq_length,
                  eval_fraction, shard_counts, chunk_chars, settings)
    try:
      state = pipeline.run().wait_until_finish()
    except Exception as e:  # pylint: disable=broad-except
      message = _worker_error(e)
      if message:
        raise DataPrepError(message) from None
      raise
    if state not in (None, "DONE") and str(state) not in ("DONE", "PipelineState.DONE"):
      raise DataPrepError(f"the Beam pipeline ended in state {state}; see the runner's log")
    meta_path = fileio.join(tmp_dir, metadata_lib.METADATA_FILE)
    if not fileio.exists(meta_path):
      raise DataPrepError(f"the Beam pipeline finished without writing {meta_path}; see the runner's log")
    meta = metadata_lib.read_metadata(tmp_dir)
    meta.pop("format_version", None)  # as the local builder returns it
    stats = corpus_lib.CorpusStats(files_read=meta["num_files_read"], files_skipped=meta["skipped_files"])
    if meta["splits"]["train"]["num_examples"] == 0:
      raise build.no_examples_error(sources, stats)
    build.warn_skipped(stats)
    _publish(tmp_dir, output_dir)
  except BaseException:
    fileio.rmtree(tmp_dir, ignore_errors=True)
    raise
  return meta


def note_runner(runner):
  if runner not in RUNNERS:
    print(f"note: --runner {runner} is not one of {', '.join(RUNNERS)}; passing it to Beam as given",
          file=sys.stderr)
