"""Continued pre-training from a released checkpoint (``init_checkpoint`` / ``--init-checkpoint``).

A checkpoint in the reference's TF1 layout (as Google's released files: ``electra/*``, ``generator/*``, both
heads and ``global_step``, written by a ``tf.compat.v1`` Saver, with or without Adam slots) starts
pre-training on WikiText-2 text packed by the library's own data builder: step 0, a fresh optimizer and
every weight equal to the checkpoint's array. The run continues, and fine-tuning reads its model directory
by ``--model-name``. A transformers directory and a keras-hub preset hold the discriminator's encoder only:
the rest keeps its fresh initialisation and the log line says so. A path that does not exist and a
checkpoint of another size are one error line, exit status 2, nothing written.
"""

import gzip
import json
import logging
import os
import shutil

import numpy as np
import pytest

import _pretraining_testlib as lib

from conftest import TINY_MODEL

MODEL_NAME = "continued"
SEQ = 32
# A tiny ELECTRA on the BERT vocab: discriminator H 32, 1 layer; generator half as wide (H 16).
SHAPE = dict(vocab_size=30522, embedding_size=32, model_hparam_overrides=dict(TINY_MODEL), max_seq_length=SEQ)


def _wikitext_corpus(data_dir, path, max_lines=400):
  """The first lines of WikiText-2's training text as a corpus file, one paragraph a line, a blank line
  between articles (headings dropped)."""
  out = []
  with gzip.open(data_dir / "corpus" / "wikitext-2" / "train.raw.gz", "rt", encoding="utf-8") as f:
    for i, line in enumerate(f):
      if i >= max_lines:
        break
      line = line.strip()
      if line.startswith("= ") and not line.startswith("= = "):
        out.append("")  # a new article
      elif line and not line.startswith("="):
        out.append(line)
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text("\n".join(out) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def root(tmp_path_factory, data_dir, bert_vocab):
  """A data directory as a user has it: vocab.txt and pre-training TFRecords built from real text."""
  from electra_tf.pretrain_data import build
  root = tmp_path_factory.mktemp("continue")
  shutil.copy(bert_vocab, root / "vocab.txt")
  _wikitext_corpus(data_dir, root / "corpus" / "wikitext.txt")
  build.build_pretraining_dataset(root / "pretrain_tfrecords", root / "vocab.txt", corpus_dir=root / "corpus",
                                  max_seq_length=SEQ, num_shards=2, progress=False)
  return root


def _config(root, name, **hparams):
  from electra_tf.configs import PretrainingConfig
  return PretrainingConfig.create(name, str(root), **lib.tiny_hparams(**{**SHAPE, "generator_hidden_size": 0.5,
                                                                          **hparams}))


def write_reference_checkpoint(prefix, cfg, seed=7, slots=True) -> dict:
  """A checkpoint in the reference's layout for ``cfg``'s networks, written the reference's way: a
  ``tf.compat.v1`` variable per reference name in a graph, saved by a ``tf.compat.v1`` Saver, with
  ``global_step`` and (``slots``) the ``adam_m``/``adam_v`` slots of its AdamWeightDecayOptimizer. Every
  value is a fresh initialisation plus noise (LayerNorms and biases included), so no weight equals a fresh
  run's by accident. Returns the arrays as read back from the file."""
  import tensorflow as tf
  from electra_tf.checkpoint_names import reference_variables
  from electra_tf.modeling import build_pretraining_networks
  rng = np.random.default_rng(seed)
  nets = build_pretraining_networks(cfg)
  values = {n: (v.numpy() + rng.normal(0.0, 0.05, v.shape)).astype(np.float32)
            for n, v in reference_variables(nets).items()}
  graph = tf.Graph()
  with graph.as_default():
    for name, value in values.items():
      tf.compat.v1.get_variable(name, initializer=value)
      if slots:
        tf.compat.v1.get_variable(name + "/adam_m", initializer=np.full_like(value, 0.25))
        tf.compat.v1.get_variable(name + "/adam_v", initializer=np.full_like(value, 0.5))
    tf.compat.v1.get_variable("global_step", initializer=np.int64(1_000_000))
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session(graph=graph) as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      saver.save(sess, str(prefix))
  reader = tf.train.load_checkpoint(str(prefix))
  return {name: reader.get_tensor(name) for name in values}


def _expected_counts(arrays):
  disc = sum(n.startswith(("electra/", "discriminator_predictions/")) for n in arrays)
  return disc, len(arrays) - disc


def finetune_classification(root, model_name, n_train=64, n_dev=32, **hparams):
  """Fine-tunes a user's CSV task from ``<root>/models/<model_name>`` as a user does (``electra-finetune
  --model-name ... --train-file``, more ``hparams`` if given) and returns (exit status, the fine-tuned model's
  directory).

  The task is ``reviews``: the first Rotten Tomatoes sentences of ``$ELECTRA_TEST_DATA/glue-style/rt_polarity``
  as ``train.csv`` / ``dev.csv`` with a ``review`` column and ``negative`` / ``positive`` labels."""
  from electra_tf.cli import finetune
  from _user_task_testlib import write_polarity
  train, dev = write_polarity(root / "reviews", "csv", n_train=n_train, n_dev=n_dev)
  hparams = dict(SHAPE, train_batch_size=16, eval_batch_size=16, num_train_epochs=1.0, learning_rate=1e-3, **hparams)
  code = finetune.main(["--data-dir", str(root), "--model-name", model_name, "--task-name", "reviews",
                        "--train-file", train, "--dev-file", dev, "--text-column", "review", "--label-column",
                        "polarity", "--hparams", json.dumps(hparams), "--no-progress"])
  return code, root / "models" / model_name / "finetuning_models" / "reviews_model_1"


@pytest.mark.slow
def test_continued_pretraining_from_a_reference_checkpoint_then_fine_tuning(root, tmp_path, caplog):
  import tensorflow as tf
  from electra_tf.checkpoint_names import reference_variables
  from electra_tf.pretraining import trainer
  cfg = _config(root, MODEL_NAME, num_train_steps=4, iterations_per_loop=2, save_checkpoints_steps=2,
                init_checkpoint=str(tmp_path / "electra_tiny"))
  arrays = write_reference_checkpoint(tmp_path / "electra_tiny" / "model.ckpt-1000000", cfg)
  assert {"generator/encoder/layer_0/attention/self/query/kernel", "generator_predictions/output_bias",
          "discriminator_predictions/dense_1/kernel", "generator/embeddings_project/kernel"} <= set(arrays)

  lines = []
  t = trainer.Trainer(cfg, progress=False, log_fn=lines.append)
  at_load = {}
  load = t.init_from_checkpoint

  def capture(path):  # the state right after loading, before the first update
    at_load["fresh"] = {n: v.numpy() for n, v in reference_variables(t.model.networks).items()}
    report = load(path)
    at_load["weights"] = {n: v.numpy() for n, v in reference_variables(t.model.networks).items()}
    at_load["step"] = int(t.optimizer.iterations.numpy())
    at_load["slots"] = [v.numpy() for v in t.optimizer.variables if "adam_" in v.path]
    return report

  t.init_from_checkpoint = capture
  assert t.train(max_steps=2).step == 2
  assert at_load["step"] == 0
  assert len(at_load["slots"]) == 2 * len(t.variables) and all(not s.any() for s in at_load["slots"])
  assert set(at_load["weights"]) == set(arrays)  # every weight of the networks came from the checkpoint
  for name, value in arrays.items():
    assert not np.array_equal(at_load["fresh"][name], value), name  # so loading it is what made them equal
    np.testing.assert_array_equal(at_load["weights"][name], value, err_msg=name)
  disc, gen = _expected_counts(arrays)
  assert (f"init_checkpoint {cfg.init_checkpoint} (reference TF1 checkpoint saved at step 1000000): loaded "
          f"discriminator {disc} weights, generator {gen} weights; freshly initialised: none; the optimizer and "
          "the step start fresh (step 0)") in lines
  assert os.path.exists(os.path.join(cfg.model_dir, "ckpt-2.index"))

  # the same command again continues the run from its own checkpoint, not from init_checkpoint
  lines.clear()
  assert t.train().step == 4
  assert any(l.startswith(f"resuming from {os.path.join(cfg.model_dir, 'ckpt-2')} at step 2 (init_checkpoint")
             for l in lines)
  trained = {n: v.numpy() for n, v in reference_variables(t.model.networks).items()}
  assert not np.array_equal(trained["electra/encoder/layer_0/output/dense/kernel"],
                            arrays["electra/encoder/layer_0/output/dense/kernel"])
  assert not np.array_equal(trained["generator/encoder/layer_0/output/dense/kernel"],
                            arrays["generator/encoder/layer_0/output/dense/kernel"])
  assert tf.train.latest_checkpoint(cfg.model_dir).endswith("ckpt-4")

  # fine-tuning reads the continued run's model directory by --model-name
  with caplog.at_level(logging.INFO):
    code, model_dir = finetune_classification(root, MODEL_NAME)
  assert code == 0
  assert any("pretraining-run" in r.getMessage() and cfg.model_dir in r.getMessage() for r in caplog.records)
  assert list(model_dir.glob("model.ckpt-*.index")) and (model_dir / "task.json").exists()
  reader = tf.train.load_checkpoint(str(model_dir))
  ft_emb = reader.get_tensor("electra/embeddings/word_embeddings")
  assert ft_emb.shape == trained["electra/embeddings/word_embeddings"].shape
  # The vocab's last word piece is in no sentence: fine-tuning moves it by weight decay alone, so it is still the
  # continued run's row (measured 1e-6 apart), which pre-training moved away from the checkpoint's (1e-3).
  emb = "electra/embeddings/word_embeddings"
  assert np.abs(ft_emb[-1] - trained[emb][-1]).max() < 1e-4
  assert np.abs(trained[emb][-1] - arrays[emb][-1]).max() > 1e-4


def _trainer(cfg, lines):
  from electra_tf.pretraining import trainer
  return trainer.Trainer(cfg, progress=False, log_fn=lines.append)


@pytest.mark.slow
def test_continued_pretraining_on_two_replicas_loads_every_copy_then_fine_tunes_in_the_same_process(root, tmp_path):
  """Several devices (Mirrored on two logical CPUs, XLA on): every weight's copy on each device equals the
  reference checkpoint's array once loaded, the copies stay equal as the run continues, and fine-tuning the
  result in the same process (as the main job does) trains on the same two replicas."""
  from conftest import run_on_two_logical_cpus
  body = f"""
import json, pathlib
import numpy as np
import test_pretraining_init_checkpoint as t
from electra_tf.checkpoint_names import reference_variables
from electra_tf.pretraining import trainer
root, tmp = pathlib.Path({str(root)!r}), pathlib.Path({str(tmp_path)!r})
cfg = t._config(root, "continued_mirrored", num_train_steps=2, iterations_per_loop=2, save_checkpoints_steps=2,
                init_checkpoint=str(tmp / "ck"), strategy="mirrored", use_xla=True)
arrays = t.write_reference_checkpoint(tmp / "ck" / "model.ckpt-1000000", cfg)
run = trainer.Trainer(cfg, progress=False, log_fn=lambda *_: None)
load, copies = run.init_from_checkpoint, {{}}
def read():
  return {{n: [c.numpy() for c in run.strategy.experimental_local_results(getattr(v, "value", v))]
          for n, v in reference_variables(run.model.networks).items()}}
def capture(path):
  report = load(path)
  copies["loaded"] = read()
  return report
run.init_from_checkpoint = capture
run.train()
after = read()
loaded = all(len(cs) == 2 and all(np.array_equal(c, arrays[n]) for c in cs) for n, cs in copies["loaded"].items())
in_step = all(len(cs) == 2 and np.array_equal(cs[0], cs[1]) for cs in after.values())
moved = sum(not np.array_equal(cs[0], arrays[n]) for n, cs in after.items())
seen = {{}}
from electra_tf.finetuning import run as finetuning_run
new_run = finetuning_run.FinetuningRun.__init__
def record(self, *args, **kwargs):
  new_run(self, *args, **kwargs)
  seen["replicas"] = self.strategy.num_replicas_in_sync
finetuning_run.FinetuningRun.__init__ = record
code, _ = t.finetune_classification(root, "continued_mirrored", strategy="mirrored", use_xla=True)
print(json.dumps([run.num_replicas, len(copies["loaded"]), loaded, in_step, moved, code, seen.get("replicas")]))
"""
  replicas, loaded_weights, loaded, in_step, moved, status, finetune_replicas = json.loads(
      run_on_two_logical_cpus(body))
  assert (replicas, loaded_weights, loaded, in_step, status, finetune_replicas) == (2, 48, True, True, 0, 2)
  assert moved > 40  # the run trained from the loaded weights


@pytest.mark.parametrize("slots", [False, True], ids=["released_without_slots", "with_adam_slots"])
def test_a_reference_checkpoint_loads_every_weight_with_or_without_slots(root, tmp_path, slots):
  from electra_tf.checkpoint_names import reference_variables
  cfg = _config(root, f"tf1_{slots}")
  arrays = write_reference_checkpoint(tmp_path / "ref" / "model.ckpt-1000000", cfg, slots=slots)
  lines = []
  t = _trainer(cfg, lines)
  report = t.init_from_checkpoint(str(tmp_path / "ref"))  # the unzipped directory, as released
  assert not report.missing and not report.unused
  for name, var in reference_variables(t.model.networks).items():
    np.testing.assert_array_equal(var.numpy(), arrays[name], err_msg=name)
  assert int(t.optimizer.iterations.numpy()) == 0
  assert "freshly initialised: none" in lines[-1]


def test_transformers_directory_and_keras_hub_preset_load_the_discriminator_and_say_what_is_fresh(root, tmp_path):
  """Both hold the discriminator's encoder (transformers' ElectraForPreTraining also its head): that is
  loaded, and the generator keeps its fresh initialisation, named in the log line."""
  from electra_tf.checkpoint_names import reference_variables
  from electra_tf.convert import read_source, write_hf, write_preset
  source_cfg = _config(root, "source")
  arrays = write_reference_checkpoint(tmp_path / "ref" / "model.ckpt-1000000", source_cfg)
  source = read_source(str(tmp_path / "ref"))  # the TF1 layout holds no head count: the run's config states it
  source.architecture = source.architecture.with_stated(source_cfg.discriminator_config(),
                                                        source_cfg.generator_config())
  source.vocab_file = str(root / "vocab.txt")
  write_hf(str(tmp_path / "hf"), source, "discriminator")
  formats = [("hf", "transformers directory", "generator")]
  try:
    import keras_hub  # pylint: disable=unused-import
    write_preset(str(tmp_path / "kh"), source)
    formats.append(("kh", "keras-hub preset", "discriminator head 4 weights, generator"))
  except ImportError:  # keras-hub is an optional extra
    pass
  for folder, kind, fresh in formats:
    lines = []
    t = _trainer(_config(root, folder), lines)
    before = {n: v.numpy() for n, v in reference_variables(t.model.networks).items()}
    report = t.init_from_checkpoint(str(tmp_path / folder))
    after = {n: v.numpy() for n, v in reference_variables(t.model.networks).items()}
    assert report.loaded and set(report.loaded) == {n for n in after if n not in report.missing}
    for name in report.loaded:
      np.testing.assert_array_equal(after[name], arrays[name], err_msg=f"{folder}: {name}")
    for name in report.missing:
      np.testing.assert_array_equal(after[name], before[name], err_msg=f"{folder}: {name}")
    assert all(n.startswith(("generator", "discriminator_predictions/")) for n in report.missing)
    generator = sum(n.startswith("generator") for n in after)
    assert lines[-1].startswith(f"init_checkpoint {tmp_path / folder} ({kind}): loaded discriminator "
                                f"{len(report.loaded)} weights; freshly initialised: {fresh} {generator} weights;")


def _cli(argv, capsys):
  from electra_tf.cli import pretrain
  capsys.readouterr()
  code = pretrain.main(argv)
  return code, capsys.readouterr().err


def test_bad_init_checkpoints_are_one_line_exit_2_and_nothing_written(root, tmp_path, capsys):
  hparams = json.dumps(lib.tiny_hparams(**SHAPE, generator_hidden_size=0.5, num_train_steps=2))
  base = ["--data-dir", str(root), "--hparams", hparams, "--no-progress"]
  code, err = _cli(base + ["--model-name", "missing", "--init-checkpoint", str(tmp_path / "electra_smal")], capsys)
  assert code == 2 and err.count("\n") == 1, err
  assert err.startswith(f"error: init_checkpoint {tmp_path / 'electra_smal'}: no such file or directory; pass ")
  assert not (root / "models" / "missing").exists()

  wider = _config(root, "x", model_hparam_overrides=dict(TINY_MODEL, hidden_size=64, intermediate_size=128))
  write_reference_checkpoint(tmp_path / "wide" / "model.ckpt-1000000", wider)
  code, err = _cli(base + ["--model-name", "other_size", "--init-checkpoint", str(tmp_path / "wide")], capsys)
  assert code == 2 and err.count("\n") == 1, err
  assert f"init_checkpoint {tmp_path / 'wide'} is a model of another size: H 64 (this run: 32)" in err
  assert '"hidden_size": 64' in err and "--hparams" in err  # the fix: the checkpoint's own sizes
  assert not (root / "models" / "other_size").exists()

  deeper = _config(root, "x", model_hparam_overrides=dict(TINY_MODEL, num_hidden_layers=2))
  write_reference_checkpoint(tmp_path / "deep" / "model.ckpt-1000000", deeper)  # loads without a shape error
  code, err = _cli(base + ["--model-name", "other_depth", "--init-checkpoint", str(tmp_path / "deep")], capsys)
  assert code == 2 and err.count("\n") == 1, err
  assert "is a model of another size: L 2 (this run: 1)" in err
  assert not (root / "models" / "other_depth").exists()

  code, err = _cli(base + ["--model-name", "twice", "--init-checkpoint", "a", "--hparams",
                           json.dumps({"init_checkpoint": "b"})], capsys)
  assert code == 2 and err.count("\n") == 1 and "init_checkpoint is given twice" in err


def test_evaluating_a_run_with_other_model_hparams_is_one_line(root, tmp_path, capsys):
  """``do_eval`` restores the run's latest checkpoint through the runs' own restore (``Checkpointer``): one
  that does not fit the networks is one error line."""
  from electra_tf.errors import CheckpointError
  from electra_tf.pretraining import trainer
  from electra_tf.runtime import checkpointing
  cfg = _config(root, "saved")
  t = _trainer(cfg, [])
  objects = t.runner.checkpoint_objects()  # what a run saves, without training it
  checkpointing.Checkpointer(cfg.model_dir, objects, t.step_var).save(5)
  other = _config(root, "saved", do_train=False, do_eval=True,
                  model_hparam_overrides=dict(TINY_MODEL, hidden_size=64, intermediate_size=128))
  capsys.readouterr()
  with pytest.raises(CheckpointError) as error:
    trainer.run(other, log_fn=lambda *_: None, progress=False)
  message = str(error.value)
  assert "\n" not in message and message.startswith(f"{os.path.join(cfg.model_dir, 'ckpt-5')} does not fit")
  assert "rerun with the hparams the run was started with" in message
  assert capsys.readouterr().err == ""  # TensorFlow's warnings about the values it did not restore are not shown
