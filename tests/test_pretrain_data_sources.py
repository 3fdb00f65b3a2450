"""Corpus sources at scale: a dump cleaned in worker processes (byte-identical output whatever the process
count), a multistream dump read through its index (the same documents, Beam's multiset equal to the local
builder's), OpenWebText archives in the quickstart's layout (streamed, one document per .txt), and the bad
inputs of each as one line. Every fixture is written here from real text in ../shared/data."""

import bz2
import collections
import gzip
import io
import json
import re
import tarfile

import pytest

from conftest import require_module
from _data_prep_testlib import benchmark_module, dump, one_error_line  # pylint: disable=unused-import
from electra_tf.errors import DataPrepError
from electra_tf.pretrain_data import build, corpus, openwebtext, units

tf = require_module("tensorflow")

BASE = ["--num-shards", "2", "--no-progress"]


def _files(directory):
  return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.name != "metadata.json"}


def _examples(directory):
  counts = collections.Counter()
  for p in directory.glob("pretrain_*.tfrecord-*"):
    counts.update(r.numpy() for r in tf.data.TFRecordDataset(str(p)))
  return counts


def write_multistream(dump, directory):
  """The real dump re-cut the way Wikimedia publishes multistream dumps (benchmarks/corpus_build.py's
  writer): a header stream, streams of 2 pages, a closing stream, and the index of ``offset:id:title``."""
  corpus_build = benchmark_module("corpus_build")
  xml = bz2.decompress(dump.read_bytes()).decode("utf-8")
  path = corpus_build.write_multistream(xml, directory, "enwiki-20171029-pages-articles", pages_per_stream=2)
  return path, directory / "enwiki-20171029-pages-articles-multistream-index.txt.bz2"


def test_dump_cleaned_in_workers_gives_the_same_files(tmp_path, dump, bert_vocab):
  """The parent only splits the XML; with 2 processes a worker cleans every chunk (the parent takes none
  here), and the files equal the 1-process build byte for byte."""
  kw = dict(wikipedia_dumps=[str(dump)], num_shards=3, eval_fraction=0.5, progress=False, chunk_chars=20_000)
  one = build.build_pretraining_dataset(tmp_path / "one", bert_vocab, num_processes=1, **kw)
  two = build.build_pretraining_dataset(tmp_path / "two", bert_vocab, num_processes=2,
                                        parent_takes_chunks=False, **kw)
  assert _files(tmp_path / "one") == _files(tmp_path / "two")
  assert one["num_documents"] == two["num_documents"] == 5 and one["num_sentences"] == two["num_sentences"]
  assert one["num_word_pieces"] == two["num_word_pieces"] > 10_000


def test_multistream_dump_is_read_by_stream_ranges(tmp_path, dump, bert_vocab):
  path, index = write_multistream(dump, tmp_path)
  listed = units.list_units(wikipedia_dumps=[str(path)], dump_unit_bytes=1)
  assert [u.kind for u in listed] == ["wikipedia-range"] * 3  # 5 pages, 2 per stream: one unit per stream
  assert listed[-1].span[1] == path.stat().st_size  # the last range takes the closing stream
  by_ranges = [d for u in listed for d in units.iter_unit_documents(u)]
  assert by_ranges == list(corpus.iter_wikipedia_dump(str(path))) == list(corpus.iter_wikipedia_dump(str(dump)))
  assert [u.kind for u in units.list_units(wikipedia_dumps=[str(path)])] == ["wikipedia-range"]

  kw = dict(wikipedia_dumps=[str(path)], num_shards=2, progress=False, dump_unit_bytes=1)
  one = build.build_pretraining_dataset(tmp_path / "one", bert_vocab, **kw)
  build.build_pretraining_dataset(tmp_path / "two", bert_vocab, num_processes=2, parent_takes_chunks=False, **kw)
  assert _files(tmp_path / "one") == _files(tmp_path / "two")
  assert one["num_documents"] == 5 and one["num_files_read"] == 1

  require_module("apache_beam")
  from electra_tf.pretrain_data import beam_pipeline  # pylint: disable=import-outside-toplevel
  meta = beam_pipeline.build_with_beam(tmp_path / "beam", bert_vocab, "DirectRunner",
                                       ["--direct_num_workers=1", "--direct_running_mode=in_memory"],
                                       **{k: v for k, v in kw.items() if k != "progress"})
  assert _examples(tmp_path / "beam") == _examples(tmp_path / "one")
  assert (meta["num_documents"], meta["num_sentences"], meta["num_word_pieces"]) == \
         (one["num_documents"], one["num_sentences"], one["num_word_pieces"])


def test_multistream_index_that_does_not_match_is_one_line(tmp_path, dump, bert_vocab, capsys):
  path, index = write_multistream(dump, tmp_path)
  lines = bz2.decompress(index.read_bytes()).decode("utf-8").splitlines(keepends=True)
  out = tmp_path / "out"
  argv = ["--wikipedia-dump", str(path), "--vocab-file", str(bert_vocab), "--output-dir", str(out)] + BASE

  # Offsets of another dump: no bzip2 stream starts there (found while listing, before any text is read).
  index.write_bytes(bz2.compress("".join(re.sub(r"^(\d+)", lambda m: str(int(m.group(1)) + 7), line)
                                         for line in lines).encode("utf-8")))
  line = one_error_line(capsys, argv)
  assert "multistream index" in line and str(path) in line and "does not match" in line, line
  assert "no bzip2 stream starts at offset" in line and "move the index away" in line, line

  # The right offsets but another dump's page list: whoever reads the range says so, a worker process too.
  index.write_bytes(bz2.compress("".join(lines[1:]).encode("utf-8")))
  line = one_error_line(capsys, argv)
  assert "does not match" in line and "hold 5 pages, the index lists 4" in line, line
  with pytest.raises(DataPrepError, match=r"does not match .*bytes \d+-\d+ hold 2 pages, the index lists 1"):
    build.build_pretraining_dataset(out, bert_vocab, wikipedia_dumps=[str(path)], num_shards=1, progress=False,
                                    num_processes=2, parent_takes_chunks=False, dump_unit_bytes=1)
  assert not out.exists()

  index.write_bytes(b"not bzip2 at all")
  line = one_error_line(capsys, argv)
  assert "does not match" in line and "does not decompress" in line, line


# ---------------------------------------------------------------------------------------------------
# OpenWebText.


def _paragraphs(data_dir, n):
  with gzip.open(data_dir / "corpus" / "wikitext-2" / "valid.raw.gz", "rt", encoding="utf-8") as f:
    lines = [line.strip() for line in f if line.strip() and not line.strip().startswith("=")]
  return lines[:n]


def _tar_xz(members):
  """A tar + xz archive (bytes) of ``members``: (name, bytes)."""
  buf = io.BytesIO()
  with tarfile.open(fileobj=buf, mode="w:xz") as tar:
    for name, data in members:
      info = tarfile.TarInfo(name)
      info.size = len(data)
      tar.addfile(info, io.BytesIO(data))
  return buf.getvalue()


def write_openwebtext(data_dir, root, archives=3, docs_per_archive=4):
  """openwebtext/ as openwebtext.tar.xz unpacks: urlsf_subset00-N_data.xz archives of .txt pages (real
  WikiText-2 paragraphs, blank lines between some, as web pages have them); and the tarball itself."""
  paras = iter(_paragraphs(data_dir, archives * docs_per_archive * 3))
  owt_dir = root / "openwebtext"
  owt_dir.mkdir(parents=True)
  expected, tarball_members = [], []
  for a in range(archives):
    members, docs = [], []
    for d in range(docs_per_archive):
      lines = [next(paras), "", "  " + next(paras) + "  ", next(paras)]
      members.append((f"{a:07d}{d:03d}-{'%032x' % (a * 100 + d)}.txt", "\n".join(lines).encode("utf-8")))
      docs.append([line.strip() for line in lines if line.strip()])
    name = f"urlsf_subset00-{a + 1}_data.xz"
    data = _tar_xz(members)
    (owt_dir / name).write_bytes(data)
    tarball_members.append((f"openwebtext/{name}", data))
    expected += docs
  (root / "openwebtext.tar.xz").write_bytes(_tar_xz(tarball_members))
  return owt_dir, root / "openwebtext.tar.xz", expected


def test_openwebtext_archives_and_tarball(tmp_path, data_dir, bert_vocab):
  owt_dir, tarball, expected = write_openwebtext(data_dir, tmp_path / "data")
  listed = units.list_units(openwebtext=str(owt_dir))
  assert [u.key for u in listed] == [f"openwebtext/urlsf_subset00-{a}_data.xz" for a in (1, 2, 3)]
  assert [d for u in listed for d in units.iter_unit_documents(u)] == expected
  whole = units.list_units(openwebtext=str(tarball))
  assert [u.kind for u in whole] == ["openwebtext-tar"]
  assert [d for u in whole for d in units.iter_unit_documents(u)] == expected

  kw = dict(num_shards=2, eval_fraction=0.25, progress=False)
  one = build.build_pretraining_dataset(tmp_path / "one", bert_vocab, openwebtext=str(owt_dir), **kw)
  build.build_pretraining_dataset(tmp_path / "two", bert_vocab, openwebtext=str(owt_dir), num_processes=2,
                                  parent_takes_chunks=False, **kw)
  # The tarball's archives are keyed by their names, as in the directory: the same files.
  build.build_pretraining_dataset(tmp_path / "tar", bert_vocab, openwebtext=str(tarball), **kw)
  assert _files(tmp_path / "one") == _files(tmp_path / "two") == _files(tmp_path / "tar")
  assert one["num_documents"] == len(expected) == 12 and one["num_files_read"] == 3
  assert one["num_sentences"] == sum(map(len, expected))
  meta = json.loads((tmp_path / "one" / "metadata.json").read_text())
  assert meta["splits"]["eval"]["num_examples"] > 0

  require_module("apache_beam")
  from electra_tf.pretrain_data import beam_pipeline  # pylint: disable=import-outside-toplevel
  beam_pipeline.build_with_beam(tmp_path / "beam", bert_vocab, "DirectRunner",
                                ["--direct_num_workers=1", "--direct_running_mode=in_memory"],
                                openwebtext=str(owt_dir), **{k: v for k, v in kw.items() if k != "progress"})
  assert _examples(tmp_path / "beam") == _examples(tmp_path / "one")


def test_openwebtext_bad_inputs_are_one_line(tmp_path, data_dir, bert_vocab, capsys):
  owt_dir, tarball, _ = write_openwebtext(data_dir, tmp_path / "data", archives=2, docs_per_archive=2)
  out = tmp_path / "out"
  argv = ["--openwebtext-dir", str(owt_dir), "--vocab-file", str(bert_vocab), "--output-dir", str(out)] + BASE

  second = owt_dir / "urlsf_subset00-2_data.xz"
  good = second.read_bytes()
  second.write_bytes(good[:len(good) // 2])
  for extra in ([], ["--num-processes", "2"]):
    line = one_error_line(capsys, argv + extra)
    assert str(second) in line and "truncated or corrupt" in line and "download openwebtext.tar.xz again" in line
  assert not out.exists() and not list(tmp_path.glob(".out*"))

  second.write_bytes(_tar_xz([("README", b"no documents here\n")]))
  line = one_error_line(capsys, argv)
  assert str(second) in line and "holds no .txt documents" in line, line

  empty = tmp_path / "empty"
  empty.mkdir()
  line = one_error_line(capsys, argv[:1] + [str(empty)] + argv[2:])
  assert "holds no .xz archives" in line, line
  cut = tmp_path / "openwebtext.tar.xz"
  cut.write_bytes(tarball.read_bytes()[:2000])
  line = one_error_line(capsys, argv[:1] + [str(cut)] + argv[2:])
  assert str(cut) in line and "truncated or corrupt" in line, line
  with pytest.raises(DataPrepError, match="does not exist"):
    openwebtext.list_sources(tmp_path / "missing")


def test_negative_eval_shards_is_one_line(tmp_path, data_dir, bert_vocab, capsys):
  corpus_dir = tmp_path / "corpus"
  corpus_dir.mkdir()
  (corpus_dir / "a.txt").write_text("\n".join(_paragraphs(data_dir, 20)) + "\n", encoding="utf-8")
  argv = ["--corpus-dir", str(corpus_dir), "--vocab-file", str(bert_vocab), "--output-dir",
          str(tmp_path / "out"), "--eval-fraction", "0.1"] + BASE
  for bad in ("-1", "0"):
    line = one_error_line(capsys, argv + ["--num-eval-shards", bad])
    assert f"--num-eval-shards is {bad}; use 1 or more" in line, line
  assert not (tmp_path / "out").exists()
