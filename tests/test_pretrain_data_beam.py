"""The Apache Beam pipeline (DirectRunner) against the local builder: for a seed, the same multiset of
examples in each split, shards of the requested count, the same metadata, data that --verify passes, every
source, and a failed pipeline that leaves nothing that looks complete.

The DirectRunner runs in multi-process mode with 2 workers, as the pipeline runs on a cluster (each worker
a separate process with its own tokenizer); the tensorflow-datasets mock patches this process only, so that
source runs in-process. Runtime on 2 cores: about 40 s, plus 35 s for the slow test (each worker process
starts TensorFlow).
"""

import bz2
import collections
import gzip
import json
import os
import shutil
import sys

import pytest

from conftest import require_data, require_module

beam = require_module("apache_beam")
tf = require_module("tensorflow")

from electra_tf.pretrain_data import beam_pipeline, build, verify  # pylint: disable=wrong-import-position

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "data_prep"))
import build_pretraining_dataset as cli  # pylint: disable=wrong-import-position

MULTI_PROCESS = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
IN_PROCESS = ["--direct_num_workers=1", "--direct_running_mode=in_memory"]


def _examples(directory, prefix):
  """Multiset of the serialized examples of one split, and the shard file names."""
  names = sorted(n for n in os.listdir(directory) if n.startswith(prefix))
  counts = collections.Counter()
  for n in names:
    counts.update(r.numpy() for r in tf.data.TFRecordDataset(os.path.join(directory, n)))
  return counts, names


def _same_metadata(beam_meta, local_meta):
  """Equal but for timing, how it ran and each shard's content (sharding may differ); per split the
  same shard files, pattern, example and token counts, and record counts summing to the examples."""
  differ = {"build_seconds", "runner", "num_processes", "splits"}
  assert set(beam_meta) == set(local_meta)
  assert {k: v for k, v in beam_meta.items() if k not in differ} == \
         {k: v for k, v in local_meta.items() if k not in differ}
  assert beam_meta["splits"].keys() == local_meta["splits"].keys()
  for split, want in local_meta["splits"].items():
    got = beam_meta["splits"][split]
    assert {k: got[k] for k in got if k != "shards"} == {k: want[k] for k in want if k != "shards"}
    assert sorted(got["shards"]) == sorted(want["shards"])
    assert sum(s["num_records"] for s in got["shards"].values()) == want["num_examples"]


def _corpus(data_dir, root):
  """Real text in every file source: two WikiText-2 files and a non-UTF-8 file (skipped), the Wikipedia
  dump fixture, and a books directory with a sub-directory."""
  text = root / "text"
  text.mkdir(parents=True)
  with gzip.open(data_dir / "corpus" / "wikitext-2" / "valid.raw.gz", "rt", encoding="utf-8") as f:
    lines = f.read().split("\n")
  (text / "a.txt").write_text("\n".join(lines[:1200]), encoding="utf-8")
  (text / "b.txt").write_text("\n".join(lines[1200:1800]), encoding="utf-8")
  (text / "latin1.txt").write_bytes("caf\xe9 cr\xe8me\n".encode("latin-1"))
  books = root / "books"
  (books / "shelf").mkdir(parents=True)
  (books / "one.txt").write_text(" ".join(lines[1800:1900]), encoding="utf-8")
  (books / "shelf" / "two.txt").write_text("\n".join(lines[1900:2000]), encoding="utf-8")
  dump = data_dir / "wikipedia" / "enwiki-table-markup.xml.bz2"
  return dict(corpus_dir=str(text), books_dir=str(books),
              wikipedia_dumps=[str(dump)] if dump.exists() else [])


def test_beam_writes_the_local_builders_examples(tmp_path, data_dir, bert_vocab, capsys, monkeypatch):
  """Every file source at once, with a held-out split, through the command's --runner flag."""
  sources = _corpus(data_dir, tmp_path / "corpus")
  assert sources["wikipedia_dumps"], "the Wikipedia dump fixture is part of the test data"
  # Several chunks per file, so that chunk keys within a unit matter.
  settings = dict(max_seq_length=48, num_shards=3, eval_fraction=0.15, seed=11, chunk_chars=20_000)
  local = build.build_pretraining_dataset(tmp_path / "local", bert_vocab, progress=False, **sources,
                                          **settings)
  argv = ["--vocab-file", str(bert_vocab), "--output-dir", str(tmp_path / "beam"), "--corpus-dir",
          sources["corpus_dir"], "--books-dir", sources["books_dir"], "--wikipedia-dump",
          sources["wikipedia_dumps"][0], "--max-seq-length", "48", "--num-shards", "3", "--eval-fraction",
          "0.15", "--seed", "11", "--runner", "DirectRunner", "--", *MULTI_PROCESS]
  original = beam_pipeline.build_with_beam
  monkeypatch.setattr(beam_pipeline, "build_with_beam", lambda *a, **kw: original(*a, chunk_chars=20_000, **kw))
  assert cli.main(argv) == 0
  err = capsys.readouterr().err
  assert "skipped 1 file(s)" in err and "latin1.txt" in err

  beam_dir = tmp_path / "beam"
  for split, prefix in (("train", build.TRAIN_PREFIX), ("eval", build.EVAL_PREFIX)):
    got, got_names = _examples(beam_dir, prefix)
    want, want_names = _examples(tmp_path / "local", prefix)
    assert got == want, split
    assert got_names == want_names
    assert sum(want.values()) == local["splits"][split]["num_examples"] > 0
  assert len(_examples(beam_dir, build.TRAIN_PREFIX)[1]) == 3
  beam_meta = json.loads((beam_dir / "metadata.json").read_text())
  _same_metadata(beam_meta, json.loads((tmp_path / "local" / "metadata.json").read_text()))
  assert beam_meta["runner"] == "DirectRunner" and beam_meta["num_processes"] == 2
  assert beam_meta["num_files_read"] == 2 + 1 + 2 and len(beam_meta["skipped_files"]) == 1
  # The examples are spread over the shards, and every shard checks out against metadata.json.
  assert min(s["num_records"] for s in beam_meta["splits"]["train"]["shards"].values()) > 0
  report = verify.verify_pretraining_data(str(beam_dir))
  assert not report.bad and report.exact
  assert cli.main(["--verify", "--output-dir", str(beam_dir), "--no-progress"]) == 0
  assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n]


def test_beam_reads_tensorflow_datasets(tmp_path, bert_vocab):
  """The tfds source (tensorflow-datasets' offline mock, so in this process): the same examples as the
  local builder from the same records. The mock's records are one short sentence each, so here the seeded
  draw that matters is which documents are held out."""
  tfds = require_module("tensorflow_datasets")
  source = {"name": "wikipedia/20230601.en", "split": "train", "text_key": "text"}
  settings = dict(max_seq_length=32, num_shards=2, seed=3, tfds=source, eval_fraction=0.4)
  with tfds.testing.mock_data(num_examples=16):
    local = build.build_pretraining_dataset(tmp_path / "local", bert_vocab, progress=False, **settings)
    meta = beam_pipeline.build_with_beam(tmp_path / "beam", bert_vocab, "DirectRunner", IN_PROCESS,
                                         **settings)
    # A reader's error on a worker is its one line, without the runner's "[while running ...]".
    with pytest.raises(build.DataPrepError, match=r"has no feature 'body' \(it has text, title\); pass "
                       r"--tfds-text-key$"):
      beam_pipeline.build_with_beam(tmp_path / "bad", bert_vocab, "DirectRunner", IN_PROCESS,
                                    **dict(settings, tfds=dict(source, text_key="body")))
  assert sorted(os.listdir(tmp_path)) == ["beam", "local"]  # nothing of the failed build
  for split, prefix in (("train", build.TRAIN_PREFIX), ("eval", build.EVAL_PREFIX)):
    got, want = _examples(tmp_path / "beam", prefix)[0], _examples(tmp_path / "local", prefix)[0]
    assert got == want and sum(got.values()) == local["splits"][split]["num_examples"] > 0, split
  _same_metadata(meta, local)


def test_beam_builds_into_an_object_store(tmp_path, bert_vocab):
  """Corpus and output on a remote file system (TensorFlow's ram://, in this process): the temporary
  directory sits beside the output there, a previous output is replaced whole, nothing else is left."""
  from electra_tf import fileio  # pylint: disable=import-outside-toplevel
  root = f"ram://electra-beam-{os.getpid()}-{id(tmp_path)}"
  corpus = fileio.join(root, "corpus")
  tf.io.gfile.makedirs(corpus)
  text = "".join(f"The {i}th sentence of the corpus is here.\nIt has a second line.\n\n" for i in range(80))
  with tf.io.gfile.GFile(fileio.join(corpus, "a.txt"), "w") as f:
    f.write(text)
  out = fileio.join(root, "out")
  tf.io.gfile.makedirs(out)
  with tf.io.gfile.GFile(fileio.join(out, "pretrain_data.tfrecord-0-of-9"), "w") as f:
    f.write("an old shard")
  settings = dict(max_seq_length=16, num_shards=2, eval_fraction=0.2, seed=2)
  meta = beam_pipeline.build_with_beam(out, bert_vocab, "DirectRunner", IN_PROCESS, corpus_dir=corpus,
                                       **settings)
  (tmp_path / "corpus").mkdir()
  (tmp_path / "corpus" / "a.txt").write_text(text, encoding="utf-8")
  local = build.build_pretraining_dataset(tmp_path / "local", bert_vocab, corpus_dir=tmp_path / "corpus",
                                          progress=False, **settings)
  assert sorted(tf.io.gfile.listdir(root)) == ["corpus", "out"]
  assert sorted(tf.io.gfile.listdir(out)) == sorted(os.listdir(tmp_path / "local"))
  for prefix in (build.TRAIN_PREFIX, build.EVAL_PREFIX):
    got = collections.Counter(r.numpy() for r in tf.data.TFRecordDataset(tf.io.gfile.glob(f"{out}/{prefix}*")))
    assert got == _examples(tmp_path / "local", prefix)[0] and got
  _same_metadata(meta, local)
  assert not verify.verify_pretraining_data(out).bad


def test_num_processes_maps_to_direct_runner_workers_unless_options_say_otherwise():
  from apache_beam.options.pipeline_options import DirectOptions  # pylint: disable=import-outside-toplevel
  view = lambda *a: beam_pipeline.pipeline_options(*a).view_as(DirectOptions)
  assert (view("DirectRunner", [], 2).direct_num_workers, view("DirectRunner", [], 2).direct_running_mode) == (
      2, "multi_processing")
  assert view("DirectRunner", ["--direct_num_workers=3", "--direct_running_mode=multi_threading"], 2
              ).direct_running_mode == "multi_threading"
  assert view("DirectRunner", ["--direct_num_workers=3"], 2).direct_num_workers == 3
  assert view("DirectRunner", [], 1).direct_num_workers == 1
  assert beam_pipeline.pipeline_options("FlinkRunner", ["--flink_master=host:8081"], 4).get_all_options()[
      "flink_master"] == "host:8081"


def test_dataflow_needs_cloud_storage_paths(tmp_path, bert_vocab):
  (tmp_path / "corpus").mkdir()
  (tmp_path / "corpus" / "a.txt").write_text("One sentence.\n", encoding="utf-8")
  with pytest.raises(build.DataPrepError, match=r"DataflowRunner: its workers cannot read or write .*/out on "
                     r"this machine; put the corpus and --output-dir in Cloud Storage \(gs://...\)$"):
    beam_pipeline.build_with_beam(tmp_path / "out", bert_vocab, "DataflowRunner", ["--project=p"],
                                  corpus_dir=tmp_path / "corpus")
  assert sorted(os.listdir(tmp_path)) == ["corpus"]


@pytest.mark.slow  # about 35 s: two worker processes start TensorFlow before the reader fails
def test_a_failed_pipeline_leaves_no_output(tmp_path, data_dir, bert_vocab, capsys):
  """A truncated dump fails on a worker: the command prints the reader's one line and exits 2, the old
  output stays as it was and no temporary directory is left."""
  dump = require_data(data_dir / "wikipedia" / "enwiki-table-markup.xml.bz2", "the Wikipedia dump")
  cut = tmp_path / "cut.xml.bz2"
  cut.write_bytes(dump.read_bytes()[:len(dump.read_bytes()) // 2])
  out = tmp_path / "out"
  out.mkdir()
  (out / "metadata.json").write_text("{}")  # stands for a previous build
  argv = ["--vocab-file", str(bert_vocab), "--output-dir", str(out), "--wikipedia-dump", str(cut),
          "--num-shards", "2"]
  assert cli.main(argv + ["--runner", "DirectRunner", "--", *MULTI_PROCESS]) == 2
  err = [l for l in capsys.readouterr().err.strip().splitlines() if l.startswith("error:")]
  assert len(err) == 1 and "is truncated or corrupt" in err[0] and err[0].endswith(".xml.bz2 file"), err
  assert os.listdir(out) == ["metadata.json"] and (out / "metadata.json").read_text() == "{}"
  assert sorted(os.listdir(tmp_path)) == ["cut.xml.bz2", "out"]
  # Beam options without --runner are refused before anything runs.
  shutil.rmtree(out)
  assert cli.main(argv + ["--", "--direct_num_workers=2"]) == 2
  assert "need --runner" in capsys.readouterr().err and not out.exists()
