"""Corpus builds end to end: Wikipedia dump, OpenWebText and books paths, 1 and 2 processes, the Beam
DirectRunner, and the projected wall time of a full Wikipedia + BooksCorpus build from the per-core rates.

  nice -n 10 python benchmarks/corpus_build.py [--articles 420] [--skip-beam]

Inputs, all real text written to a temporary directory:
* dump: ``--articles`` distinct articles (benchmarks/data_prep.py's excerpt of the test dump's 5 real
  pages under new titles and ids), as one ``.xml.bz2`` read whole, and re-cut as a multistream dump with
  its index beside it (10 of these long pages per bzip2 stream: about the bytes of the 100 average pages
  per stream that Wikimedia publishes);
* OpenWebText: WikiText-2 train's articles as ``.txt`` pages in ``urlsf_subset*.xz`` tar + xz archives,
  the quickstart's layout (one document per file);
* books: WikiText-2 train's articles as one book file each.

Each build is timed from the library call to the finished output directory (spawned workers start inside
the time; none of it imports TensorFlow; the DirectRunner's row follows an untimed pipeline on a few lines,
since a process's first pays Beam's own start-up), wall and CPU (this process and its joined children,
``getrusage``); rates are per wall second and per CPU-second. Outputs of 1 and 2 processes are compared
byte for byte, Beam's multiset of examples against the local builder's.

The projection divides the corpus sizes (English Wikipedia: 3.0 B word pieces; BooksCorpus: 0.8 B
words, at WikiText-2's word pieces per word) by the measured word pieces per CPU-second of the 1-process
dump and books builds, then by the cores (16; 50 Dataflow workers x 4 vCPUs at the DirectRunner's CPU
cost per word piece), and gives the one-process bound of a dump read whole (its XML split). It is a
projection from measured per-core rates on a 2-core machine, not a measurement at that scale.
"""

import argparse
import bz2
import collections
import gzip
import inspect
import io
import os
import pathlib
import re
import resource
import shutil
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
# --code DIR: time another checkout's electra_tf (e.g. `git archive COMMIT electra_tf | tar -x -C DIR`);
# code from before the multistream index gets only the runs its builder supports (dump whole, books).
OTHER_CODE = sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv else None
if OTHER_CODE:
  sys.path.insert(0, OTHER_CODE)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# pylint: disable=g-import-not-at-top,wrong-import-position
from electra_tf.pretrain_data import build  # before data_prep, which puts this checkout first on the path
import data_prep

WIKI_PIECES = 3.0e9  # English Wikipedia, 6.8 M articles, in BERT word pieces
BOOKS_WORDS = 0.8e9  # BooksCorpus (BERT paper)


def write_multistream(xml, directory, name, pages_per_stream=100):
  """``xml`` (a whole dump's text) as a multistream .xml.bz2 and its -index.txt.bz2 in ``directory``."""
  first, last = xml.index("<page>"), xml.rindex("</page>") + len("</page>")
  pages = re.findall(r"<page>.*?</page>", xml[first:last], flags=re.DOTALL)
  streams = [xml[:first]] + ["".join(pages[i:i + pages_per_stream])
                             for i in range(0, len(pages), pages_per_stream)] + [xml[last:]]
  blocks, index, offset = [], [], 0
  for s, text in enumerate(streams):
    block = bz2.compress(text.encode("utf-8"))
    if 0 < s < len(streams) - 1:
      for page in re.findall(r"<page>.*?</page>", text, flags=re.DOTALL):
        page_id = re.search(r"</ns>\s*<id>(\d+)</id>", page).group(1)
        index.append(f"{offset}:{page_id}:{re.search(r'<title>(.*?)</title>', page).group(1)}\n")
    blocks.append(block)
    offset += len(block)
  path = directory / f"{name}-multistream.xml.bz2"
  path.write_bytes(b"".join(blocks))
  (directory / f"{name}-multistream-index.txt.bz2").write_bytes(bz2.compress("".join(index).encode("utf-8")))
  return path


def wikitext2_articles(data):
  """WikiText-2 train split into its articles (a ` = Title = ` line starts each)."""
  with gzip.open(data / "corpus" / "wikitext-2" / "train.raw.gz", "rt", encoding="utf-8") as f:
    text = f.read()
  return [a for a in re.split(r"\n(?= = [^=].* = \n)", text) if a.strip()]


def write_openwebtext(articles, directory, per_archive=60):
  directory.mkdir(parents=True)
  for a in range(0, len(articles), per_archive):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
      for i, article in enumerate(articles[a:a + per_archive]):
        data = article.encode("utf-8")
        info = tarfile.TarInfo(f"{a + i:07d}-{hash(article) & 0xffffffff:08x}.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (directory / f"urlsf_subset00-{a // per_archive + 1}_data.xz").write_bytes(buf.getvalue())
  return directory


def _cpu():
  own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
  return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _examples(directory):
  import tensorflow as tf  # pylint: disable=import-outside-toplevel  (spawned workers re-import this module)
  counts = collections.Counter()
  for p in sorted(pathlib.Path(directory).glob("pretrain_*.tfrecord*")):
    counts.update(r.numpy() for r in tf.data.TFRecordDataset(str(p)))
  return counts


def _same(tmp, a, b):
  return all((tmp / a / n.name).read_bytes() == n.read_bytes() for n in (tmp / b).glob("pretrain_*"))


def timed(label, out, mb, run):
  wall, cpu = time.perf_counter(), _cpu()
  meta = run(out)
  wall, cpu = time.perf_counter() - wall, _cpu() - cpu
  docs, wp = meta["num_documents"], meta["num_word_pieces"]
  row = dict(label=label, docs=docs, wp=wp, wall=wall, cpu=cpu, mb=mb)
  print(f"| {label} | {docs:,} | {wp:,} | {wall:.1f} | {cpu:.1f} | {docs / wall:,.1f} / {docs / cpu:,.1f} | "
        f"{mb / wall:.2f} / {mb / cpu:.2f} | {wp / wall:,.0f} / {wp / cpu:,.0f} |", flush=True)
  return row


def project(rows, books_wp_per_word, split_rate=None):
  """Full Wikipedia + BooksCorpus from the measured rates: the work per word piece is the 1-process
  builds' CPU-seconds (a worker's start-up, the 2-process CPU minus the 1-process CPU, is a fixed cost
  that hours of work make negligible); N cores do N times that work, except what one process does alone:
  splitting a dump read whole (``split_rate``, MB of XML per CPU-second). On a loaded machine wall-clock
  speed-ups say more about the other jobs than about the builder, so none is used."""
  by = {r["label"]: r for r in rows}
  rate = lambda label: by[label]["wp"] / by[label]["cpu"]
  books_pieces = BOOKS_WORDS * books_wp_per_word
  wiki, books = rate("dump, 1 process"), rate("books, 1 process")
  startup = by["dump, 2 processes"]["cpu"] - by["dump, 1 process"]["cpu"]
  print(f"\nmeasured per CPU-second (1 process): dump {wiki:,.0f} wp, books {books:,.0f} wp; a second "
        f"process adds {startup:.1f} CPU-s (its start-up); BooksCorpus taken as {books_pieces / 1e9:.2f} B "
        f"word pieces ({books_wp_per_word:.3f} wp per word, WikiText-2)")
  if "multistream dump + index, 2 processes" not in by:  # the cleanup runs in the reading process
    print(f"projection: the reading process cleans every article: {WIKI_PIECES / wiki / 3600:,.1f} h for "
          "Wikipedia whatever the cores")
    return
  cpu_hours = (WIKI_PIECES / wiki + books_pieces / books) / 3600
  print(f"projection (from measured per-core rates, not measured at scale): {cpu_hours:,.2f} CPU-hours for "
        f"Wikipedia + BooksCorpus; one 16-core machine, --num-processes 16: {cpu_hours / 16:,.2f} h with "
        "the multistream index")
  if split_rate:
    mb_per_wp = by["dump, 1 process"]["mb"] / by["dump, 1 process"]["wp"]
    print(f"  without the index one process splits the dump's XML at {split_rate:.1f} MB per CPU-second: "
          f"{WIKI_PIECES * mb_per_wp / split_rate / 3600:,.2f} h at least for Wikipedia")
  beam = "multistream dump, DirectRunner 2 workers"
  if beam in by:
    overhead = (by[beam]["cpu"] - 2 * startup) / by["dump, 1 process"]["cpu"]
    print(f"  50 Dataflow workers x 4 vCPUs at the DirectRunner's CPU per word piece ({overhead:.2f}x the "
          f"local builder's, two worker start-ups taken out): {cpu_hours * overhead / 200:,.2f} h")


def split_rate(dump, mb):
  """MB of XML per CPU-second of splitting a whole dump into article wikitext (the reading process)."""
  from electra_tf.pretrain_data import wikipedia  # pylint: disable=import-outside-toplevel
  start = time.process_time()
  for _ in wikipedia.iter_articles(str(dump)):
    pass
  return mb / (time.process_time() - start)


def main():
  root = pathlib.Path(__file__).resolve().parent.parent
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--data-dir", default=os.environ.get("ELECTRA_TEST_DATA", root.parent / "shared" / "data"))
  p.add_argument("--articles", type=int, default=420)
  p.add_argument("--skip-beam", action="store_true")
  p.add_argument("--code", default=None, help="a directory holding another version's electra_tf package")
  args = p.parse_args()
  data = pathlib.Path(args.data_dir)
  vocab = data / "vocab" / "bert-base-uncased-vocab.txt"
  print(f"electra_tf from {pathlib.Path(build.__file__).parent.parent}")
  tmp = pathlib.Path(tempfile.mkdtemp(prefix="electra_bench_corpus_"))
  try:
    dump = tmp / "enwiki-excerpt.xml.bz2"
    data_prep.make_dump_excerpt(data / "wikipedia" / "enwiki-table-markup.xml.bz2", dump, args.articles)
    xml = bz2.decompress(dump.read_bytes()).decode("utf-8")
    (tmp / "ms").mkdir()
    # 10 of these long pages per stream: about the bytes of Wikimedia's 100 average pages per stream.
    multistream = write_multistream(xml, tmp / "ms", "enwiki-excerpt", pages_per_stream=10)
    dump_mb = len(xml.encode("utf-8")) / 1e6
    articles = wikitext2_articles(data)
    owt = write_openwebtext(articles, tmp / "openwebtext")
    (tmp / "books").mkdir()
    for i, article in enumerate(articles):
      (tmp / "books" / f"book{i:04d}.txt").write_text(article, encoding="utf-8")
    text_mb = sum(len(a.encode("utf-8")) for a in articles) / 1e6
    words = sum(len(a.split()) for a in articles)
    build.build_pretraining_dataset(tmp / "warm", vocab, books_dir=tmp / "books", num_shards=1,
                                    progress=False)  # tokenizer graph traced: not timed
    print(f"dump excerpt: {args.articles} articles, {dump_mb:.1f} MB of XML; OpenWebText layout: "
          f"{len(articles)} pages in {len(list(owt.iterdir()))} archives, {text_mb:.1f} MB of text")
    print("\n| run | documents | word pieces | wall s | CPU s | documents/s (wall / CPU) | "
          "MB/s (wall / CPU) | word pieces/s (wall / CPU) |")
    print("|---|---|---|---|---|---|---|---|")
    kw = dict(num_shards=10, seed=0, progress=False)
    rows = []
    for procs in (1, 2):
      rows.append(timed(f"dump, {procs} process{'es' if procs > 1 else ''}", tmp / f"dump{procs}", dump_mb,
                        lambda out, n=procs: build.build_pretraining_dataset(
                            out, vocab, wikipedia_dumps=[str(dump)], num_processes=n, **kw)))
    if "dump_unit_bytes" not in inspect.signature(build.build_pretraining_dataset).parameters:
      # --code from before the multistream index: the reading process cleaned every article
      rows.append(timed("books, 1 process", tmp / "books1", text_mb, lambda out: build.build_pretraining_dataset(
          out, vocab, books_dir=tmp / "books", **kw)))
      print(f"\nbyte-identical 1 vs 2 processes: dump {_same(tmp, 'dump1', 'dump2')}")
      return project(rows, rows[-1]["wp"] / words)
    rows.append(timed("multistream dump + index, 2 processes", tmp / "ms2", dump_mb,
                      lambda out: build.build_pretraining_dataset(
                          out, vocab, wikipedia_dumps=[str(multistream)], num_processes=2,
                          dump_unit_bytes=64 << 10, **kw)))
    if not args.skip_beam:
      from electra_tf.pretrain_data import beam_pipeline  # pylint: disable=import-outside-toplevel
      beam_kw = {k: v for k, v in kw.items() if k != "progress"}
      # The process's first pipeline pays Beam's own start-up (seconds): run one on a few lines, not timed.
      (tmp / "beam_warm_text").mkdir()
      (tmp / "beam_warm_text" / "a.txt").write_text("\n".join(articles[:20]), encoding="utf-8")
      beam_pipeline.build_with_beam(tmp / "beam_warm", vocab, "DirectRunner", [
          "--direct_num_workers=2", "--direct_running_mode=multi_processing"], corpus_dir=tmp / "beam_warm_text",
                                    **beam_kw)
      rows.append(timed("multistream dump, DirectRunner 2 workers", tmp / "beam", dump_mb,
                        lambda out: beam_pipeline.build_with_beam(
                            out, vocab, "DirectRunner", ["--direct_num_workers=2",
                                                         "--direct_running_mode=multi_processing"],
                            wikipedia_dumps=[str(multistream)], dump_unit_bytes=64 << 10, **beam_kw)))
    for procs in (1, 2):
      rows.append(timed(f"OpenWebText, {procs} process{'es' if procs > 1 else ''}", tmp / f"owt{procs}",
                        text_mb, lambda out, n=procs: build.build_pretraining_dataset(
                            out, vocab, openwebtext=str(owt), num_processes=n, **kw)))
    rows.append(timed("books, 1 process", tmp / "books1", text_mb,
                      lambda out: build.build_pretraining_dataset(out, vocab, books_dir=tmp / "books", **kw)))
    print(f"\nbyte-identical 1 vs 2 processes: dump {_same(tmp, 'dump1', 'dump2')}, OpenWebText "
          f"{_same(tmp, 'owt1', 'owt2')}")
    if not args.skip_beam:
      print(f"DirectRunner multiset equals the local multistream build: {_examples(tmp / 'beam') == _examples(tmp / 'ms2')}")
    project(rows, rows[-1]["wp"] / words, split_rate(dump, dump_mb))
  finally:
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
  main()
