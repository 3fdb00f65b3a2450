"""A ``run_pretraining.py`` model directory is a first-class input: ``convert`` inspects and exports it
(transformers and keras-hub give the trained networks' outputs), a given step can be chosen, fine-tuning and
pre-training's ``init_checkpoint`` read it through the same loader, and a run without its saved hparams
gets one clear line. One tiny run serves every test of the file."""

import json
import os

import numpy as np
import pytest

from conftest import require_module
import _convert_testlib as convert_lib


@pytest.fixture(scope="module")
def run(tmp_path_factory, data_dir, bert_vocab):
  """The run every test here reads: 10 tiny steps on a ~300-token vocab (checkpoints at steps 5 and 10), a
  generator of half the width, E 16 < H 32; and its trainer."""
  return convert_lib.tiny_pretraining_run(tmp_path_factory.mktemp("run"), data_dir, bert_vocab, num_train_steps=10,
                                          iterations_per_loop=5, save_checkpoints_steps=5, generator_hidden_size=0.5,
                                          embedding_size=16)


def _convert(args, capsys):
  from electra_tf.cli import convert
  code = convert.main(args)
  out = capsys.readouterr()
  return code, out.out, out.err


def test_the_run_saves_its_hparams_beside_its_checkpoints(run):
  cfg, _ = run
  with open(os.path.join(cfg.model_dir, cfg.SAVED_CONFIG_FILE), encoding="utf-8") as f:
    saved = json.load(f)
  assert saved["vocab_size"] == cfg.vocab_size < 310 and saved["generator_hidden_size"] == 0.5
  assert saved["model_hparam_overrides"]["hidden_size"] == 32


def test_inspect_reads_the_run_at_its_latest_or_a_given_step(run, capsys):
  cfg, t = run
  code, out, err = _convert(["inspect", cfg.model_dir], capsys)
  assert code == 0, err
  assert "format: pretraining-run" in out and "global_step: 10" in out
  assert f"vocab: {cfg.vocab_file}" in out
  code, out, _ = _convert(["inspect", os.path.join(cfg.model_dir, "ckpt-5")], capsys)
  assert code == 0 and "global_step: 5" in out

  from electra_tf.convert import read_source
  from electra_tf.checkpoint_names import reference_variables
  source = read_source(cfg.model_dir)
  ours = reference_variables(t.model.networks)
  assert sorted(source.arrays) == sorted(ours)
  for name, var in ours.items():
    np.testing.assert_array_equal(source.arrays[name], var.numpy(), err_msg=name)
  older = read_source(os.path.join(cfg.model_dir, "ckpt-5")).arrays
  assert any(not np.array_equal(older[n], source.arrays[n]) for n in source.arrays)


def test_export_hf_of_the_run_gives_the_trained_discriminators_logits(run, tmp_path, capsys):
  transformers = require_module("transformers")
  require_module("torch")
  cfg, t = run
  out = tmp_path / "hf"
  code, _, err = _convert(["export-hf", cfg.model_dir, "--output", str(out)], capsys)
  assert code == 0, err
  assert sorted(os.listdir(out)) == ["discriminator", "generator"]
  assert (out / "discriminator" / "vocab.txt").read_text() == open(cfg.vocab_file).read()
  hf = transformers.ElectraForPreTraining.from_pretrained(str(out / "discriminator"))
  inputs = convert_lib.random_inputs(cfg.vocab_size)
  ours = convert_lib.our_logits(t.model.networks.discriminator, inputs)
  theirs = convert_lib.hf_logits(hf, inputs)
  diff = convert_lib.max_diff(ours, theirs)
  assert diff <= 1e-4, (diff, np.abs(ours).max(), ours[:, :6], theirs[:, :6])
  gen = transformers.ElectraForMaskedLM.from_pretrained(str(out / "generator"))
  diff = convert_lib.max_diff(convert_lib.our_logits(t.model.networks.generator, inputs),
                              convert_lib.hf_logits(gen, inputs))
  assert diff <= 1e-4, diff


def test_export_tf1_of_the_run_is_a_reference_checkpoint(run, tmp_path, capsys):
  import tensorflow as tf
  cfg, t = run
  code, _, err = _convert(["export-tf1", cfg.model_dir, "--output", str(tmp_path / "tf1")], capsys)
  assert code == 0, err
  reader = tf.train.load_checkpoint(str(tmp_path / "tf1"))
  assert int(reader.get_tensor("global_step")) == 10
  emb = t.model.networks.discriminator.encoder.embeddings.word_embeddings.numpy()
  np.testing.assert_array_equal(reader.get_tensor("electra/embeddings/word_embeddings"), emb)


def test_finetuning_and_init_checkpoint_read_the_run_through_the_same_loader(run):
  from electra_tf.checkpoint_names import reference_variables
  from electra_tf.convert import load_pretrained_weights
  from electra_tf.modeling import ElectraEncoder, build_pretraining_networks
  cfg, t = run
  trained = reference_variables(t.model.networks)
  fresh = build_pretraining_networks(cfg)  # what init_checkpoint loads into
  report = load_pretrained_weights(cfg.model_dir, fresh)
  assert report.format == "pretraining-run" and not report.missing and report.global_step == 10
  for name, var in reference_variables(fresh).items():
    np.testing.assert_array_equal(var.numpy(), trained[name].numpy(), err_msg=name)
  encoder = ElectraEncoder(cfg.discriminator_config(), name="electra")  # what fine-tuning loads into
  encoder.dummy_build()
  report = load_pretrained_weights(os.path.join(cfg.model_dir, "ckpt-10"), encoder)
  assert not report.missing and any(n.startswith("generator") for n in report.unused)
  np.testing.assert_array_equal(encoder.embeddings.word_embeddings.numpy(),
                                trained["electra/embeddings/word_embeddings"].numpy())


def test_a_run_without_its_saved_hparams_is_one_clear_line(run, tmp_path, capsys):
  import shutil
  cfg, _ = run
  copy = tmp_path / "old_run"
  shutil.copytree(cfg.model_dir, copy)
  os.remove(copy / cfg.SAVED_CONFIG_FILE)
  code, _, err = _convert(["inspect", str(copy)], capsys)
  assert code == 2
  assert err.count("\n") == 1 and "pretraining_config.json" in err


def test_a_run_with_a_truncated_data_file_is_one_clear_line_for_convert_and_the_loader(run, tmp_path, capsys):
  """A cut ``.data`` file opens (the ``.index`` lists every variable) and fails only when values are read,
  inside TensorFlow's restore; every reader of the run reports it as one line and writes nothing."""
  import shutil
  from electra_tf.convert import load_pretrained_weights
  from electra_tf.errors import ConversionError
  from electra_tf.modeling import ElectraEncoder
  cfg, _ = run
  copy = tmp_path / "cut_run"
  shutil.copytree(cfg.model_dir, copy)
  for data in copy.glob("ckpt-10.data-*"):
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 3])
  code, _, err = _convert(["inspect", str(copy)], capsys)
  assert code == 2 and err.count("\n") == 1, err
  assert "its .data file is truncated or corrupt" in err and "ckpt-10" in err
  encoder = ElectraEncoder(cfg.discriminator_config(), name="electra")  # fine-tuning's --init-checkpoint
  encoder.dummy_build()
  with pytest.raises(ConversionError) as error:
    load_pretrained_weights(str(copy), encoder)
  assert "its .data file is truncated or corrupt" in str(error.value) and "\n" not in str(error.value)
  assert sorted(p.name for p in tmp_path.iterdir()) == ["cut_run"]  # nothing written


@pytest.mark.slow
def test_a_pretraining_runs_preset_gives_the_runs_and_transformers_outputs(run, tmp_path, capsys):
  transformers = require_module("transformers")
  torch = require_module("torch")
  keras_hub = require_module("keras_hub")
  from electra_tf.checkpoint_names import reference_variables
  from electra_tf.convert import load_pretrained_weights
  from electra_tf.modeling import build_pretraining_networks
  cfg, t = run
  nets = t.model.networks
  for what in ("discriminator", "generator"):
    code, out, err = _convert(["export-keras-hub", cfg.model_dir, "-o", str(tmp_path / what), "--what", what], capsys)
    assert code == 0, err
  code, _, err = _convert(["export-hf", cfg.model_dir, "-o", str(tmp_path / "hf")], capsys)
  assert code == 0, err

  inputs = convert_lib.random_inputs(cfg.vocab_size, seq=16)  # padded second row, two segments
  ids, mask, seg = (torch.tensor(x, dtype=torch.long) for x in inputs)
  for what, encoder, hf_class in (("discriminator", nets.discriminator.encoder, transformers.ElectraModel),
                                  ("generator", nets.generator.encoder, transformers.ElectraForMaskedLM)):
    backbone = keras_hub.models.ElectraBackbone.from_preset(str(tmp_path / what))
    kh = convert_lib.keras_hub_outputs(backbone, inputs)
    ours = convert_lib.encoder_outputs(encoder, inputs)
    hf = hf_class.from_pretrained(str(tmp_path / "hf" / what)).eval()
    hf_encoder = hf if what == "discriminator" else hf.electra
    with torch.no_grad():
      theirs = hf_encoder(input_ids=ids, attention_mask=mask, token_type_ids=seg).last_hidden_state.numpy()
    print(f"{what}: max |sequence output diff| keras-hub vs electra-tf {convert_lib.max_diff(kh, ours):.1e}, "
          f"keras-hub vs transformers {convert_lib.max_diff(kh, theirs):.1e}, electra-tf vs transformers "
          f"{convert_lib.max_diff(ours, theirs):.1e} (max |output| {np.abs(ours).max():.2f})")
    assert convert_lib.max_diff(kh, ours) <= 1e-4, (what, convert_lib.max_diff(kh, ours))
    assert convert_lib.max_diff(kh, theirs) <= 1e-4, (what, convert_lib.max_diff(kh, theirs))
    assert convert_lib.max_diff(ours, theirs) <= 1e-5
    assert np.abs(ours).max() > 0.5
  meta = json.loads((tmp_path / "generator" / "config.json").read_text())["config"]
  assert (meta["hidden_dim"], meta["embedding_dim"], meta["num_heads"]) == (16, 16, 1)

  tokenizer = keras_hub.models.ElectraTokenizer.from_preset(str(tmp_path / "discriminator"))
  from electra_tf.tokenization import FullTokenizer
  reference = FullTokenizer(cfg.vocab_file, True)
  text = "The film's first hour is a Wonderful, quiet thing."
  assert [int(i) for i in tokenizer(text)] == reference.convert_tokens_to_ids(reference.tokenize(text))

  # pre-training's init_checkpoint reads the preset: the discriminator's encoder, nothing else.
  fresh = build_pretraining_networks(cfg)
  report = load_pretrained_weights(str(tmp_path / "discriminator"), fresh)
  trained = reference_variables(nets)
  assert report.loaded and all(n.startswith("electra/") for n in report.loaded)
  assert any(n.startswith("discriminator_predictions/") for n in report.missing)
  for name in report.loaded:
    np.testing.assert_array_equal(reference_variables(fresh)[name].numpy(), trained[name].numpy(), err_msg=name)


def test_finetuning_a_run_with_another_head_count_is_refused_in_one_line(run, tmp_path, data_dir, capsys):
  """The run has 2 heads at width 32, where the reference's rule gives 1: the weights fit a 1-head model just
  as well, so the run's own hparams are what tell; fine-tuning (and pre-training's ``init_checkpoint``) with
  another head count stops before training and names the override that matches."""
  import dataclasses
  from electra_tf.cli.finetune import main
  from electra_tf.convert import load_pretrained_weights
  from electra_tf.errors import ConversionError
  from electra_tf.modeling import build_pretraining_networks
  from _finetuning_testlib import rt_polarity_as_sst
  cfg, _ = run
  assert cfg.discriminator_config().num_attention_heads == 2
  rt_polarity_as_sst(tmp_path, data_dir, n_train=8, n_dev=8)
  model = {"hidden_size": 32, "num_hidden_layers": 1, "intermediate_size": 64}
  hparams = dict(vocab_file=cfg.vocab_file, vocab_size=cfg.vocab_size, embedding_size=16, max_seq_length=32,
                 train_batch_size=8, eval_batch_size=8, model_hparam_overrides=model)
  argv = ["--data-dir", str(tmp_path), "--model-name", "m2", "--task", "sst", "--init-checkpoint", cfg.model_dir,
          "--no-progress", "--hparams", json.dumps(hparams)]
  assert main(argv) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err == [f"error: {cfg.model_dir}: the checkpoint's model has 2 attention heads, this run's 1; set "
                 '"model_hparam_overrides": {"num_attention_heads": 2}'], err
  assert not (tmp_path / "models" / "m2" / "finetuning_models").exists()

  hparams["model_hparam_overrides"] = dict(model, num_attention_heads=2)  # the fix the line names
  assert main(argv[:-1] + [json.dumps(hparams)]) == 0, capsys.readouterr().err

  one_head = dataclasses.replace(cfg, model_hparam_overrides={**cfg.model_hparam_overrides, "num_attention_heads": 1})
  with pytest.raises(ConversionError, match=r"has 2 attention heads, this run's 1"):
    load_pretrained_weights(cfg.model_dir, build_pretraining_networks(one_head))  # pre-training's init_checkpoint


def test_a_tf1_export_of_the_run_keeps_its_head_count(run, tmp_path):
  import electra_tf
  from electra_tf.convert import read_source, write_tf1
  from electra_tf.keras_encoder import INPUT_NAMES
  cfg, t = run
  source = read_source(cfg.model_dir)
  write_tf1(str(tmp_path / "tf1"), source.arrays, source.global_step, cfg.vocab_file,
            architecture=source.architecture)
  back = read_source(str(tmp_path / "tf1"))
  assert back.format == "tf1" and back.architecture == source.architecture
  assert back.architecture.discriminator.num_attention_heads == 2
  inputs = convert_lib.random_inputs(cfg.vocab_size)
  model = electra_tf.load_encoder(str(tmp_path / "tf1"))
  ours = model(dict(zip(INPUT_NAMES, inputs)), training=False).numpy()
  expected = convert_lib.encoder_outputs(t.model.networks.discriminator.encoder, inputs)
  assert convert_lib.max_diff(ours, expected) <= 1e-5
