"""Data-prep throughput on WikiText-2 train (2.30 M BERT word pieces): tokenize + pack + write.

  python benchmarks/data_prep.py [--data-dir ../shared/data] [--repeat-corpus 4]

Prints word pieces/s for (1) the reference-style pure-Python tokenizer alone (our FullTokenizer is the
reference's algorithm), (2) ``batch_ids`` (what the builder tokenizes with) and the tf-text graph's
``tf_batch_ids``, checking both against the pure-Python ids on every line, (3) the whole build with 1 and 2
processes, and (--prefix-mib) the first N MiB of train with 1 and 2. Times the library call (TensorFlow is
imported for the graph only, after the builds: the builder does not use it, and spawned workers re-import
this module). "2 processes" is `--num-processes 2` as users run it: below 8 MiB of text per process the
builder starts fewer (a worker's start-up costs more than it saves); "2 processes, forced" starts the worker
anyway (min_bytes_per_worker=0).
--repeat-corpus N also builds from N copies. Each build line also gives its ratio to a fixed figure for the
reference's builder (REFERENCE_SECONDS, not measured in the run), raw and scaled to this machine's speed;
benchmarks/reference_builder.py measures the reference's command in the same run.

  python benchmarks/data_prep.py --beam [--repeat-corpus 1]

measures the Apache Beam pipeline (--runner DirectRunner) against the local builder on WikiText-2 train
(N copies as N files): MB of text/s and examples/s of the local builder (1 process) and of the DirectRunner
in-process (1 worker) and multi-process (2 workers), each timed from the library call to the finished
output directory (Beam's worker processes start inside that time), and checks that each Beam
output holds the local builder's multiset of examples.

  python benchmarks/data_prep.py --wikipedia [--articles 105]

measures the Wikipedia dump path instead: a dump excerpt of N distinct articles (the 5 pages of
$ELECTRA_TEST_DATA/wikipedia/enwiki-table-markup.xml.bz2 repeated under new titles and ids, bzip2 again)
built as `build_data --wikipedia-dump` builds it, with 1 and 2 processes: wall time, CPU time of this
process and its (joined) workers, articles/s and word pieces/s of both, then a cProfile of the 1-process
build summarised by stage (XML + bzip2, wikitext cleanup, sentence split, tokenize + pack, write; the
cleanup runs inside process_payload, where chunks are packed). On a loaded machine the CPU-time rates are
the figure to compare; wall time minus
CPU time is time spent waiting (for a core, a worker or I/O).
"""

import argparse
import bz2
import cProfile
import gzip
import pstats
import re
import resource
import os
import pathlib
import shutil
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# pylint: disable=g-import-not-at-top,wrong-import-position
from electra_tf import tokenization
from electra_tf.pretrain_data import build

# A fixed figure, not measured by this script: the reference's build_pretraining_dataset.py on WikiText-2 train
# on a 2-core machine (2026-11-23). The "scaled" ratio scales its word pieces/s by this run's pure-Python
# tokenizer speed over REFERENCE_TOKENIZER_WPS, that tokenizer's speed on an idle 2-core machine the same day.
REFERENCE_SECONDS = 24.5
REFERENCE_TOKENIZER_WPS = 126_000


def make_dump_excerpt(source, destination, num_articles):
  """Writes a .xml.bz2 dump of ``num_articles`` pages: the pages of ``source`` in turn, copy k of a page
  titled "T" renamed "T (k)" with page id k * 10**8 + its id, so that every article is distinct."""
  with bz2.open(source, "rt", encoding="utf-8") as f:
    xml = f.read()
  first, last = xml.index("<page>"), xml.rindex("</page>") + len("</page>")
  pages = re.findall(r"<page>.*?</page>", xml[first:last], flags=re.DOTALL)
  out = [xml[:first]]
  for i in range(num_articles):
    k, page = divmod(i, len(pages))
    page = pages[page]
    if k:
      page = re.sub(r"<title>(.*?)</title>", lambda m: f"<title>{m.group(1)} ({k})</title>", page, count=1)
      page = re.sub(r"(</ns>\s*<id>)(\d+)(</id>)", lambda m: f"{m.group(1)}{k * 10**8 + int(m.group(2))}"
                    f"{m.group(3)}", page, count=1)
    out.append(page if i == 0 else "\n  " + page)
  out.append(xml[last:])
  with bz2.open(destination, "wt", encoding="utf-8") as f:
    f.write("".join(out))


def _cpu_seconds():
  """User + system CPU seconds of this process and of its children that have been waited for."""
  own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
  return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# Stages of the dump path: (label, file suffix, function name); cumulative seconds of each in the profile.
_STAGES = [
    ("whole build", "pretrain_data/build.py", "build_pretraining_dataset"),
    ("dump split into pages (XML + bzip2)", "pretrain_data/wikipedia.py", "iter_articles"),
    ("wikitext -> text (wikitext.wikitext_to_text)", "pretrain_data/wikitext.py", "wikitext_to_text"),
    ("sentence split (blingfire)", "pretrain_data/corpus.py", "text_to_document"),
    ("tokenize + pack (process_chunk)", "pretrain_data/build.py", "process_chunk"),
    ("write TFRecords (_ShardWriter.write)", "pretrain_data/build.py", "write"),
    ("shard checksums (_ShardWriter.shards)", "pretrain_data/build.py", "shards"),
]


def _stage_seconds(stats):
  out = {}
  for label, suffix, name in _STAGES:
    out[label] = sum(v[3] for (file, _, fn), v in stats.stats.items() if fn == name and file.endswith(suffix))
  return out


def _time_stages(dump, num_articles, num_pieces):
  """CPU seconds of the dump reader's stages, each run alone over the whole excerpt, no profiler."""
  import xml.etree.ElementTree as ET  # pylint: disable=import-outside-toplevel
  from electra_tf.pretrain_data import corpus  # pylint: disable=import-outside-toplevel
  rows, t = [], time.process_time()
  texts = []
  with bz2.open(dump, "rb") as f:
    for _, elem in ET.iterparse(f, events=("end",)):
      if elem.tag.rsplit("}", 1)[-1] == "text":
        texts.append(elem.text or "")
  rows.append(("bzip2 + XML (ElementTree.iterparse)", time.process_time() - t))
  t = time.process_time()
  plain = [corpus.wikitext_to_text(text) for text in texts]
  rows.append(("wikitext_to_text (regular expressions; benchmarks/wikitext_cleanup.py compares)",
               time.process_time() - t))
  t = time.process_time()
  docs = [corpus.text_to_document(p) for p in plain]
  rows.append(("sentence split (text_to_document)", time.process_time() - t))
  t = time.process_time()
  list(corpus.iter_wikipedia_dump(str(dump)))
  reader = time.process_time() - t
  rows.append(("the whole reader (iter_wikipedia_dump)", reader))
  print(f"\nstages alone, CPU seconds for the {len(texts)} articles ({sum(map(len, docs))} sentences); the "
        f"reader alone runs at {num_articles / reader:.2f} articles/s, {num_pieces / reader:,.0f} wp/s:")
  for label, secs in rows:
    print(f"  {label:<56} {secs:7.2f} s")


def wikipedia_main(data, vocab, num_articles, profile_lines):
  """The dump path: see the module docstring."""
  source = data / "wikipedia" / "enwiki-table-markup.xml.bz2"
  tmp = pathlib.Path(tempfile.mkdtemp(prefix="electra_bench_wiki_"))
  try:
    dump = tmp / f"enwiki-excerpt-{num_articles}.xml.bz2"
    make_dump_excerpt(source, dump, num_articles)
    print(f"dump excerpt: {num_articles} articles, {dump.stat().st_size / 2**20:.2f} MiB bzip2 "
          f"(from {source.name})")
    build.build_pretraining_dataset(tmp / "warm", vocab, wikipedia_dumps=[str(source)], num_shards=1,
                                    progress=False)  # tokenizer graph traced, imports done: not timed
    outputs = {}
    for procs in (1, 2):
      out = tmp / f"out_{procs}"
      cpu, wall = _cpu_seconds(), time.perf_counter()
      meta = build.build_pretraining_dataset(out, vocab, wikipedia_dumps=[str(dump)], num_processes=procs,
                                             num_shards=10, seed=0, progress=False)
      wall, cpu = time.perf_counter() - wall, _cpu_seconds() - cpu
      docs, wp = meta["num_documents"], meta["num_word_pieces"]
      print(f"{procs} process(es): {docs} articles, {wp:,} wp, "
            f"{meta['splits']['train']['num_examples']:,} examples; wall {wall:.1f} s = {docs / wall:.2f} "
            f"articles/s, {wp / wall:,.0f} wp/s; CPU {cpu:.1f} s = {docs / cpu:.2f} articles/s, "
            f"{wp / cpu:,.0f} wp/s; CPU / wall {cpu / wall:.2f} (cores busy on average, of {procs} asked)")
      outputs[procs] = [f.read_bytes() for f in sorted(out.glob("pretrain_data*"))]
    print(f"outputs of 1 and 2 processes byte-identical: {outputs[1] == outputs[2]}")

    _time_stages(dump, meta["num_documents"], meta["num_word_pieces"])
    profiler = cProfile.Profile(time.process_time)  # CPU seconds: other jobs' load does not count
    cpu = _cpu_seconds()
    profiler.enable()
    build.build_pretraining_dataset(tmp / "out_prof", vocab, wikipedia_dumps=[str(dump)], num_shards=10,
                                    seed=0, progress=False)
    profiler.disable()
    cpu = _cpu_seconds() - cpu
    stats = pstats.Stats(profiler)
    print(f"\ncProfile of the 1-process build ({cpu:.1f} s CPU under the profiler, whose per-call clock "
          "reads inflate it: read the shares), cumulative CPU seconds:")
    stages = _stage_seconds(stats)
    whole = stages[_STAGES[0][0]] or 1.0
    for label, secs in stages.items():
      print(f"  {label:<52} {secs:7.2f} s  {100 * secs / whole:5.1f}%")
    if profile_lines:
      stats.sort_stats("cumulative").print_stats(profile_lines)
  finally:
    shutil.rmtree(tmp, ignore_errors=True)


def _example_multiset(directory):
  import collections  # pylint: disable=import-outside-toplevel
  import tensorflow as tf  # pylint: disable=import-outside-toplevel  (spawned workers re-import this module)
  counts = collections.Counter()
  for path in sorted(pathlib.Path(directory).glob("pretrain_*.tfrecord*")):
    counts.update((path.name.split(".")[0], r.numpy()) for r in tf.data.TFRecordDataset(str(path)))
  return counts


def beam_main(data, vocab, repeat):
  """DirectRunner vs the local builder: see the module docstring."""
  from electra_tf.pretrain_data import beam_pipeline  # pylint: disable=import-outside-toplevel
  tmp = pathlib.Path(tempfile.mkdtemp(prefix="electra_bench_beam_"))
  try:
    (tmp / "corpus").mkdir()
    with gzip.open(data / "corpus" / "wikitext-2" / "train.raw.gz", "rb") as f:
      text = f.read()
    for i in range(repeat):
      (tmp / "corpus" / f"train{i}.txt").write_bytes(text)
    mb = repeat * len(text) / 1e6
    kw = dict(corpus_dir=tmp / "corpus", num_shards=100, seed=0)
    build.build_pretraining_dataset(tmp / "warm", vocab, progress=False, **kw)  # imports, graph: not timed
    runs = [("local builder, 1 process", None, None),
            ("DirectRunner, in-process (1 worker)", "in_memory", 1),
            ("DirectRunner, multi-process (2 workers)", "multi_processing", 2)]
    reference = None
    print(f"WikiText-2 train x{repeat}: {mb:.1f} MB of text, {repeat} file(s), 1 MiB chunks")
    for label, mode, workers in runs:
      out = tmp / f"out_{mode}"
      t, cpu = time.perf_counter(), _cpu_seconds()
      if mode is None:
        meta = build.build_pretraining_dataset(out, vocab, progress=False, **kw)
      else:
        meta = beam_pipeline.build_with_beam(out, vocab, "DirectRunner", [
            f"--direct_num_workers={workers}", f"--direct_running_mode={mode}"], **kw)
      secs, cpu = time.perf_counter() - t, _cpu_seconds() - cpu
      n = meta["splits"]["train"]["num_examples"]
      examples = _example_multiset(out)
      reference = examples if reference is None else reference
      print(f"{label}: {meta['num_word_pieces']:,} wp, {n:,} examples in {secs:.2f} s = {mb / secs:.2f} MB/s, "
            f"{n / secs:,.0f} examples/s, {meta['num_word_pieces'] / secs:,.0f} wp/s; CPU {cpu:.1f} s "
            f"(this process and its joined children) = {mb / cpu:.2f} MB per CPU-second; "
            f"same multiset of examples as the local builder: {examples == reference}")
  finally:
    shutil.rmtree(tmp, ignore_errors=True)


def main():
  root = pathlib.Path(__file__).resolve().parent.parent
  p = argparse.ArgumentParser()
  p.add_argument("--data-dir", default=os.environ.get("ELECTRA_TEST_DATA", root.parent / "shared" / "data"))
  p.add_argument("--repeat-corpus", type=int, default=4)
  p.add_argument("--prefix-mib", default="2.5,5",
                 help="also build the first N MiB of train (comma-separated) with 1 and 2 processes")
  p.add_argument("--wikipedia", action="store_true", help="measure the Wikipedia dump path instead")
  p.add_argument("--beam", action="store_true", help="the Beam DirectRunner vs the local builder instead")
  p.add_argument("--articles", type=int, default=105, help="articles in the --wikipedia dump excerpt")
  p.add_argument("--profile-lines", type=int, default=0,
                 help="with --wikipedia: also print this many top cumulative cProfile lines")
  args = p.parse_args()
  data = pathlib.Path(args.data_dir)
  if args.beam:
    return beam_main(data, data / "vocab" / "bert-base-uncased-vocab.txt", args.repeat_corpus)
  if args.wikipedia:
    return wikipedia_main(data, data / "vocab" / "bert-base-uncased-vocab.txt", args.articles,
                          args.profile_lines)
  vocab = data / "vocab" / "bert-base-uncased-vocab.txt"
  with gzip.open(data / "corpus" / "wikitext-2" / "train.raw.gz", "rt", encoding="utf-8") as f:
    text = f.read()
  lines = text.split("\n")
  tmp = pathlib.Path(tempfile.mkdtemp(prefix="electra_bench_"))
  try:
    (tmp / "corpus").mkdir()
    (tmp / "corpus" / "train.txt").write_text(text, encoding="utf-8")

    tok = tokenization.FullTokenizer(vocab, do_lower_case=True)
    t = time.perf_counter()
    # The uncached per-character steps (the reference's algorithm): the machine-speed yardstick. tokenize
    # itself caches words now and is ~7x faster (benchmarks/tokenizer.py).
    slow = [tok.convert_tokens_to_ids(tok._tokenize_per_char(l)) for l in lines]  # pylint: disable=protected-access
    slow_s = time.perf_counter() - t
    n = sum(len(x) for x in slow)
    print(f"reference-style pure-Python tokenizer: {n:,} word pieces in {slow_s:.2f} s = "
          f"{n / slow_s:,.0f} wp/s")
    t = time.perf_counter()
    flat, splits = tok.batch_ids(lines)
    fast_s = time.perf_counter() - t
    same = all(flat[splits[i]:splits[i + 1]].tolist() == slow[i] for i in range(len(lines)))
    print(f"batch_ids (pure Python and NumPy, word cache empty at the start): {fast_s:.2f} s = "
          f"{n / fast_s:,.0f} wp/s ({n / fast_s / (n / slow_s):.1f}x); ids identical on all {len(lines):,} lines: "
          f"{same}")
    ref_wps = n / REFERENCE_SECONDS
    same_run_ref_wps = ref_wps * (n / slow_s) / REFERENCE_TOKENIZER_WPS
    print(f"reference builder: {ref_wps:,.0f} wp/s (fixed, not measured here); scaled to this run's machine speed: "
          f"{same_run_ref_wps:,.0f} wp/s")
    outputs = {}
    runs = [(1, None), (2, None), (2, 0)]
    for procs, min_bytes, corpus_dir, label in [(p, m, "corpus", "x1") for p, m in runs] + (
        [(p, m, "big", f"x{args.repeat_corpus}") for p, m in runs] if args.repeat_corpus > 1 else []):
      if corpus_dir == "big" and not (tmp / "big").exists():
        (tmp / "big").mkdir()
        for i in range(args.repeat_corpus):
          shutil.copy(tmp / "corpus" / "train.txt", tmp / "big" / f"train{i}.txt")
      out = tmp / f"out_{procs}_{min_bytes}_{label}"
      kw = {} if min_bytes is None else {"min_bytes_per_worker": min_bytes}
      t = time.perf_counter()
      meta = build.build_pretraining_dataset(out, vocab, corpus_dir=tmp / corpus_dir,
                                             num_processes=procs, num_shards=100, seed=0,
                                             progress=False, **kw)
      secs = time.perf_counter() - t
      wps = meta["num_word_pieces"] / secs
      how = f"{procs} process(es)" + (", forced" if min_bytes == 0 else "") + (
          f" (ran {meta['num_processes']})" if meta["num_processes"] != procs else "")
      print(f"full build, WikiText-2 train {label}, {how}: "
            f"{meta['num_word_pieces']:,} wp, {meta['splits']['train']['num_examples']:,} examples in "
            f"{secs:.2f} s = {wps:,.0f} wp/s ({wps / ref_wps:.1f}x the reference's {ref_wps:,.0f} wp/s; "
            f"{wps / same_run_ref_wps:.1f}x scaled)")
      outputs[(procs, min_bytes, label)] = [f.read_bytes() for f in sorted(out.glob("pretrain_data*"))]
    for label in sorted({k[2] for k in outputs}):
      same = all(outputs[(p, m, label)] == outputs[(1, None, label)] for p, m in runs)
      print(f"{label}: outputs of every run byte-identical: {same}")
    # Where a second process starts to pay (build.MIN_BYTES_PER_WORKER): the first N MiB of train, forced.
    for mib in [float(x) for x in args.prefix_mib.split(",") if x]:
      prefix, size = [], 0
      for line in lines:
        size += len(line.encode("utf-8")) + 1
        if size > mib * 2**20:
          break
        prefix.append(line)
      (tmp / f"prefix{mib}").mkdir()
      (tmp / f"prefix{mib}" / "train.txt").write_text("\n".join(prefix), encoding="utf-8")
      secs = {}
      for procs in (1, 2):
        t = time.perf_counter()
        build.build_pretraining_dataset(tmp / f"out_prefix{mib}_{procs}", vocab, corpus_dir=tmp / f"prefix{mib}",
                                        num_processes=procs, num_shards=100, seed=0, progress=False,
                                        min_bytes_per_worker=0)
        secs[procs] = time.perf_counter() - t
      print(f"first {mib} MiB of train: 1 process {secs[1]:.2f} s, 2 processes (forced) {secs[2]:.2f} s")
    tok.tf_batch_ids(lines[:10])  # build + trace the graph once
    t = time.perf_counter()
    graph_flat, graph_splits = tok.tf_batch_ids(lines)
    graph_s = time.perf_counter() - t
    same = graph_flat.tolist() == flat.tolist() and graph_splits.tolist() == splits.tolist()
    print(f"tf_batch_ids (the tf-text graph, both cores): {graph_s:.2f} s = {n / graph_s:,.0f} wp/s; "
          f"ids identical: {same}")
  finally:
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
  main()
