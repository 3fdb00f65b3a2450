"""Data, vocab, models, metadata and results on a TensorFlow filesystem that is not the local disk.

TensorFlow's in-memory ``ram://`` filesystem stands in for a ``gs://`` bucket: nothing is local, so any
``open``/``os.path`` left on the way fails here. (``ram://`` lists only directories made with makedirs,
and treats any prefix of a file name as a directory; the helpers cope with both.)
"""

import json
import os
import pathlib
import uuid

import numpy as np
import pytest
import tensorflow as tf

import _pretraining_testlib as lib
from electra_tf import fileio, runtime
from electra_tf.errors import OutputExistsError


def _ram(name: str) -> str:
  return f"ram://electra-{uuid.uuid4().hex[:8]}/{name}"


def _upload_tree(local: pathlib.Path, remote: str):
  for rel in fileio.walk_files(str(local)):
    target = fileio.join(remote, rel)
    tf.io.gfile.makedirs(os.path.dirname(target))
    tf.io.gfile.copy(str(local / rel), target, overwrite=True)


@pytest.fixture(scope="module")
def remote_data(tmp_path_factory, data_dir, bert_vocab):
  """Tiny pre-training TFRecords, metadata.json and vocab.txt, copied into ram://."""
  local = lib.build_tfrecords(tmp_path_factory.mktemp("wiki"), data_dir, bert_vocab, max_lines=300, top_k=200)
  remote = _ram("data")
  _upload_tree(local, remote)
  return remote


def test_atomic_write_and_directory_on_a_remote_filesystem(tmp_path):
  root = _ram("out")
  runtime.atomic_write(fileio.join(root, "a", "r.json"), '{"x": 1}\n')
  runtime.atomic_write(fileio.join(root, "a", "r.json"), b'{"x": 2}\n')  # replaced
  assert fileio.read_text(fileio.join(root, "a", "r.json")) == '{"x": 2}\n'
  assert [n for n in fileio.listdir(fileio.join(root, "a")) if n.startswith(".tmp_")] == []

  dest = fileio.join(root, "model")
  with runtime.atomic_directory(dest) as tmp:
    assert not fileio.is_remote(tmp)  # staged locally: writers that know only local files work
    (pathlib.Path(tmp) / "sub").mkdir()
    (pathlib.Path(tmp) / "sub" / "w.bin").write_bytes(b"1")
    (pathlib.Path(tmp) / "config.json").write_text("{}")
  assert sorted(fileio.walk_files(dest)) == ["config.json", "sub/w.bin"]
  with pytest.raises(OutputExistsError):
    runtime.atomic_directory(dest)
  with pytest.raises(RuntimeError):
    with runtime.atomic_directory(dest, overwrite=True) as tmp:
      (pathlib.Path(tmp) / "config.json").write_text("half")
      raise RuntimeError("interrupted")
  assert fileio.read_text(fileio.join(dest, "config.json")) == "{}"  # the old one is untouched
  with runtime.atomic_directory(dest, overwrite=True) as tmp:
    (pathlib.Path(tmp) / "config.json").write_text("new")
  assert sorted(fileio.walk_files(dest)) == ["config.json"]
  assert fileio.read_text(fileio.join(dest, "config.json")) == "new"
  # Local behaviour is unchanged: readable results.
  runtime.atomic_write(str(tmp_path / "x.txt"), "y")
  assert (tmp_path / "x.txt").stat().st_mode & 0o777 == 0o644


def test_vocab_and_metadata_read_from_a_remote_filesystem(remote_data):
  from electra_tf import tokenization
  from electra_tf.pretrain_data import metadata, verify
  vocab_file = fileio.join(remote_data, "vocab.txt")
  tok = tokenization.load_tokenizer(vocab_file)
  assert tok.convert_tokens_to_ids(["[CLS]", "[SEP]"]) == [2, 3]
  records = fileio.join(remote_data, "pretrain_tfrecords")
  meta = metadata.check_metadata(fileio.join(records, "pretrain_data.tfrecord*"), vocab_file, True, 32,
                                 require=True)
  assert meta["max_seq_length"] == 32
  report = verify.verify_pretraining_data(records)
  assert not report.bad and len(report.shards) == 3


def test_data_is_built_from_a_remote_corpus_into_a_remote_directory(tmp_path, bert_vocab):
  import gzip
  from electra_tf.pretrain_data import build, verify
  root = _ram("build")
  corpus = fileio.join(root, "corpus")
  tf.io.gfile.makedirs(corpus)
  text = "".join(f"The {i}th sentence of the corpus is here.\nIt has a second line.\n\n" for i in range(60))
  with tf.io.gfile.GFile(fileio.join(corpus, "a.txt"), "w") as f:
    f.write(text)
  with tf.io.gfile.GFile(fileio.join(corpus, "b.txt.gz"), "wb") as f:
    f.write(gzip.compress(text.encode("utf-8")))
  vocab = fileio.join(root, "vocab.txt")
  tf.io.gfile.copy(str(bert_vocab), vocab)
  out = fileio.join(root, "pretrain_tfrecords")
  meta = build.build_pretraining_dataset(out, vocab, corpus_dir=corpus, max_seq_length=32, num_shards=2,
                                         eval_fraction=0.2, seed=1, progress=False)
  assert meta["num_files_read"] == 2 and meta["vocab_file"] == vocab
  # The same corpus on the local disk gives the same records.
  local = tmp_path / "corpus"
  local.mkdir()
  (local / "a.txt").write_text(text, encoding="utf-8")
  (local / "b.txt.gz").write_bytes(gzip.compress(text.encode("utf-8")))
  local_meta = build.build_pretraining_dataset(tmp_path / "out", bert_vocab, corpus_dir=local, max_seq_length=32,
                                               num_shards=2, eval_fraction=0.2, seed=1, progress=False)
  assert meta["splits"] == local_meta["splits"]
  report = verify.verify_pretraining_data(out)
  assert not report.bad and report.exact


def test_sentencepiece_model_learned_into_and_read_from_a_remote_directory():
  from electra_tf import tokenization
  from electra_tf.pretrain_data import vocab_learning
  root = _ram("spm")
  tf.io.gfile.makedirs(root)
  docs = [[f"sentence number {i} about {w} and more words" for w in ("cats", "dogs", "birds", "fish")]
          for i in range(50)]
  model = vocab_learning.learn_sentencepiece_model(docs, fileio.join(root, "spm"), vocab_size=150)
  assert model == fileio.join(root, "spm.model") and fileio.isfile(model)
  tok = tokenization.load_tokenizer(model, do_lower_case=False)
  assert tok.convert_tokens_to_ids(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]) == [0, 100, 101, 102, 103]
  assert tok.tokenize("sentence about cats")


def _pretraining_config(data, name, **hp):
  from electra_tf.configs import PretrainingConfig
  return PretrainingConfig.create(name, data, **lib.tiny_hparams(vocab_size=205, **hp))


@pytest.fixture(scope="module")
def remote_run(remote_data):
  """A 4-step pre-training run with data and model directory on ram://, evaluated (results on ram://)."""
  from electra_tf.pretraining import trainer
  cfg = _pretraining_config(remote_data, "remote", num_train_steps=4, iterations_per_loop=2,
                            save_checkpoints_steps=2, num_eval_steps=2)
  t = trainer.Trainer(cfg, progress=False, log_fn=lambda *_: None)
  assert t.train().step == 4
  t.evaluate(restore=True)
  return cfg


def test_pretraining_reads_data_and_writes_checkpoints_and_results_on_a_remote_filesystem(remote_run,
                                                                                            remote_data):
  from electra_tf.pretraining import trainer
  cfg = remote_run
  assert cfg.model_dir.startswith("ram://")
  assert tf.train.latest_checkpoint(cfg.model_dir).endswith("ckpt-4")
  assert fileio.isfile(fileio.join(cfg.model_dir, cfg.SAVED_CONFIG_FILE))
  history = json.loads(fileio.read_text(fileio.join(cfg.model_dir, "results", "unsup_results.json")))
  assert history[-1]["step"] == 4 and np.isfinite(history[-1]["disc_loss"])
  assert fileio.isfile(cfg.results_pkl) and fileio.read_text(cfg.results_txt).startswith("step 4")
  # Resuming reads the checkpoint back from the remote directory.
  again = trainer.Trainer(_pretraining_config(remote_data, "remote", num_train_steps=6, iterations_per_loop=2,
                                              save_checkpoints_steps=2), progress=False, log_fn=lambda *_: None)
  assert again.train().step == 6


def test_convert_reads_a_remote_pretraining_run_and_writes_remote_outputs(remote_run, capsys):
  from electra_tf.cli import convert
  from electra_tf.convert import formats
  cfg = remote_run
  step = int(tf.train.latest_checkpoint(cfg.model_dir).rsplit("-", 1)[1])  # 6 once the resume test ran
  assert convert.main(["inspect", cfg.model_dir]) == 0
  out = capsys.readouterr().out
  assert "format: pretraining-run" in out and f"global_step: {step}" in out
  dest = fileio.join(os.path.dirname(cfg.model_dir), "tf1")
  assert convert.main(["export-tf1", cfg.model_dir, "--output", dest]) == 0, capsys.readouterr().err
  prefix = tf.train.latest_checkpoint(dest)
  assert prefix.endswith(f"model.ckpt-{step}") and fileio.isfile(fileio.join(dest, "vocab.txt"))
  source = formats.read_source(dest)
  assert source.format == formats.TF1 and source.global_step == step
  run = formats.read_source(cfg.model_dir)
  for name, value in run.arrays.items():
    np.testing.assert_array_equal(source.arrays[name], value)
  # Hugging Face out and back in: safetensors writes a local staging directory, reads a local copy.
  hf = fileio.join(os.path.dirname(cfg.model_dir), "hf")
  assert convert.main(["export-hf", cfg.model_dir, "--what", "discriminator", "--output", hf]) == 0
  assert fileio.isfile(fileio.join(hf, "model.safetensors")) and fileio.isfile(fileio.join(hf, "vocab.txt"))
  back = formats.read_source(hf)
  assert back.format == formats.HF
  name = "electra/embeddings/word_embeddings"
  np.testing.assert_allclose(back.arrays[name], run.arrays[name], atol=1e-6)


def test_finetuning_reads_data_and_writes_models_and_results_on_a_remote_filesystem(tmp_path, remote_run):
  import _finetuning_testlib as ft
  from electra_tf.finetuning.run import FinetuningRun
  ft.glue_files(tmp_path)
  root = _ram("finetune")
  _upload_tree(tmp_path, root)
  vocab = fileio.join(remote_run.data_dir, "vocab.txt")
  cfg = ft.tiny_config(root, ["sst", "mrpc"], vocab, write_test_outputs=True, keep_all_models=True,
                       vocab_size=205, embedding_size=32, init_checkpoint=remote_run.model_dir)
  assert cfg.raw_data_dir.startswith("ram://") and cfg.model_dir.startswith("ram://")
  run = FinetuningRun(cfg, progress=False)
  results = run.run()
  assert set(results[0]) >= {"sst", "mrpc"}
  model_dir = run.model_dir(1)
  assert tf.train.latest_checkpoint(model_dir) is not None
  assert fileio.isfile(fileio.join(model_dir, "vocab.txt"))
  assert fileio.glob(fileio.join(model_dir, "tensorboard", "*"))  # kept across the checkpoint's rewrite
  results_json = fileio.join(cfg.results_dir, f"{run.tasks_key}_results.json")
  assert fileio.isfile(results_json) and fileio.isfile(results_json[:-len(".json")] + ".pkl")
  assert fileio.glob(fileio.join(cfg.model_dir, "test_predictions", "sst_test_1_predictions.*"))
  assert fileio.glob(fileio.join(cfg.model_dir, "glue_submission", "*", "SST-2.tsv"))
