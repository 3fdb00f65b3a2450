"""Tokenize + pack + write: corpus sources -> sharded pre-training TFRecords + metadata.json.

The corpus is a list of units (units.list_units: a text file, a dump or a range of its streams, a book, a
tfds split, an OpenWebText archive), each cut into chunks of whole documents (about ``chunk_chars``
characters each), handed out as payloads that become documents where they are packed (a dump's cleanup
runs in the worker processes; the reading process only splits XML into pages). Each chunk gets its own
``random.Random`` seeded from (seed, unit key, chunk index within the unit) and a fresh ExampleBuilder, so
a chunk's examples depend on nothing outside its unit: the parent here writes them in corpus order
round-robin over the shards, the same for a seed whatever ``num_processes`` is, and the Apache Beam
pipeline (beam_pipeline.py) writes the same multiset of examples from any number of workers. Output is
written into a temporary sibling directory that is renamed to ``output_dir`` only when complete; a stop signal
(SIGINT, SIGTERM) ends a build at once, its worker processes and temporary directory removed.
"""

import collections
import functools
import os
import random
import signal
import sys
import threading
import time

from electra_tf import fileio, runtime, tokenization
from electra_tf.pretrain_data import corpus as corpus_lib
from electra_tf.pretrain_data import metadata as metadata_lib
from electra_tf.pretrain_data import packing
from electra_tf.pretrain_data import pool as pool_lib
from electra_tf.pretrain_data import tfrecord
from electra_tf.pretrain_data import units as units_lib
from electra_tf.pretrain_data.corpus import DataPrepError

TRAIN_PREFIX = "pretrain_data.tfrecord"  # the reference's names: pretrain_data.tfrecord-{i}-of-{n}
EVAL_PREFIX = "pretrain_eval.tfrecord"

ChunkResult = collections.namedtuple("ChunkResult", "index splits num_pieces num_sentences num_documents")


def shard_name(prefix, i, n):
  return f"{prefix}-{i}-of-{n}"


# ---------------------------------------------------------------------------------------------------
# Chunk processing (runs in worker processes).

_WORKER = {}
# A worker starts in a fraction of a second (no TensorFlow): a second process loses below about 5 MiB of text
# and wins on WikiText-2 train's 10.9 MB (benchmarks/README.md, "Data preparation: the text path").
MIN_BYTES_PER_WORKER = 8 << 20


def _init_worker(vocab_file, do_lower_case, strip_accents):
  _WORKER["tokenizer"] = tokenization.load_tokenizer(vocab_file, do_lower_case, strip_accents)


def _process_chunk(args):
  return serialized_payload(_WORKER["tokenizer"], *args)


def serialized_payload(tokenizer, *args):
  """process_payload with each split's examples as ``(tf.train.Example bytes, token count)``: serialized where
  the chunk is packed, so a process writing shards for several workers only writes bytes."""
  result = process_payload(tokenizer, *args)
  return result._replace(splits={
      name: (tfrecord.encode_examples(ids, seg, lengths), int(lengths.sum()))
      for name, (ids, seg, lengths) in result.splits.items()})


def process_payload(tokenizer, index, payload, seed, max_seq_length, eval_fraction, key=None):
  """process_chunk on a chunk's payload (units.iter_unit_payloads): its documents are made here, so a
  dump's wikitext cleanup or an archive's decompression runs wherever the chunk is packed."""
  return process_chunk(tokenizer, index, units_lib.payload_documents(payload), seed, max_seq_length,
                       eval_fraction, key)


def process_chunk(tokenizer, index, docs, seed, max_seq_length, eval_fraction, key=None):
  """Tokenizes a chunk of documents in one batch and packs them.

  ``index`` orders the results (here only); ``key`` (``chunk_key``, default the index) seeds the chunk's
  randomness, so a chunk's examples are a function of (seed, key, docs) alone.

  Returns:
    ChunkResult; ``splits`` maps "train"/"eval" to (input_ids [n, L] int32, segment_ids [n, L] int32,
    lengths [n] int32).
  """
  sentences = [s for doc in docs for s in doc]
  flat, row_splits = tokenizer.batch_ids(sentences)
  flat = flat.tolist()
  row_splits = row_splits.tolist()
  cls_id, sep_id = tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
  key = index if key is None else key
  # random.Random(str) hashes the string with SHA-512: the same state in every process and machine.
  builders = {
      "train": packing.ExampleBuilder(max_seq_length, cls_id, sep_id, random.Random(f"{seed}:{key}")),
      "eval": packing.ExampleBuilder(max_seq_length, cls_id, sep_id,
                                     random.Random(f"{seed}:{key}:eval")),
  }
  split_rng = random.Random(f"{seed}:{key}:split")
  examples = {"train": [], "eval": []}
  k = 0
  for doc in docs:
    # Whole documents are held out, so no eval text is seen in training.
    split = "eval" if eval_fraction > 0 and split_rng.random() < eval_fraction else "train"
    builder, out = builders[split], examples[split]
    for _ in doc:
      example = builder.add_sentence(flat[row_splits[k]:row_splits[k + 1]])
      k += 1
      if example:
        out.append(example)
    example = builder.end_document()
    if example:
      out.append(example)
  splits = {name: packing.pad_examples(ex, max_seq_length) for name, ex in examples.items()}
  return ChunkResult(index, splits, len(flat), len(sentences), len(docs))


def iter_tasks(units, stats, seed, max_seq_length, eval_fraction, chunk_chars):
  """process_payload's arguments for every chunk of every unit, in corpus order (index = that order)."""
  index = 0
  for unit in units:
    for key, payload in units_lib.iter_unit_payloads(unit, stats, chunk_chars):
      yield index, payload, seed, max_seq_length, eval_fraction, key
      index += 1


# ---------------------------------------------------------------------------------------------------
# Writing.


class _ShardFiles:
  """Creates a build's shard files in a thread while the first chunks are tokenized.

  Creating a file can take most of a millisecond (ext4 soon after many files were deleted skips the freed
  inodes), so 1,000 shards can cost as much as tokenizing WikiText-2. The GIL's switch interval is short
  while the thread runs, so that it goes on soon after each file's system call returns (at the default 5 ms
  it would create about one file per interval beside the tokenizing thread).
  """

  SWITCH_INTERVAL = 5e-4

  def __init__(self, paths):
    self._files, self._error = [], None
    self._interval = sys.getswitchinterval()
    sys.setswitchinterval(min(self._interval, self.SWITCH_INTERVAL))
    self._thread = threading.Thread(target=self._create, args=(paths,), daemon=True)
    self._thread.start()

  def _create(self, paths):
    try:
      for path in paths:
        self._files.append(tfrecord.TFRecordWriter(path))
    except BaseException as e:  # pylint: disable=broad-except  (raised where the files are wanted)
      self._error = e
    finally:
      sys.setswitchinterval(self._interval)

  def ready(self) -> bool:
    return not self._thread.is_alive()

  def get(self) -> list:
    """The open files, in the order of their paths, once all are created."""
    self._thread.join()
    if self._error is not None:
      raise self._error
    return self._files

  def close(self):
    self._thread.join()
    for f in self._files:
      f.close()


class _ShardWriter:
  """Writes examples round-robin over the shard files ``names`` (like one reference job over its files).

  ``files`` (``_ShardFiles``) holds them open from ``first_file`` on; records wait in memory, per shard,
  until they are created (or ``FLUSH_BYTES`` of records wait).
  """

  FLUSH_BYTES = 32 << 20

  def __init__(self, directory, names, files, first_file=0):
    self.names = names
    self._directory = directory
    self._files, self._first = files, first_file
    self._writers = None
    self._buffers = [[] for _ in names]
    self._buffered_bytes = 0
    self.num_records = [0] * len(names)
    self.num_examples = 0
    self.num_tokens = 0

  def write(self, records, num_tokens):
    """Serialized examples (``serialized_payload``) and their real tokens."""
    n = len(self.names)
    for record in records:
      shard = self.num_examples % n
      self._buffers[shard].append(record)
      self._buffered_bytes += len(record)
      self.num_records[shard] += 1
      self.num_examples += 1
    self.num_tokens += num_tokens
    if self._buffered_bytes >= self.FLUSH_BYTES or self._files.ready():
      self._flush()

  def _flush(self):
    if self._writers is None:
      self._writers = self._files.get()[self._first:self._first + len(self.names)]
    for writer, buffer in zip(self._writers, self._buffers):
      for record in buffer:
        writer.write(record)
      buffer.clear()
    self._buffered_bytes = 0

  def close(self):
    """Writes what waits; the files themselves are closed by ``_ShardFiles.close``."""
    self._flush()

  def shards(self) -> dict:
    """Per shard: its record count, size and SHA-256, so that verification can be exact (a shard cut at a
    record boundary reads without error)."""
    return {name: metadata_lib.shard_entry(os.path.join(self._directory, name), n)
            for name, n in zip(self.names, self.num_records)}


# ---------------------------------------------------------------------------------------------------


def _validate(max_seq_length, num_shards, eval_fraction, num_processes, sources, num_eval_shards=None):
  if max_seq_length < 5:
    raise DataPrepError(f"--max-seq-length is {max_seq_length}; use at least 5 (the reference packs "
                        "[CLS] A [SEP] B [SEP] and draws random lengths from 5 up)")
  if num_shards < 1:
    raise DataPrepError(f"--num-shards is {num_shards}; use 1 or more")
  if not 0.0 <= eval_fraction < 1.0:
    raise DataPrepError(f"--eval-fraction is {eval_fraction}; use a value in [0, 1)")
  if num_eval_shards is not None and num_eval_shards < 1:
    raise DataPrepError(f"--num-eval-shards is {num_eval_shards}; use 1 or more, or leave it out for "
                        "max(1, round(num_shards * eval_fraction))")
  if num_processes < 1:
    raise DataPrepError(f"--num-processes is {num_processes}; use 1 or more")
  if not sources:
    raise DataPrepError("no corpus given; pass --corpus-dir, --wikipedia-dump, --books-dir, --tfds-name "
                        "or --openwebtext-dir")


def iter_documents(stats, corpus_dir, blanks_separate_docs, wikipedia_dumps, books_dir, tfds,
                   openwebtext=None):
  """Every document of the sources in corpus order, read in this process (counted into ``stats``)."""
  units = units_lib.list_units(corpus_dir, blanks_separate_docs, wikipedia_dumps, books_dir, tfds, openwebtext)
  for unit in units:
    for doc in units_lib.iter_unit_documents(unit, stats):
      stats.documents += 1
      stats.sentences += len(doc)
      yield doc


def tokenizer_metadata(tokenizer, vocab_file) -> dict:
  """The metadata fields that say which vocab and casing the data was tokenized with."""
  return {
      "vocab_file": str(vocab_file) if fileio.is_remote(vocab_file) else os.path.abspath(str(vocab_file)),
      "vocab_sha256": tokenization.file_checksum(vocab_file),
      "vocab_size": getattr(tokenizer, "vocab_size", len(tokenizer.vocab)),
      "tokenizer": tokenizer.kind,
      "do_lower_case": tokenizer.do_lower_case,
      "strip_accents": tokenizer.strip_accents,
  }


def split_metadata(prefix, shards, num_examples, num_tokens) -> dict:
  """One split's entry; ``shards``: {file name: {"num_records", "num_bytes", "sha256"}} over all its shard
  files."""
  return {"file_pattern": f"{prefix}-*-of-{len(shards)}", "num_shards": len(shards),
          "num_examples": num_examples, "num_tokens": num_tokens, "shards": shards}


def build_metadata(tokenizer_fields, max_seq_length, blanks_separate_docs, seed, num_word_pieces, stats,
                   splits, elapsed, **how) -> dict:
  """metadata.json's content (the local builder and the Beam pipeline write the same fields);
  ``how``: how it was built (num_processes, runner)."""
  return dict(
      tokenizer_fields, max_seq_length=max_seq_length, blanks_separate_docs=blanks_separate_docs, seed=seed,
      num_word_pieces=num_word_pieces, num_documents=stats.documents, num_sentences=stats.sentences,
      num_files_read=stats.files_read, skipped_files=stats.files_skipped, splits=splits,
      build_seconds=round(elapsed, 3), **how)


def no_examples_error(sources, stats):
  where = ", ".join(str(s) if not isinstance(s, dict) else f"tfds {s.get('name')}" for s in sources)
  return DataPrepError(f"the corpus ({where}) gave no examples ({stats.files_read} file(s) read, "
                       f"{len(stats.files_skipped)} skipped); pass UTF-8 text, one sentence per line")


def warn_skipped(stats):
  if stats.files_skipped:
    print(f"warning: skipped {len(stats.files_skipped)} file(s) that are binary or not UTF-8: "
          + "; ".join(stats.files_skipped[:5]) + (" ..." if len(stats.files_skipped) > 5 else ""),
          file=sys.stderr)


def eval_shard_count(num_shards, eval_fraction, num_eval_shards=None):
  return num_eval_shards if num_eval_shards is not None else max(1, round(num_shards * eval_fraction))


def prepare(output_dir, vocab_file, corpus_dir, wikipedia_dumps, books_dir, tfds, max_seq_length,
            num_processes, blanks_separate_docs, do_lower_case, strip_accents, num_shards, eval_fraction,
            num_eval_shards=None, openwebtext=None, dump_unit_bytes=units_lib.DUMP_UNIT_BYTES):
  """The checks made before any text is read, for the local builder and the Beam pipeline alike.

  Returns:
    (sources, tokenizer, units): the sources given, the loaded tokenizer and units.list_units.
  """
  sources = [s for s in (corpus_dir, *(wikipedia_dumps or ()), books_dir, tfds, openwebtext) if s]
  _validate(max_seq_length, num_shards, eval_fraction, num_processes, sources, num_eval_shards)
  runtime.check_writable(output_dir, "output directory", directory=True)
  try:
    tokenizer = tokenization.load_tokenizer(vocab_file, do_lower_case, strip_accents)
  except ValueError as e:
    raise DataPrepError(str(e)) from None
  # Fails early on a missing directory or dump, or a multistream index that does not match its dump.
  units = units_lib.list_units(corpus_dir, blanks_separate_docs, wikipedia_dumps, books_dir, tfds, openwebtext,
                               dump_unit_bytes)
  return sources, tokenizer, units


def build_pretraining_dataset(output_dir, vocab_file, corpus_dir=None, wikipedia_dumps=(),
                              books_dir=None, tfds=None, openwebtext=None, max_seq_length=128, num_processes=1,
                              blanks_separate_docs=True, do_lower_case=True, strip_accents=None,
                              seed=0, num_shards=1000, eval_fraction=0.0, num_eval_shards=None,
                              progress=True, chunk_chars=1 << 20, parent_takes_chunks=True,
                              min_bytes_per_worker=MIN_BYTES_PER_WORKER,
                              dump_unit_bytes=units_lib.DUMP_UNIT_BYTES):
  """Builds pre-training TFRecords and ``metadata.json`` in ``output_dir`` (replaced when complete).

  Args:
    output_dir: where ``pretrain_data.tfrecord-{i}-of-{num_shards}`` (and, with eval_fraction > 0,
      ``pretrain_eval.tfrecord-*``) and ``metadata.json`` go.
    vocab_file: WordPiece vocab.txt or SentencePiece .model.
    corpus_dir / wikipedia_dumps / books_dir / tfds / openwebtext: corpus sources (any combination);
      ``tfds`` is a dict of iter_tfds kwargs (name, split, text_key, data_dir, download); ``openwebtext``
      a directory of urlsf_subset*.xz archives or openwebtext.tar.xz.
    max_seq_length, blanks_separate_docs, do_lower_case, strip_accents: as the reference's flags.
    num_processes: processes that clean (dumps), decompress (OpenWebText), tokenize and pack.
    seed: seeds every chunk's random.Random; same seed -> same files, whatever num_processes.
    num_shards: training shards (the reference hard-codes 1000).
    eval_fraction: fraction of documents held out for pre-training eval.
    num_eval_shards: default max(1, round(num_shards * eval_fraction)).
    progress: tqdm bar with word pieces/s on stderr.
    chunk_chars: characters per unit of work.
    parent_takes_chunks: with num_processes > 1 the calling process tokenizes too (False: only the
      workers do, for tests).
    min_bytes_per_worker: when the corpus size is known (corpus_dir only), an extra process is started
      only per this many bytes of text; on a smaller corpus a worker's start-up costs more than it saves.
      0 starts every requested process.
    dump_unit_bytes: compressed bytes per unit of a multistream dump read through its index.

  Returns:
    The metadata dict (also written to ``output_dir/metadata.json``).

  Raises:
    DataPrepError (a ValueError): bad input, one line naming the problem and the fix; or SIGINT / SIGTERM
      stopped the build (in the main thread: the signal is recorded, so a command exits 128 + its number), its
      worker processes and temporary directory gone and ``output_dir`` as it was. A signal while the complete
      output is being renamed into place is only recorded.
  """
  with pool_lib.interrupt_on_stop_signals(functools.partial(_interrupted_error, output_dir)) as interrupts:
    sources, tokenizer, units = prepare(output_dir, vocab_file, corpus_dir, wikipedia_dumps, books_dir, tfds,
                                       max_seq_length, num_processes, blanks_separate_docs, do_lower_case,
                                       strip_accents, num_shards, eval_fraction, num_eval_shards, openwebtext,
                                       dump_unit_bytes)
    if corpus_dir:
      if (num_processes > 1 and min_bytes_per_worker and not (wikipedia_dumps or books_dir or tfds or openwebtext)
          and not any(corpus_lib.is_wikipedia_dump(u.path) for u in units)):
        corpus_bytes = sum(fileio.getsize(u.path) for u in units)
        useful = 1 + corpus_bytes // min_bytes_per_worker
        if useful < num_processes:
          print(f"note: {corpus_bytes / 2**20:.1f} MiB of text: using {useful} process(es), not {num_processes} "
                f"(an extra process pays for its start-up from {min_bytes_per_worker / 2**20:.0f} MiB each)",
                file=sys.stderr)
          num_processes = useful
    num_eval_shards = eval_shard_count(num_shards, eval_fraction, num_eval_shards)
    output_dir = output_dir if fileio.is_remote(output_dir) else os.path.abspath(output_dir)
    stats = corpus_lib.CorpusStats()
    start = time.time()
    pool = None
    try:
      # The old output survives until the new one is complete.
      with runtime.atomic_directory(output_dir, overwrite=True) as tmp_dir:
        try:
          names = {"train": [shard_name(TRAIN_PREFIX, i, num_shards) for i in range(num_shards)]}
          if eval_fraction > 0:
            names["eval"] = [shard_name(EVAL_PREFIX, i, num_eval_shards) for i in range(num_eval_shards)]
          files = _ShardFiles([os.path.join(tmp_dir, name) for split_names in names.values()
                               for name in split_names])
          try:
            writers, first = {}, 0
            for split, split_names in names.items():
              writers[split] = _ShardWriter(tmp_dir, split_names, files, first)
              first += len(split_names)
            tasks = iter_tasks(units, stats, seed, max_seq_length, eval_fraction, chunk_chars)
            if num_processes == 1:
              results = (serialized_payload(tokenizer, *t) for t in tasks)
            else:
              worker = functools.partial(_worker_main, (str(vocab_file), do_lower_case, strip_accents))
              pool = pool_lib.SharedWork(functools.partial(serialized_payload, tokenizer), tasks,
                                         num_processes - 1, worker, parent_takes_chunks)
              results = pool.results()
            num_pieces = _write_results(results, writers, stats, progress)
          except BaseException:
            interrupts.hold()  # a signal now does not cut the clean-up short
            raise
          finally:
            files.close()  # before the directory is published, or removed on an error
          if pool is not None:
            pool.close()
            pool = None
          if writers["train"].num_examples == 0:
            raise no_examples_error(sources, stats)
          if eval_fraction > 0 and writers["eval"].num_examples == 0:  # pre-training would wait on it for ever
            raise DataPrepError(f"--eval-fraction {eval_fraction:g} held out none of the corpus's "
                                f"{stats.documents:,} document(s) (a document goes to it whole, at random); "
                                "raise it, add documents, or build without --eval-fraction")
          warn_skipped(stats)
          splits = {split: split_metadata(TRAIN_PREFIX if split == "train" else EVAL_PREFIX, w.shards(),
                                          w.num_examples, w.num_tokens)
                    for split, w in writers.items()}
          meta = build_metadata(tokenizer_metadata(tokenizer, vocab_file), max_seq_length, blanks_separate_docs,
                                seed, num_pieces, stats, splits, time.time() - start,
                                num_processes=num_processes, runner="local")
          metadata_lib.write_metadata(tmp_dir, meta)
        finally:
          interrupts.hold()  # the temporary directory is published or removed whole
      return meta
    except BaseException:
      if pool is not None:
        pool.close(terminate=True)
      raise


def _interrupted_error(output_dir, number) -> DataPrepError:
  """What a build stopped by a signal says: its output went to a temporary directory, which is removed."""
  return DataPrepError(f"interrupted by signal {number} ({signal.Signals(number).name}); nothing was written to "
                       f"{output_dir}, rerun the command to build it")


def _write_results(results, writers, stats, progress) -> int:
  """Writes every chunk's examples (``ChunkResult``s in corpus order); returns the word pieces counted. The
  progress bar ends its line whatever happens, so that an error is a line of its own."""
  num_pieces = 0
  bar = _progress_bar(progress)
  try:
    for result in results:
      for split, writer in writers.items():
        writer.write(*result.splits[split])
      num_pieces += result.num_pieces
      stats.documents += result.num_documents
      stats.sentences += result.num_sentences
      if bar is not None:
        bar.update(result.num_pieces)
        bar.set_postfix(examples=sum(w.num_examples for w in writers.values()), refresh=False)
  finally:
    if bar is not None:
      bar.close()
  for writer in writers.values():
    writer.close()
  return num_pieces


def _worker_main(init_args, task_q, result_q):
  """A worker process: loads the tokenizer once, then packs tasks until it gets None."""
  pool_lib.serve(task_q, result_q, lambda: _init_worker(*init_args), _process_chunk)


def _progress_bar(enabled):
  if not enabled:
    return None
  from tqdm import tqdm  # pylint: disable=import-outside-toplevel  (only with a progress bar)
  return tqdm(unit="wp", unit_scale=True, desc="word pieces", file=sys.stderr, mininterval=1.0)
