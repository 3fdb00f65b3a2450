"""Pre-training data: packing vs a re-implementation of the reference rules, TFRecords read with the
reference feature spec, determinism, metadata checks, corpus sources and bad input."""

import errno
import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT, require_data, require_module
from electra_tf import tokenization
from electra_tf.pretrain_data import build, corpus, metadata

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "data_prep"))
import build_pretraining_dataset as cli  # pylint: disable=wrong-import-position

tf = require_module("tensorflow")


def _write_corpus(data_dir, directory, num_lines=400, split="valid"):
  with gzip.open(data_dir / "corpus" / "wikitext-2" / f"{split}.raw.gz", "rt", encoding="utf-8") as f:
    lines = f.read().split("\n")[:num_lines]
  directory.mkdir(parents=True, exist_ok=True)
  (directory / "a.txt").write_text("\n".join(lines), encoding="utf-8")
  return lines


def _read_records(path_glob, max_seq_length):
  # The reference's feature spec: FixedLenFeature int64 of length max_seq_length.
  spec = {k: tf.io.FixedLenFeature([max_seq_length], tf.int64)
          for k in ("input_ids", "input_mask", "segment_ids")}
  out = []
  for path in sorted(tf.io.gfile.glob(path_glob)):
    for record in tf.data.TFRecordDataset(path):
      ex = tf.io.parse_single_example(record, spec)
      out.append({k: v.numpy().tolist() for k, v in ex.items()})
  return out


class SpecExampleBuilder:
  """reference_spec.md section 3 written out independently (line-based, like the reference)."""

  def __init__(self, tok, max_len, rng):
    self.tok, self.max_len, self.rng = tok, max_len, rng
    self.sents, self.length, self.target = [], 0, max_len

  def add_line(self, line):
    line = line.strip()
    if not line and self.length != 0:
      return self.create()
    ids = self.tok.convert_tokens_to_ids(self.tok.tokenize(line))
    self.sents.append(ids)
    self.length += len(ids)
    return self.create() if self.length >= self.target else None

  def create(self):
    first_target = 100000 if self.rng.random() < 0.1 else (self.target - 3) // 2
    a, b = [], []
    for s in self.sents:
      if not a or len(a) + len(s) < first_target:
        a += s
      elif not b and len(a) < first_target and self.rng.random() < 0.5:
        a += s
      else:
        b += s
    a = a[:self.max_len - 2]
    b = b[:max(0, self.max_len - len(a) - 3)]
    self.sents, self.length = [], 0
    self.target = self.rng.randint(5, self.max_len) if self.rng.random() < 0.05 else self.max_len
    ids = [101] + a + [102] + (b + [102] if b else [])
    seg = [0] * (len(a) + 2) + [1] * (len(b) + 1 if b else 0)
    pad = self.max_len - len(ids)
    return {"input_ids": ids + [0] * pad, "input_mask": [1] * len(ids) + [0] * pad,
            "segment_ids": seg + [0] * pad}


@pytest.mark.parametrize("max_len", [128, 24])
def test_packing_equals_spec_reimplementation(tmp_path, data_dir, bert_vocab, max_len):
  lines = _write_corpus(data_dir, tmp_path / "corpus")
  meta = build.build_pretraining_dataset(tmp_path / "out", bert_vocab, corpus_dir=tmp_path / "corpus",
                                         max_seq_length=max_len, num_shards=1, seed=7, progress=False)
  got = _read_records(str(tmp_path / "out" / "pretrain_data.tfrecord-*"), max_len)
  # One chunk (the corpus is < 1 MB), so one rng seeded "7:<unit key>:<chunk>" drives the whole file.
  spec = SpecExampleBuilder(tokenization.FullTokenizer(bert_vocab, True), max_len,
                            random.Random("7:text/a.txt:0"))
  expected = [ex for ex in (spec.add_line(l) for l in lines + [""]) if ex]
  assert got == expected
  assert meta["splits"]["train"]["num_examples"] == len(expected)
  assert meta["splits"]["train"]["num_tokens"] == sum(sum(e["input_mask"]) for e in expected)
  n_single = sum(1 for e in expected if 1 not in e["segment_ids"])
  assert 0 < n_single < len(expected)  # both the one- and two-segment layouts occur
  for e in expected:
    n = sum(e["input_mask"])
    ids, seg = e["input_ids"], e["segment_ids"]
    assert ids[0] == 101 and ids[n - 1] == 102 and all(i == 0 for i in ids[n:])
    sep = [i for i in range(n) if ids[i] == 102]
    assert seg[:sep[0] + 1] == [0] * (sep[0] + 1) and all(s == 1 for s in seg[sep[0] + 1:n])


def test_deterministic_for_seed_whatever_num_processes(tmp_path, data_dir, bert_vocab):
  _write_corpus(data_dir, tmp_path / "corpus", num_lines=1500)
  kw = dict(corpus_dir=tmp_path / "corpus", max_seq_length=64, num_shards=3, progress=False,
            chunk_chars=30_000)
  build.build_pretraining_dataset(tmp_path / "p1", bert_vocab, num_processes=1, seed=3, **kw)
  # Only the worker processes tokenize here (the caller would otherwise finish before they start).
  build.build_pretraining_dataset(tmp_path / "p2", bert_vocab, num_processes=3, seed=3,
                                  parent_takes_chunks=False, min_bytes_per_worker=0, **kw)
  build.build_pretraining_dataset(tmp_path / "s4", bert_vocab, num_processes=1, seed=4, **kw)
  names = sorted(n for n in os.listdir(tmp_path / "p1") if n.startswith("pretrain_data"))
  assert names == [f"pretrain_data.tfrecord-{i}-of-3" for i in range(3)]
  read = lambda d: [(d / n).read_bytes() for n in names]
  assert read(tmp_path / "p1") == read(tmp_path / "p2")
  assert read(tmp_path / "p1") != read(tmp_path / "s4")
  assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n or ".old-" in n]


def test_extra_processes_only_for_a_corpus_big_enough_to_pay_for_them(tmp_path, data_dir, bert_vocab, capsys):
  _write_corpus(data_dir, tmp_path / "corpus", num_lines=300)
  corpus_bytes = sum(f.stat().st_size for f in (tmp_path / "corpus").iterdir())
  kw = dict(corpus_dir=tmp_path / "corpus", max_seq_length=64, num_shards=2, progress=False)
  small = build.build_pretraining_dataset(tmp_path / "a", bert_vocab, num_processes=4, **kw)
  assert small["num_processes"] == 1
  assert "using 1 process(es), not 4" in capsys.readouterr().err
  # one extra process per min_bytes_per_worker of text
  two = build.build_pretraining_dataset(tmp_path / "b", bert_vocab, num_processes=4,
                                        min_bytes_per_worker=corpus_bytes, **kw)
  assert two["num_processes"] == 2
  names = sorted(n for n in os.listdir(tmp_path / "a") if n.startswith("pretrain_data"))
  assert [(tmp_path / "a" / n).read_bytes() for n in names] == [(tmp_path / "b" / n).read_bytes() for n in names]


def test_eval_split_metadata_and_reader(tmp_path, data_dir, bert_vocab):
  _write_corpus(data_dir, tmp_path / "corpus", num_lines=1500)
  out = tmp_path / "out"
  meta = build.build_pretraining_dataset(out, bert_vocab, corpus_dir=tmp_path / "corpus",
                                         max_seq_length=64, num_shards=4, eval_fraction=0.2,
                                         progress=False)
  train = _read_records(str(out / "pretrain_data.tfrecord-*"), 64)
  evals = _read_records(str(out / "pretrain_eval.tfrecord-*"), 64)
  assert meta["splits"]["train"]["num_examples"] == len(train)
  assert meta["splits"]["eval"]["num_examples"] == len(evals)
  assert 0.05 < len(evals) / (len(train) + len(evals)) < 0.4
  on_disk = json.loads((out / "metadata.json").read_text())
  assert on_disk["vocab_sha256"] == tokenization.file_checksum(bert_vocab)
  assert on_disk["max_seq_length"] == 64 and on_disk["do_lower_case"] is True

  # Metadata check: passes for the same settings, one clear line for each mismatch.
  glob = str(out / "pretrain_data.tfrecord*")
  assert metadata.check_metadata(glob, bert_vocab, True, 64)["num_word_pieces"] > 0
  with pytest.raises(ValueError, match="max_seq_length 64 but the config has 128"):
    metadata.check_metadata(out, bert_vocab, True, 128)
  with pytest.raises(ValueError, match="do_lower_case=True but the config has do_lower_case=False"):
    metadata.check_metadata(out, bert_vocab, False, 64)
  other = tmp_path / "other_vocab.txt"
  other.write_text(bert_vocab.read_text(encoding="utf-8") + "extra\n", encoding="utf-8")
  with pytest.raises(ValueError, match="differs from the one the data"):
    metadata.check_metadata(out, other, True, 64)
  assert metadata.check_metadata(tmp_path / "corpus", bert_vocab, True, 64) is None
  with pytest.raises(ValueError, match="no metadata.json"):
    metadata.check_metadata(tmp_path / "corpus", bert_vocab, True, 64, require=True)

  from electra_tf.pretrain_data import pretraining_dataset
  ds = pretraining_dataset(glob, 64, batch_size=8, is_training=True, seed=1)
  batch = next(iter(ds))
  assert sorted(batch) == ["input_ids", "input_mask", "segment_ids"]
  assert all(v.dtype == tf.int32 and v.shape == (8, 64) for v in batch.values())
  assert int(tf.reduce_min(batch["input_mask"][:, 0])) == 1
  one_pass = pretraining_dataset(glob, 64, batch_size=8, is_training=False, repeat=False)
  assert sum(1 for _ in one_pass) == len(train) // 8  # drop_remainder
  bad = out / "pretrain_data.tfrecord-9-of-9"
  bad.write_bytes(b"this is not a tfrecord file at all")
  with pytest.raises(ValueError, match="corrupt or incompatible pre-training TFRecord"):
    pretraining_dataset(glob, 64, batch_size=8)
  with pytest.raises(ValueError, match="no pre-training TFRecords match"):
    pretraining_dataset(str(tmp_path / "nothing*"), 64, batch_size=8)


def _cli_error(capsys, argv):
  assert cli.main(argv) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and err[0].startswith("error: "), err
  return err[0]


def test_cli_bad_input(tmp_path, bert_vocab, capsys):
  out = tmp_path / "out"
  base = ["--vocab-file", str(bert_vocab), "--output-dir", str(out), "--no-progress"]
  assert "does not exist" in _cli_error(capsys, base + ["--corpus-dir", str(tmp_path / "missing")])
  empty = tmp_path / "empty"
  empty.mkdir()
  assert "gave no examples" in _cli_error(capsys, base + ["--corpus-dir", str(empty)])
  binary = tmp_path / "binary"
  binary.mkdir()
  (binary / "x.bin").write_bytes(bytes(range(256)) * 10)
  (binary / "latin1.txt").write_bytes("caf\xe9 cr\xe8me\n".encode("latin-1"))
  msg = _cli_error(capsys, base + ["--corpus-dir", str(binary)])
  assert "gave no examples" in msg and "2 skipped" in msg
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\nthe\n", encoding="utf-8")
  good = tmp_path / "good"
  good.mkdir()
  (good / "a.txt").write_text("The cat sat.\nIt was happy.\n\nA new document.\n", encoding="utf-8")
  msg = _cli_error(capsys, ["--vocab-file", str(vocab), "--output-dir", str(out),
                            "--corpus-dir", str(good)])
  assert "[CLS], [SEP], [MASK]" in msg
  assert "at least 5" in _cli_error(capsys, base + ["--corpus-dir", str(good), "--max-seq-length", "4"])
  assert "no corpus given" in _cli_error(capsys, base)
  assert not out.exists() and not [n for n in os.listdir(tmp_path) if ".tmp-" in n]

  # A non-UTF-8 file beside good ones is skipped and counted; the rest is built.
  (good / "z.txt").write_bytes(b"\xff\xfe bad bytes\n")
  assert cli.main(base + ["--corpus-dir", str(good), "--num-shards", "1", "--max-seq-length", "16"]) == 0
  captured = capsys.readouterr()
  assert "skipped 1 file(s)" in captured.err
  meta = json.loads((out / "metadata.json").read_text())
  assert meta["skipped_files"] and meta["splits"]["train"]["num_examples"] == 2


def test_text_reader_follows_reference_rules(tmp_path):
  (tmp_path / "b.txt").write_bytes(b"  s1 \n\ns2\r\n\n\n s3\ns4\n")
  (tmp_path / "a.txt").write_text("first\n", encoding="utf-8")
  docs = list(corpus.iter_text_dir(tmp_path, blanks_separate_docs=True))
  assert docs == [["first"], ["s1"], ["s2"], ["s3", "s4"]]  # sorted files, stripped, blank = boundary
  assert list(corpus.iter_text_dir(tmp_path, blanks_separate_docs=False)) == [
      ["first"], ["s1", "s2", "s3", "s4"]]


def test_wikipedia_dump(tmp_path, data_dir, bert_vocab):
  dump = require_data(data_dir / "wikipedia" / "enwiki-table-markup.xml.bz2", "the Wikipedia dump")
  docs = list(corpus.iter_wikipedia_dump(str(dump)))
  assert len(docs) == 5  # five articles, one document each
  text = " ".join(s for d in docs for s in d)
  for markup in ("{{", "}}", "[[", "]]", "{|", "|-", "<ref", "'''", "=="):
    assert markup not in text, markup
  assert "constructive vote of no confidence" in text.lower()
  assert sum(len(d) for d in docs) > 100 and all(len(s) < 2000 for d in docs for s in d)
  meta = build.build_pretraining_dataset(tmp_path / "out", bert_vocab, wikipedia_dumps=[str(dump)],
                                         num_shards=2, progress=False)
  assert meta["num_documents"] == 5 and meta["splits"]["train"]["num_examples"] > 20


def test_books_dir(tmp_path):
  (tmp_path / "b1.txt").write_text("Chapter one. It was a dark night. Then Smith came home.\n\n"
                                   "He slept.\n", encoding="utf-8")
  sub = tmp_path / "more"
  sub.mkdir()
  (sub / "b2.txt").write_text("Another book starts here! Does it end?\n", encoding="utf-8")
  docs = list(corpus.iter_books(tmp_path))
  assert docs == [["Chapter one.", "It was a dark night.", "Then Smith came home.", "He slept."],
                  ["Another book starts here!", "Does it end?"]]


def test_tfds_corpus_through_tensorflow_datasets_mocking(tmp_path, bert_vocab):
  """``iter_tfds`` and a build from it, on tensorflow-datasets' offline mock of the Wikipedia set: one
  record = one document of its text's sentences; a wrong text key names the features there are."""
  tfds = require_module("tensorflow_datasets")
  name = "wikipedia/20230601.en"
  with tfds.testing.mock_data(num_examples=12):
    texts = [r["text"].decode("utf-8") for r in tfds.as_numpy(tfds.load(name, split="train"))]
    stats = corpus.CorpusStats()
    docs = list(corpus.iter_tfds(name, stats=stats))
    meta = build.build_pretraining_dataset(tmp_path / "out", bert_vocab, tfds={"name": name}, max_seq_length=32,
                                           num_shards=1, progress=False)
    with pytest.raises(build.DataPrepError, match=r"has no feature 'body' \(it has text, title\); pass --tfds-text-key"):
      list(corpus.iter_tfds(name, text_key="body"))
  expected = [corpus.text_to_document(t) for t in texts]
  assert len(texts) == 12 and docs == [d for d in expected if d] and docs
  assert stats.files_read == 1
  assert meta["num_documents"] == len(docs) and meta["num_sentences"] == sum(map(len, docs))
  assert meta["num_files_read"] == 1 and meta["splits"]["train"]["num_examples"] > 0


def test_a_new_build_replaces_the_old_one_whole(tmp_path, data_dir, bert_vocab):
  """Building into an existing output directory: afterwards it holds exactly what a fresh build of the
  new arguments holds (no old shard, eval split or metadata left); a failed build leaves the old one."""
  _write_corpus(data_dir, tmp_path / "corpus", num_lines=300)
  kw = dict(corpus_dir=tmp_path / "corpus", max_seq_length=32, progress=False)
  out = tmp_path / "out"
  build.build_pretraining_dataset(out, bert_vocab, num_shards=3, eval_fraction=0.2, seed=1, **kw)
  assert len(os.listdir(out)) == 3 + 1 + 1  # train shards, one eval shard, metadata.json
  new = build.build_pretraining_dataset(out, bert_vocab, num_shards=2, seed=2, **kw)
  fresh = build.build_pretraining_dataset(tmp_path / "fresh", bert_vocab, num_shards=2, seed=2, **kw)
  assert sorted(os.listdir(out)) == sorted(os.listdir(tmp_path / "fresh")) == [
      "metadata.json", "pretrain_data.tfrecord-0-of-2", "pretrain_data.tfrecord-1-of-2"]
  for n in os.listdir(out):
    if n != "metadata.json":
      assert (out / n).read_bytes() == (tmp_path / "fresh" / n).read_bytes(), n
  assert json.loads((out / "metadata.json").read_text())["seed"] == 2 and new["seed"] == 2
  assert new["splits"] == fresh["splits"]
  before = {n: (out / n).read_bytes() for n in os.listdir(out)}
  (tmp_path / "empty").mkdir()
  with pytest.raises(build.DataPrepError):
    build.build_pretraining_dataset(out, bert_vocab, corpus_dir=tmp_path / "empty", num_shards=2, progress=False)
  assert {n: (out / n).read_bytes() for n in os.listdir(out)} == before
  assert sorted(os.listdir(tmp_path)) == ["corpus", "empty", "fresh", "out"]  # no temporary left behind


def _live_processes_of_group(pgid) -> dict:
  """{pid: command line} of the processes of process group ``pgid`` that have not ended (zombies read as ended)."""
  found = {}
  for name in os.listdir("/proc"):
    if name.isdigit():
      try:
        with open(f"/proc/{name}/stat", encoding="utf-8") as f:
          state, _, group = f.read().rpartition(")")[2].split()[:3]
        with open(f"/proc/{name}/cmdline", "rb") as f:
          cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
      except OSError:
        continue
      if int(group) == pgid and state != "Z":
        found[int(name)] = cmdline
  return found


@pytest.mark.parametrize("sig, whole_group", [(signal.SIGINT, True), (signal.SIGINT, False), (signal.SIGTERM, True)],
                         ids=["SIGINT-to-the-group", "SIGINT-to-the-command", "SIGTERM-to-the-group"])
def test_a_stop_signal_ends_a_parallel_build_in_one_line_leaving_nothing_behind(tmp_path, data_dir, bert_vocab,
                                                                                 sig, whole_group):
  """A stop signal while a 2-process build runs (Ctrl-C in a terminal reaches the whole process group; ``kill``
  only the command): exit status 128 + the signal soon after, one ``error:`` line and no traceback, no worker
  process left and nothing written. The last book is a named pipe the test opens but never writes: the build
  waits there, its worker started and the earlier books queued for it, until the signal comes."""
  with gzip.open(data_dir / "corpus" / "wikitext-2" / "valid.raw.gz", "rt", encoding="utf-8") as f:
    lines = f.read().split("\n")[:1500]
  books = tmp_path / "books"
  books.mkdir()
  for i in range(3):  # about 150 KB each: more than a pipe holds, so tasks wait in the queue's feeder thread
    (books / f"book{i}.txt").write_text("\n".join(lines[i * 500:(i + 1) * 500]), encoding="utf-8")
  os.mkfifo(books / "zz_pipe.txt")
  out = tmp_path / "out"
  proc = subprocess.Popen(
      [sys.executable, str(REPO_ROOT / "data_prep" / "build_pretraining_dataset.py"), "--books-dir", str(books),
       "--vocab-file", str(bert_vocab), "--output-dir", str(out), "--num-shards", "2", "--no-progress",
       "--num-processes", "2"],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
  pipe = None
  try:
    deadline = time.monotonic() + 120
    while pipe is None:  # opens once the build reads the pipe: its worker process has been started by then
      try:
        pipe = os.open(books / "zz_pipe.txt", os.O_WRONLY | os.O_NONBLOCK)
      except OSError as e:
        if e.errno != errno.ENXIO or proc.poll() is not None or time.monotonic() > deadline:
          os.killpg(proc.pid, signal.SIGKILL)
          raise AssertionError(f"the build did not reach the pipe: {proc.communicate()[1][-3000:]}") from None
        time.sleep(0.05)
    workers = [pid for pid, cmd in _live_processes_of_group(proc.pid).items() if "spawn_main" in cmd]
    assert len(workers) == 1, _live_processes_of_group(proc.pid)
    if whole_group:
      os.killpg(proc.pid, sig)
    else:
      os.kill(proc.pid, sig)
    _, stderr = proc.communicate(timeout=30)
  finally:
    if pipe is not None:
      os.close(pipe)
    if proc.poll() is None:
      os.killpg(proc.pid, signal.SIGKILL)
      proc.wait()
  assert proc.returncode == 128 + sig, stderr[-3000:]
  assert "Traceback" not in stderr, stderr[-3000:]
  err = stderr.strip().splitlines()
  assert len(err) == 1 and err[0].startswith(f"error: interrupted by signal {int(sig)} ({sig.name}); nothing was "
                                             f"written to {out}"), err
  for _ in range(100):  # the worker and multiprocessing's resource tracker end with the command
    left = _live_processes_of_group(proc.pid)
    if not left:
      break
    time.sleep(0.1)
  for pid in left:
    os.kill(pid, signal.SIGKILL)
  assert not left
  assert sorted(os.listdir(tmp_path)) == ["books"]  # no output, no temporary directory
