"""Reference TF1 checkpoints: a checkpoint written with tf.compat.v1 variables and a Saver in the
reference's layout (spec section 4, names written out here independently of our name map, Adam slots and
global_step included) -> our importer -> our networks give the same outputs as transformers' own TF1
loader (``load_tf_weights_in_electra``) fed the same file; and import -> export TF1 gives identical arrays."""

import contextlib
import io

import numpy as np
import pytest
import tensorflow as tf

from conftest import require_module
from electra_tf.convert import (infer_architecture, load_pretrained_weights, read_source, write_model_dir,
                                write_tf1)

import _convert_testlib as lib

# Tiny dimensions: V, E, positions, H, L, FFN (discriminator); Hg, Lg (generator: half width, 2/2 layers).
V, E, P, H, L, HG, LG = 99, 24, 64, 32, 2, 16, 2


def _encoder_layout(scope, hidden, layers, with_project):
  names = {}
  if with_project:
    names[f"{scope}/embeddings_project/kernel"] = [E, hidden]
    names[f"{scope}/embeddings_project/bias"] = [hidden]
  for i in range(layers):
    p = f"{scope}/encoder/layer_{i}"
    for dense in ("attention/self/query", "attention/self/key", "attention/self/value", "attention/output/dense"):
      names[f"{p}/{dense}/kernel"], names[f"{p}/{dense}/bias"] = [hidden, hidden], [hidden]
    names[f"{p}/intermediate/dense/kernel"], names[f"{p}/intermediate/dense/bias"] = [hidden, 4 * hidden], [4 * hidden]
    names[f"{p}/output/dense/kernel"], names[f"{p}/output/dense/bias"] = [4 * hidden, hidden], [hidden]
    for ln in ("attention/output/LayerNorm", "output/LayerNorm"):
      names[f"{p}/{ln}/beta"], names[f"{p}/{ln}/gamma"] = [hidden], [hidden]
  return names


def reference_layout():
  """{name: shape} of a reference pre-training checkpoint, transcribed from the spec."""
  names = {"electra/embeddings/word_embeddings": [V, E], "electra/embeddings/token_type_embeddings": [2, E],
           "electra/embeddings/position_embeddings": [P, E], "electra/embeddings/LayerNorm/beta": [E],
           "electra/embeddings/LayerNorm/gamma": [E],
           "discriminator_predictions/dense/kernel": [H, H], "discriminator_predictions/dense/bias": [H],
           "discriminator_predictions/dense_1/kernel": [H, 1], "discriminator_predictions/dense_1/bias": [1],
           "generator_predictions/dense/kernel": [HG, E], "generator_predictions/dense/bias": [E],
           "generator_predictions/LayerNorm/beta": [E], "generator_predictions/LayerNorm/gamma": [E],
           "generator_predictions/output_bias": [V]}
  names.update(_encoder_layout("electra", H, L, True))
  names.update(_encoder_layout("generator", HG, LG, True))
  return names


def write_reference_checkpoint(prefix, layout, seed=0, slots=True):
  """The reference's way: tf.compat.v1 variables in a graph, saved by a tf.compat.v1 Saver."""
  rng = np.random.default_rng(seed)
  values = {n: rng.normal(0, 0.5, s).astype(np.float32) for n, s in layout.items()}
  graph = tf.Graph()
  with graph.as_default():
    for name, value in values.items():
      tf.compat.v1.get_variable(name, initializer=value)
      if slots:  # AdamWeightDecayOptimizer slots, which an importer must ignore
        tf.compat.v1.get_variable(name + "/adam_m", initializer=np.zeros_like(value))
        tf.compat.v1.get_variable(name + "/adam_v", initializer=np.ones_like(value))
    tf.compat.v1.get_variable("global_step", initializer=np.int64(1234))
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session(graph=graph) as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      saver.save(sess, prefix)
  return values


@pytest.fixture(scope="module")
def reference_ckpt(tmp_path_factory):
  folder = tmp_path_factory.mktemp("reference")
  prefix = str(folder / "model.ckpt-1234")
  values = write_reference_checkpoint(prefix, reference_layout())
  return prefix, values


@pytest.fixture(scope="module")
def imported(reference_ckpt, tmp_path_factory):
  prefix, _ = reference_ckpt
  source = read_source(prefix)
  model_dir = str(tmp_path_factory.mktemp("imported") / "model")
  write_model_dir(model_dir, source)
  return source, model_dir


def _transformers_model(prefix, which):
  transformers = require_module("transformers")
  require_module("torch")
  from transformers.models.electra.modeling_electra import load_tf_weights_in_electra
  hidden, layers = (H, L) if which == "discriminator" else (HG, LG)
  config = transformers.ElectraConfig(vocab_size=V, embedding_size=E, hidden_size=hidden, num_hidden_layers=layers,
                                      num_attention_heads=max(1, hidden // 64), intermediate_size=4 * hidden,
                                      max_position_embeddings=P, layer_norm_eps=1e-12)
  cls = transformers.ElectraForPreTraining if which == "discriminator" else transformers.ElectraForMaskedLM
  model = cls(config)
  with contextlib.redirect_stdout(io.StringIO()):  # it prints a line per (skipped) variable
    load_tf_weights_in_electra(model, config, prefix, discriminator_or_generator=which)
  return model


def test_architecture_and_ignored_variables(imported):
  source, _ = imported
  arch = source.architecture
  assert (arch.discriminator.hidden_size, arch.discriminator.num_hidden_layers, arch.discriminator.embedding_size,
          arch.discriminator.max_position_embeddings) == (H, L, E, P)
  assert (arch.generator.hidden_size, arch.generator.num_hidden_layers, arch.generator_fraction) == (HG, LG, 0.5)
  assert source.global_step == 1234
  assert all(n.endswith(("/adam_m", "/adam_v")) for n in source.ignored) and source.ignored
  assert "generator L=2 H=16 (fraction 0.5)" in arch.describe()


@pytest.mark.parametrize("which", ["discriminator", "generator"])
def test_imported_model_matches_transformers_tf1_loader(reference_ckpt, imported, which):
  prefix, _ = reference_ckpt
  source, model_dir = imported
  nets = lib.perturbed_networks(None, seed=3, **source.architecture.pretraining_hparams())
  report = load_pretrained_weights(model_dir, nets, require_all=True)
  assert report.format == "electra-tf" and not report.missing
  inputs = lib.random_inputs(V, seq=10)
  ours = lib.our_logits(getattr(nets, which), inputs)
  theirs = lib.hf_logits(_transformers_model(prefix, which), inputs)
  diff = lib.max_diff(ours, theirs)
  print(f"TF1 {which}: max |ours - transformers' TF1 loader| = {diff:.2e}")
  assert diff <= 1e-4


def test_direct_tf1_load_equals_model_dir_load(reference_ckpt, imported):
  prefix, _ = reference_ckpt
  source, model_dir = imported
  a = lib.perturbed_networks(None, seed=4, **source.architecture.pretraining_hparams())
  b = lib.perturbed_networks(None, seed=5, **source.architecture.pretraining_hparams())
  load_pretrained_weights(prefix, a, require_all=True)
  load_pretrained_weights(model_dir, b, require_all=True)
  inputs = lib.random_inputs(V, seq=10)
  np.testing.assert_array_equal(lib.our_logits(a.discriminator, inputs), lib.our_logits(b.discriminator, inputs))


def test_round_trip_import_export_tf1_is_identical(reference_ckpt, imported, tmp_path):
  _, values = reference_ckpt
  _, model_dir = imported
  source = read_source(model_dir)
  prefix = write_tf1(str(tmp_path / "exported"), source.arrays, global_step=source.global_step)
  reader = tf.train.load_checkpoint(str(tmp_path / "exported"))  # the directory resolves via "checkpoint"
  shapes = reader.get_variable_to_shape_map()
  assert set(shapes) == set(values) | {"global_step"}
  assert reader.get_tensor("global_step") == 1234 and prefix.endswith("model.ckpt-1234")
  for name, value in values.items():
    np.testing.assert_array_equal(reader.get_tensor(name), value, err_msg=name)


def test_discriminator_only_checkpoint_loads_into_discriminator(tmp_path):
  layout = {n: s for n, s in reference_layout().items() if not n.startswith("generator")}
  prefix = str(tmp_path / "disc.ckpt")
  write_reference_checkpoint(prefix, layout, slots=False)
  arch = read_source(prefix).architecture
  assert arch.generator is None and "no generator weights" in arch.describe()
  nets = lib.perturbed_networks(None, **arch.pretraining_hparams())
  report = load_pretrained_weights(prefix, nets)
  assert report.missing and all(n.startswith("generator") for n in report.missing)
  assert "keep their initialisation" in report.summary()


@pytest.mark.parametrize("hidden,layers,gen_hidden,expected", [
    (256, 12, 256, "found ELECTRA small++ discriminator L=12 H=256 E=128 V=30522, generator L=12 H=256 (fraction 1.0)"),
    (256, 12, 64, "found ELECTRA small discriminator L=12 H=256 E=128 V=30522, generator L=12 H=64 (fraction 0.25)"),
    (768, 12, 256, "found ELECTRA base discriminator L=12 H=768 E=768 V=30522, generator L=12 H=256 "
                   "(fraction 0.33333)"),
    (1024, 24, 256, "found ELECTRA large discriminator L=24 H=1024 E=1024 V=30522, generator L=24 H=256 "
                    "(fraction 0.25)")])
def test_size_inference_from_shapes_only(hidden, layers, gen_hidden, expected):
  emb = 128 if hidden == 256 else hidden
  shapes = {"electra/embeddings/word_embeddings": [30522, emb], "electra/embeddings/position_embeddings": [512, emb],
            "electra/embeddings/token_type_embeddings": [2, emb],
            "discriminator_predictions/dense_1/kernel": [hidden, 1], "generator_predictions/output_bias": [30522]}
  for scope, h in (("electra", hidden), ("generator", gen_hidden)):
    for i in range(layers):
      shapes[f"{scope}/encoder/layer_{i}/attention/self/query/kernel"] = [h, h]
      shapes[f"{scope}/encoder/layer_{i}/intermediate/dense/kernel"] = [h, 4 * h]
  arch = infer_architecture(shapes)
  assert arch.describe() == expected
  gen_cfg = arch.pretraining_config().generator_config()
  assert (gen_cfg.hidden_size, gen_cfg.num_attention_heads, gen_cfg.intermediate_size) == (
      gen_hidden, max(1, gen_hidden // 64), 4 * gen_hidden)
