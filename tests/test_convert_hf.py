"""Hugging Face export/import: our networks -> config.json + model.safetensors -> transformers (PyTorch)
gives the same logits; and the HF directories read back to identical arrays."""

import json

import numpy as np
import pytest

from conftest import require_module
from electra_tf.convert import read_source, source_from_networks, write_hf, load_pretrained_weights
from electra_tf.convert.architecture import ConversionError

import _convert_testlib as lib

transformers = require_module("transformers")
require_module("torch")

TOLERANCE = 1e-4


@pytest.fixture(scope="module", params=["small", "small++"])
def exported(request, tmp_path_factory):
  """(preset, our networks, their Source, disc dir, gen dir) for small (generator 1/4) and small++ (1.0)."""
  nets = lib.perturbed_networks(request.param)
  out = tmp_path_factory.mktemp(request.param.replace("+", "p"))
  source = source_from_networks(nets)
  disc_dir = write_hf(str(out / "discriminator"), source, "discriminator")
  gen_dir = write_hf(str(out / "generator"), source, "generator")
  return request.param, nets, source, disc_dir, gen_dir


def test_discriminator_logits_match_transformers(exported):
  preset, nets, _, disc_dir, _ = exported
  hf = transformers.ElectraForPreTraining.from_pretrained(disc_dir)
  inputs = lib.random_inputs(nets.discriminator.config.vocab_size)
  diff = lib.max_diff(lib.our_logits(nets.discriminator, inputs), lib.hf_logits(hf, inputs))
  print(f"{preset} discriminator max |diff| = {diff:.2e}")
  assert diff <= TOLERANCE


def test_generator_logits_match_transformers(exported):
  preset, nets, _, _, gen_dir = exported
  with open(f"{gen_dir}/config.json") as f:
    config = json.load(f)
  gen = nets.generator.config
  assert (config["hidden_size"], config["num_hidden_layers"], config["embedding_size"]) == (
      gen.hidden_size, gen.num_hidden_layers, 128)
  assert config["hidden_size"] == (256 if preset == "small++" else 64)
  hf, info = transformers.ElectraForMaskedLM.from_pretrained(gen_dir, output_loading_info=True)
  assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
  inputs = lib.random_inputs(gen.vocab_size)
  diff = lib.max_diff(lib.our_logits(nets.generator, inputs), lib.hf_logits(hf, inputs))
  print(f"{preset} generator max |diff| = {diff:.2e}")
  assert diff <= TOLERANCE


def test_hf_import_gives_identical_arrays(exported):
  _, _, source, disc_dir, gen_dir = exported
  back = read_source(disc_dir, generator_path=gen_dir)
  assert back.architecture == source.architecture
  assert sorted(back.arrays) == sorted(source.arrays)
  for name, value in source.arrays.items():
    np.testing.assert_array_equal(back.arrays[name], value, err_msg=name)


def test_load_hf_discriminator_into_fresh_networks(exported):
  preset, nets, _, disc_dir, _ = exported
  fresh = lib.perturbed_networks(preset, seed=7)
  report = load_pretrained_weights(disc_dir, fresh.discriminator, require_all=True)
  assert not report.missing and report.format == "huggingface"
  inputs = lib.random_inputs(nets.discriminator.config.vocab_size)
  np.testing.assert_array_equal(lib.our_logits(fresh.discriminator, inputs),
                                lib.our_logits(nets.discriminator, inputs))


def test_hf_model_of_another_architecture_is_one_clear_line(tmp_path):
  (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertModel"]}))
  (tmp_path / "model.safetensors").write_bytes(b"")
  with pytest.raises(ConversionError, match=r"Hugging Face 'bert' model, not ELECTRA") as err:
    read_source(str(tmp_path))
  assert "\n" not in str(err.value)


# Width 128 gives max(1, 128 // 64) = 2 heads by the reference's rule; these networks have 4, which only the
# config beside the weights can tell.
FOUR_HEADS = dict(vocab_size=120, embedding_size=32, generator_hidden_size=0.25,
                  model_hparam_overrides=dict(hidden_size=128, num_hidden_layers=1, num_attention_heads=4,
                                              intermediate_size=128, max_position_embeddings=64))


@pytest.fixture(scope="module")
def four_heads(tmp_path_factory):
  """(networks with 4 heads, their Source, HF discriminator directory, HF generator directory)."""
  nets = lib.perturbed_networks(None, seed=5, **FOUR_HEADS)
  out = tmp_path_factory.mktemp("four_heads")
  source = source_from_networks(nets)
  return (nets, source, write_hf(str(out / "discriminator"), source, "discriminator"),
          write_hf(str(out / "generator"), source, "generator"))


def _loaded_encoder_outputs(path, inputs):
  """(head count, sequence output) of ``electra_tf.load_encoder(path)``."""
  import electra_tf
  from electra_tf.keras_encoder import INPUT_NAMES
  model = electra_tf.load_encoder(path)
  return model.encoder.config.num_attention_heads, model(dict(zip(INPUT_NAMES, inputs)), training=False).numpy()


def test_a_transformers_directory_is_loaded_with_its_own_head_count(four_heads):
  nets, source, disc_dir, gen_dir = four_heads
  with open(f"{disc_dir}/config.json") as f:
    assert json.load(f)["num_attention_heads"] == 4
  inputs = lib.random_inputs(FOUR_HEADS["vocab_size"])
  expected = lib.encoder_outputs(nets.discriminator.encoder, inputs)
  heads, ours = _loaded_encoder_outputs(disc_dir, inputs)
  assert heads == 4 and lib.max_diff(ours, expected) <= 1e-5, (heads, lib.max_diff(ours, expected))
  assert read_source(disc_dir, generator_path=gen_dir).architecture == source.architecture
  hf = transformers.ElectraForPreTraining.from_pretrained(disc_dir)
  assert lib.max_diff(lib.our_logits(nets.discriminator, inputs), lib.hf_logits(hf, inputs)) <= TOLERANCE


def test_inspect_and_import_hf_report_the_head_count_and_the_model_directory_keeps_it(four_heads, tmp_path, capsys):
  from electra_tf.cli.convert import main
  nets, _, disc_dir, gen_dir = four_heads
  assert main(["inspect", disc_dir]) == 0
  out = capsys.readouterr().out
  assert "H=128 E=32 V=120 heads=4" in out and '"num_attention_heads": 4' in out, out
  model_dir = tmp_path / "model"
  assert main(["import-hf", disc_dir, "--generator", gen_dir, "-o", str(model_dir)]) == 0
  assert "heads=4" in capsys.readouterr().out
  meta = json.loads((model_dir / "electra_config.json").read_text())
  assert meta["architecture"]["discriminator"]["num_attention_heads"] == 4
  assert meta["pretraining_hparams"]["model_hparam_overrides"]["num_attention_heads"] == 4
  inputs = lib.random_inputs(FOUR_HEADS["vocab_size"])
  heads, ours = _loaded_encoder_outputs(str(model_dir), inputs)
  assert heads == 4 and lib.max_diff(ours, lib.encoder_outputs(nets.discriminator.encoder, inputs)) <= 1e-5


def test_a_tf1_export_keeps_the_head_count_in_the_hparams_beside_it(four_heads, tmp_path):
  import os
  from electra_tf.convert import write_tf1
  nets, source, _, _ = four_heads
  write_tf1(str(tmp_path / "tf1"), source.arrays, 7, architecture=source.architecture)
  assert read_source(str(tmp_path / "tf1")).architecture == source.architecture
  inputs = lib.random_inputs(FOUR_HEADS["vocab_size"])
  heads, ours = _loaded_encoder_outputs(str(tmp_path / "tf1"), inputs)
  assert heads == 4 and lib.max_diff(ours, lib.encoder_outputs(nets.discriminator.encoder, inputs)) <= 1e-5
  os.remove(tmp_path / "tf1" / "pretraining_config.json")  # a bare reference checkpoint: the reference's rule
  assert read_source(str(tmp_path / "tf1")).architecture.discriminator.num_attention_heads == 2


def test_loading_into_a_model_with_another_head_count_or_an_unbuildable_config_is_one_line(four_heads, tmp_path):
  import shutil
  from electra_tf.configs import model_config_for_size
  from electra_tf.modeling import ElectraEncoder
  _, _, disc_dir, _ = four_heads
  overrides = {k: v for k, v in FOUR_HEADS["model_hparam_overrides"].items() if k != "num_attention_heads"}
  encoder = ElectraEncoder(model_config_for_size("small", 120, 32, overrides), name="electra")
  encoder.dummy_build()
  with pytest.raises(ConversionError) as err:
    load_pretrained_weights(disc_dir, encoder)
  assert str(err.value) == (f"{disc_dir}: the checkpoint's model has 4 attention heads, this run's 2; set "
                            '"model_hparam_overrides": {"num_attention_heads": 4}')
  shutil.copytree(disc_dir, tmp_path / "tanh_gelu")
  config = json.loads((tmp_path / "tanh_gelu" / "config.json").read_text())
  (tmp_path / "tanh_gelu" / "config.json").write_text(json.dumps(dict(config, hidden_act="gelu_new")))
  with pytest.raises(ConversionError, match=r"config\.json: hparam 'hidden_act'.*'gelu_new'") as err:
    read_source(str(tmp_path / "tanh_gelu"))
  assert "\n" not in str(err.value)
