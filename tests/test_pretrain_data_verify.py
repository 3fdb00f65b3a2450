"""Corrupt pre-training data is caught where it lies: per-shard counts and checksums in metadata.json, the
data tool's --verify mode, pre-training naming the bad shard, and the opt-in skip_bad_records."""

import gzip
import json
import os
import shutil
import struct
import sys

import pytest

from conftest import require_module
import _pretraining_testlib as lib
from electra_tf import tokenization
from electra_tf.pretrain_data import build, dataset, verify

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "data_prep"))
import build_pretraining_dataset as cli  # pylint: disable=wrong-import-position

tf = require_module("tensorflow")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LEN = 32
BAD_SHARD = "pretrain_data.tfrecord-1-of-2"


@pytest.fixture(scope="module")
def built(tmp_path_factory, data_dir, bert_vocab):
  """WikiText-2 valid through the real builder: 2 training shards and 1 held-out shard of length 32."""
  root = tmp_path_factory.mktemp("verify")
  with gzip.open(data_dir / "corpus" / "wikitext-2" / "valid.raw.gz", "rt", encoding="utf-8") as f:
    lines = f.read().split("\n")[:1200]
  (root / "corpus").mkdir()
  (root / "corpus" / "a.txt").write_text("\n".join(lines), encoding="utf-8")
  build.build_pretraining_dataset(root / "pretrain_tfrecords", bert_vocab, corpus_dir=root / "corpus",
                                  max_seq_length=MAX_LEN, num_shards=2, eval_fraction=0.1, progress=False)
  return root / "pretrain_tfrecords"


@pytest.fixture
def data(built, tmp_path):
  """A copy of the built data to damage."""
  shutil.copytree(built, tmp_path / "pretrain_tfrecords")
  return tmp_path / "pretrain_tfrecords"


def _records(path):
  return [r.numpy() for r in tf.data.TFRecordDataset(str(path))]


def _offsets(path):
  """Byte offset of each record (TFRecord framing: 8-byte length, 4-byte CRC, data, 4-byte CRC)."""
  data, offsets, pos = path.read_bytes(), [], 0
  while pos < len(data):
    offsets.append(pos)
    pos += 16 + struct.unpack("<Q", data[pos:pos + 8])[0]
  return offsets


def _cut_mid_record(path, good):
  """Keeps ``good`` whole records, then half of the next one."""
  offsets = _offsets(path)
  path.write_bytes(path.read_bytes()[:(offsets[good] + offsets[good + 1]) // 2])


def _flip_a_byte(path, record):
  raw = bytearray(path.read_bytes())
  raw[_offsets(path)[record] + 20] ^= 0xFF
  path.write_bytes(bytes(raw))


def _example(length):
  feature = lambda v: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
  return tf.train.Example(features=tf.train.Features(feature={
      k: feature([1] * length) for k in ("input_ids", "input_mask", "segment_ids")})).SerializeToString()


def test_metadata_records_each_shards_count_and_checksum(built, bert_vocab):
  meta = json.loads((built / "metadata.json").read_text())
  assert meta["format_version"] == 3
  for split, prefix in (("train", "pretrain_data"), ("eval", "pretrain_eval")):
    shards = meta["splits"][split]["shards"]
    assert sorted(shards) == sorted(n for n in os.listdir(built) if n.startswith(prefix))
    for name, info in shards.items():
      assert info["num_records"] == len(_records(built / name)) > 0
      assert info["num_bytes"] == len((built / name).read_bytes())
      assert info["sha256"] == tokenization.file_checksum(built / name)
    assert sum(s["num_records"] for s in shards.values()) == meta["splits"][split]["num_examples"]
  report = verify.verify_pretraining_data(built)
  assert not report.bad and report.exact and len(report.shards) == 3
  assert sum(s.num_records for s in report.shards) == sum(
      meta["splits"][s]["num_examples"] for s in ("train", "eval"))
  assert "record counts and SHA-256 match metadata.json" in report.summary()


def test_verify_names_the_shard_and_record_cut_mid_record(data):
  _cut_mid_record(data / BAD_SHARD, good=3)
  report = verify.verify_pretraining_data(data)
  assert [(os.path.basename(s.path), s.record, s.num_records) for s in report.bad] == [(BAD_SHARD, 3, 3)]
  assert report.bad[0].problem.startswith("unreadable (truncated record at ")
  with pytest.raises(verify.DataPrepError) as e:
    report.raise_if_bad()
  assert str(e.value).startswith(f"corrupt pre-training data: {data / BAD_SHARD}, record 3: unreadable")
  assert "skip_bad_records" in str(e.value) and "\n" not in str(e.value)


def test_verify_finds_damage_that_reads_without_error(data):
  # Cut at a record boundary: CRCs pass, only the recorded count shows it.
  offsets = _offsets(data / BAD_SHARD)
  (data / BAD_SHARD).write_bytes((data / BAD_SHARD).read_bytes()[:offsets[5]])
  # A flipped byte inside record 7 of the other shard: the CRC catches it.
  other = data / "pretrain_data.tfrecord-0-of-2"
  _flip_a_byte(other, record=7)
  # A well-formed record of the wrong length in the held-out shard.
  held_out = data / "pretrain_eval.tfrecord-0-of-1"
  records = _records(held_out)
  with tf.io.TFRecordWriter(str(held_out)) as w:
    for i, r in enumerate(records):
      w.write(_example(16) if i == 2 else r)
  problems = {os.path.basename(s.path): (s.record, s.problem) for s in verify.verify_pretraining_data(data).bad}
  assert problems[BAD_SHARD][0] is None
  assert problems[BAD_SHARD][1].startswith("holds 5 records but metadata.json recorded")
  assert problems["pretrain_data.tfrecord-0-of-2"][0] == 7
  assert problems["pretrain_data.tfrecord-0-of-2"][1].startswith("unreadable (corrupted record at ")
  assert problems["pretrain_eval.tfrecord-0-of-1"][0] == 2
  assert problems["pretrain_eval.tfrecord-0-of-1"][1].startswith(f"not a {MAX_LEN}-long int64")


def test_verify_reads_metadata_without_shard_records(data):
  meta = json.loads((data / "metadata.json").read_text())
  for split in meta["splits"].values():
    del split["shards"]
  meta["format_version"] = 1
  (data / "metadata.json").write_text(json.dumps(meta))
  report = verify.verify_pretraining_data(data)
  assert not report.bad and not report.exact and "CRCs and shapes only" in report.summary()
  _cut_mid_record(data / BAD_SHARD, good=4)
  assert [(os.path.basename(s.path), s.record) for s in verify.verify_pretraining_data(data).bad] == [
      (BAD_SHARD, 4)]


def test_verify_without_metadata_finds_a_shard_missing_by_its_name(data):
  """An incomplete build without metadata.json (e.g. a killed job's temporary directory): the shards'
  -i-of-n names say which are missing."""
  (data / "metadata.json").unlink()
  assert not verify.verify_pretraining_data(data).bad
  (data / BAD_SHARD).unlink()
  bad = verify.verify_pretraining_data(data).bad
  assert [(os.path.basename(s.path), s.problem.split(":")[0]) for s in bad] == [(BAD_SHARD, "missing")]


def _cli_error(capsys, argv):
  assert cli.main(argv) == 2
  captured = capsys.readouterr()
  err = captured.err.strip().splitlines()
  assert len(err) == 1 and err[0].startswith("error: "), err
  return err[0]


def test_verify_cli(data, tmp_path, capsys, bert_vocab):
  assert cli.main(["--verify", "--output-dir", str(data), "--no-progress"]) == 0
  out = capsys.readouterr().out
  assert out.startswith(f"verified {data}: 3 shard(s)") and "match metadata.json" in out
  _cut_mid_record(data / BAD_SHARD, good=3)
  msg = _cli_error(capsys, ["--verify", "--output-dir", str(data), "--no-progress"])
  assert f"{data / BAD_SHARD}, record 3: unreadable" in msg
  (data / "pretrain_data.tfrecord-0-of-2").unlink()
  msg = _cli_error(capsys, ["--verify", "--output-dir", str(data), "--no-progress"])
  assert "1 more bad shard(s): pretrain_data.tfrecord-0-of-2" in msg
  assert "does not exist" in _cli_error(capsys, ["--verify", "--output-dir", str(tmp_path / "nowhere")])
  assert "--verify needs --output-dir" in _cli_error(capsys, ["--verify"])
  # The builder checks its output location before reading the corpus.
  blocker = tmp_path / "a_file"
  blocker.write_text("x")
  msg = _cli_error(capsys, ["--corpus-dir", str(tmp_path / "missing"), "--vocab-file", str(bert_vocab),
                            "--output-dir", str(blocker / "out"), "--no-progress"])
  assert msg == f"error: cannot write the output directory {blocker / 'out'}: {blocker} is a file, not a directory; choose another path"


def test_skip_bad_records_drops_and_counts_the_lost_records(data, capfd):
  glob = str(data / "pretrain_data.tfrecord*")
  read = lambda **kw: [b["input_ids"].numpy().tolist() for b in dataset.pretraining_dataset(
      glob, MAX_LEN, batch_size=1, is_training=False, repeat=False, seed=3, **kw)]
  intact = read()
  assert read(skip_bad_records=True) == intact  # the same examples in the same order when nothing is bad
  n = len(_records(data / BAD_SHARD))
  _cut_mid_record(data / BAD_SHARD, good=3)
  capfd.readouterr()
  with pytest.raises(tf.errors.DataLossError):
    read(check_files=False)
  kept = read(skip_bad_records=True)
  assert len(kept) == len(intact) - (n - 3)
  assert f"warning: skip_bad_records: skipped {n - 3} of {n} records of" in capfd.readouterr().err


def test_pretraining_names_the_corrupt_shard_keeps_the_checkpoint_and_can_skip(data, bert_vocab, capfd, caplog):
  from electra_tf.configs import PretrainingConfig
  from electra_tf.errors import OutputPathError
  from electra_tf.pretraining import trainer
  # One shard, so that its records come in order (with two, repeat-then-shuffle may read one twice first);
  # the shuffle buffer reads 100 ahead, so record 200 is met at about step 12, after ckpt-10.
  (data / "pretrain_data.tfrecord-0-of-2").unlink()
  _flip_a_byte(data / BAD_SHARD, record=200)  # the size is unchanged: only reading the record finds it
  hp = lib.tiny_hparams(num_train_steps=30, iterations_per_loop=5, save_checkpoints_steps=5,
                        vocab_file=str(bert_vocab))
  cfg = PretrainingConfig.create("corrupt", str(data.parent), **hp)
  blocked = PretrainingConfig.create("x", str(data.parent), **hp, model_dir=str(bert_vocab / "m"))
  with pytest.raises(OutputPathError, match="is a file, not a directory"):
    trainer.Trainer(blocked, progress=False, log_fn=lambda *_: None)
  t = trainer.Trainer(cfg, progress=False, log_fn=lambda *_: None)
  with pytest.raises(trainer.PretrainingError) as e:
    t.train()
  last = tf.train.latest_checkpoint(cfg.model_dir)
  assert last is not None and last.endswith("ckpt-10")
  assert str(e.value).startswith(f"corrupt pre-training data: {data / BAD_SHARD}, record 200: unreadable")
  assert f"the last good checkpoint ({last}) is kept" in str(e.value)
  assert "--verify --output-dir" in str(e.value) and "skip_bad_records" in str(e.value)
  capfd.readouterr()
  t.cfg.skip_bad_records = True  # the same run resumes from that checkpoint and finishes
  result = t.train()
  assert result.status == "finished" and result.step == 30
  n = json.loads((data / "metadata.json").read_text())["splits"]["train"]["shards"][BAD_SHARD]["num_records"]
  assert f"skipped {n - 200} of {n} records of" in capfd.readouterr().err
  assert "a shard that loses some is reported with the count" in caplog.text


@pytest.mark.parametrize("cut", ["boundary", "header"])
def test_pretraining_refuses_a_shard_cut_where_it_reads_without_error(data, bert_vocab, tmp_path, cut,
                                                                    command_server):
  """A shard cut at a record boundary, or inside the next record's length header (TensorFlow's reader takes
  fewer than 12 bytes there for the end of the file), reads without error: the size metadata.json recorded
  stops pre-training before it starts, in one line and leaving nothing; skip_bad_records trains on it."""
  offsets = _offsets(data / BAD_SHARD)
  end = offsets[5] + (0 if cut == "boundary" else 7)
  (data / BAD_SHARD).write_bytes((data / BAD_SHARD).read_bytes()[:end])
  assert len(_records(data / BAD_SHARD)) == 5  # no error from the reader
  size = json.loads((data / "metadata.json").read_text())["splits"]["train"]["shards"][BAD_SHARD]["num_bytes"]
  hp = lib.tiny_hparams(num_train_steps=2, iterations_per_loop=1, save_checkpoints_steps=2,
                        vocab_file=str(bert_vocab))
  run = lambda extra: command_server.run(
      [os.path.join(REPO, "pretrain", "run_pretraining.py"), "--data-dir", str(data.parent), "--model-name", "m",
       "--no-progress", "--hparams", json.dumps({**hp, **extra})], cwd=tmp_path, timeout=600)
  before = sorted(p for p in data.parent.rglob("*"))
  result = run({})
  errors = [l for l in result.stderr.splitlines() if l.startswith("error:")]
  assert result.returncode == 2 and len(errors) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
  assert errors[0] == (f"error: pre-training data {data / BAD_SHARD} is {end:,} bytes but metadata.json recorded "
                       f"{size:,} (cut short or changed since the build); check every shard with `python "
                       f"data_prep/build_pretraining_dataset.py --verify --output-dir {data}`, rebuild the data, "
                       "or set the hparam skip_bad_records to train on what it holds")
  assert sorted(p for p in data.parent.rglob("*")) == before
  result = run({"skip_bad_records": True})
  assert result.returncode == 0, result.stderr[-2000:]
  assert tf.train.latest_checkpoint(str(data.parent / "models" / "m")).endswith("ckpt-2")
