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
