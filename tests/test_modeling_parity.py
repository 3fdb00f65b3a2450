"""Our networks against an independent implementation: transformers' PyTorch ELECTRA on identical weights.

The main check starts from transformers: a discriminator and generator with perturbed weights (no bias 0,
no LayerNorm gain 1, every tensor distinct), saved with ``save_pretrained``, loaded by
``convert.load_pretrained_weights`` (what ``--init-checkpoint`` calls) into networks built from our presets;
every hidden state and the logits must match. Other checks send our weights the other way, through
``hf_mapping.to_hf_state_dict`` (the exporter's core), where every HF parameter must be filled: a missed or
misnamed weight fails the strict load rather than silently keeping a random value.
"""

import numpy as np
import pytest
import tensorflow as tf

from conftest import require_module
from electra_tf import checkpoint_names, configs, convert
from electra_tf.convert import hf_mapping
from electra_tf.modeling import build_pretraining_networks

torch = require_module("torch")
transformers = require_module("transformers")

# Max |difference| allowed at every hidden state and the logits (float32 on CPU). Measured 2026-11-25 on
# perturbed weights (test_perturbed_transformers_checkpoint_loads_to_the_same_outputs, printed with -s), hidden
# states / logits: small discriminator 5.7e-6 / 7.2e-7, generator 3.3e-6 / 2.0e-6; small++ (2 layers)
# 2.9e-6 / 7.5e-7 and 3.2e-6 / 3.2e-6; base width (2 layers) 6.2e-6 / 3.0e-6 and 3.3e-6 / 6.7e-6. The
# values reach 5-9 in magnitude, so these are float32 rounding (epsilon 1.2e-7) in a different order of
# operations: about 1e-6 relative. 2e-5 leaves a 3x margin; one swapped LayerNorm moves the outputs by more
# than 1,000 times the tolerance (test_a_swapped_layernorm_in_the_checkpoint_is_caught).
TOLERANCE = 2e-5


def _batch(vocab_size, batch=3, length=24, seed=0):
  """Random ids with padding of different lengths and both segments."""
  rng = np.random.RandomState(seed)
  ids = rng.randint(1, vocab_size, (batch, length)).astype(np.int32)
  mask = np.ones_like(ids)
  seg = np.zeros_like(ids)
  for row, real in enumerate([length, length - 7, 5][:batch]):
    mask[row, real:] = 0
    ids[row, real:] = 0
    seg[row, real // 2:real] = 1
  return ids, mask, seg


def _hf_models(nets, cfg):
  """transformers models holding ``nets``' weights, through the exporter's mapping (every HF parameter filled:
  a missed or misnamed weight fails the strict load)."""
  arrays = {name: var.numpy() for name, var in checkpoint_names.reference_variables(nets).items()}
  models = {}
  for target, cls, model_cfg in [
      (hf_mapping.DISCRIMINATOR, transformers.ElectraForPreTraining, cfg.discriminator_config()),
      (hf_mapping.GENERATOR, transformers.ElectraForMaskedLM, cfg.generator_config())]:
    hf_cfg = transformers.ElectraConfig(**hf_mapping.hf_config_dict(model_cfg), attn_implementation="eager")
    model = cls(hf_cfg).eval()
    state = {k: torch.tensor(v) for k, v in hf_mapping.to_hf_state_dict(arrays, target).items()}
    expected = set(model.state_dict())
    assert set(state) == expected, (sorted(expected - set(state)), sorted(set(state) - expected))
    model.load_state_dict(state, strict=True)
    models[target] = model
  return models


def _torch_inputs(ids, mask, seg):
  return dict(input_ids=torch.tensor(ids, dtype=torch.long), attention_mask=torch.tensor(mask),
              token_type_ids=torch.tensor(seg, dtype=torch.long), output_hidden_states=True)


# The paper's sizes written out as transformers configs (Table 6 of Clark et al. 2020: E, H, L, heads, FFN;
# the generator at 1/4 width for Small, 1/3 for Base), independent of our presets: (discriminator, generator).
HF_SHAPES = {
    "small": (dict(embedding_size=128, hidden_size=256, num_hidden_layers=12, num_attention_heads=4,
                   intermediate_size=1024),
              dict(embedding_size=128, hidden_size=64, num_hidden_layers=12, num_attention_heads=1,
                   intermediate_size=256)),
    # Released ELECTRA-Small++: a full-width generator, so its E=128 != H=256 (its projection exercised); two
    # layers (CPU time).
    "small++-2-layers": (dict(embedding_size=128, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=1024),
                         dict(embedding_size=128, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=1024)),
    # Base width at two layers (CPU time).
    "base-2-layers": (dict(embedding_size=768, hidden_size=768, num_hidden_layers=2, num_attention_heads=12,
                           intermediate_size=3072),
                      dict(embedding_size=768, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=1024)),
}
OUR_SHAPES = {"small": dict(preset="small"),
              "small++-2-layers": dict(preset="small++", model_hparam_overrides={"num_hidden_layers": 2}),
              "base-2-layers": dict(preset="base", model_hparam_overrides={"num_hidden_layers": 2})}


def _perturb(model, generator):
  """Every parameter random and distinct: LayerNorm gains in [0.5, 1.5], every bias and LayerNorm offset
  N(0, 0.1), every matrix and table N(0, 0.05); so a swapped gamma/beta, a bias on the wrong layer or a
  missing transpose changes the output."""
  with torch.no_grad():
    for name, param in model.named_parameters():
      if name.endswith("LayerNorm.weight"):
        param.copy_(torch.empty_like(param).uniform_(0.5, 1.5, generator=generator))
      elif name.endswith("bias"):
        param.copy_(torch.empty_like(param).normal_(0.0, 0.1, generator=generator))
      else:
        param.copy_(torch.empty_like(param).normal_(0.0, 0.05, generator=generator))


def _saved_hf_pair(tmp_path, shape, vocab_size=30522):
  """A transformers discriminator and generator with perturbed weights, saved as users get them from the hub:
  ``save_pretrained`` directories (safetensors). The generator shares the discriminator's embeddings, as the
  reference trains them."""
  generator = torch.Generator().manual_seed(0)
  common = dict(vocab_size=vocab_size, hidden_act="gelu", max_position_embeddings=512, type_vocab_size=2,
                layer_norm_eps=1e-12, attn_implementation="eager")
  disc_shape, gen_shape = HF_SHAPES[shape]
  disc = transformers.ElectraForPreTraining(transformers.ElectraConfig(**common, **disc_shape)).eval()
  gen = transformers.ElectraForMaskedLM(transformers.ElectraConfig(**common, **gen_shape)).eval()
  _perturb(disc, generator)
  _perturb(gen, generator)
  with torch.no_grad():
    for name, param in disc.electra.embeddings.named_parameters():
      gen.electra.embeddings.get_parameter(name).copy_(param)
  tensors = [t.detach().numpy() for m in (disc, gen) for n, t in m.named_parameters()
             if not (m is gen and n.startswith("electra.embeddings."))]
  by_shape = {}
  for t in tensors:
    by_shape.setdefault(t.shape, []).append(t)
  assert all(not np.array_equal(a, b) for group in by_shape.values() for i, a in enumerate(group)
             for b in group[i + 1:]), "two weights are equal; the test could not tell them apart"
  paths = tmp_path / "discriminator", tmp_path / "generator"
  disc.save_pretrained(paths[0])
  gen.save_pretrained(paths[1])
  return (disc, gen), paths


def _max_diffs(ours, theirs, real):
  """Max |difference| at real (unpadded) positions: each hidden state, then the logits."""
  assert len(ours["hidden_states"]) == len(theirs.hidden_states)
  diffs = [float(np.abs(np.asarray(a) - b.numpy())[real].max())
           for a, b in zip(ours["hidden_states"], theirs.hidden_states)]
  return diffs + [float(np.abs(np.asarray(ours["logits"]) - theirs.logits.numpy())[real].max())]




@pytest.mark.parametrize("shape", list(HF_SHAPES))
def test_perturbed_transformers_checkpoint_loads_to_the_same_outputs(shape, tmp_path):
  """A transformers discriminator and generator with perturbed weights, saved with save_pretrained, loaded
  by convert.load_pretrained_weights (what --init-checkpoint calls) into networks built from our presets:
  every hidden state and the logits of both match transformers' own forward pass."""
  (disc, gen), (disc_dir, gen_dir) = _saved_hf_pair(tmp_path, shape)
  cfg = configs.PretrainingConfig.create(**OUR_SHAPES[shape])
  nets = build_pretraining_networks(cfg)
  report = convert.load_pretrained_weights(str(disc_dir), nets, require_all=True, generator_path=str(gen_dir))
  assert report.missing == [] and report.unused == [], report.summary()
  ids, mask, seg = _batch(cfg.vocab_size)
  real = mask.astype(bool)
  with torch.no_grad():
    theirs = disc(**_torch_inputs(ids, mask, seg)), gen(**_torch_inputs(ids, mask, seg))
  ours = (nets.discriminator(ids, mask, seg, output_hidden_states=True),
          nets.generator(ids, mask, seg, output_hidden_states=True))
  layers = (cfg.discriminator_config().num_hidden_layers, cfg.generator_config().num_hidden_layers)
  for role, o, t, n in zip(("discriminator", "generator"), ours, theirs, layers):
    diffs = _max_diffs(o, t, real)
    assert len(diffs) == n + 2  # embeddings, each layer, logits
    print(f"{shape} {role}: max abs diff {max(diffs):.2e} (hidden states and logits)")
    worst = int(np.argmax(diffs))
    assert max(diffs) <= TOLERANCE, f"{role} output {worst} of {len(diffs)}: {diffs[worst]:.2e}"


def test_a_swapped_layernorm_in_the_checkpoint_is_caught(tmp_path):
  """The parity check is sensitive: the checkpoint with one layer's LayerNorm gain and offset swapped, loaded
  the same way, misses transformers' outputs of the unswapped model by orders of magnitude from that layer on."""
  (disc, _), _ = _saved_hf_pair(tmp_path, "base-2-layers")
  cfg = configs.PretrainingConfig.create(**OUR_SHAPES["base-2-layers"])
  ids, mask, seg = _batch(cfg.vocab_size)
  with torch.no_grad():
    theirs = disc(**_torch_inputs(ids, mask, seg))
    norm = disc.electra.encoder.layer[1].output.LayerNorm
    gain = norm.weight.clone()
    norm.weight.copy_(norm.bias)
    norm.bias.copy_(gain)
  disc.save_pretrained(tmp_path / "swapped")
  nets = build_pretraining_networks(cfg)
  convert.load_pretrained_weights(str(tmp_path / "swapped"), nets.discriminator, require_all=True)
  diffs = _max_diffs(nets.discriminator(ids, mask, seg, output_hidden_states=True), theirs, mask.astype(bool))
  assert max(diffs[:2]) <= TOLERANCE, diffs  # embeddings and layer 0 unaffected
  assert min(diffs[2:]) > 1000 * TOLERANCE, diffs


def test_generator_head_at_positions_equals_full_logits_gathered():
  cfg = configs.PretrainingConfig.create(preset="small", model_hparam_overrides={"num_hidden_layers": 1})
  nets = build_pretraining_networks(cfg)
  ids, mask, seg = _batch(cfg.vocab_size)
  positions = np.array([[1, 3, 0], [2, 2, 5], [4, 0, 0]], np.int32)
  full = nets.generator(ids, mask, seg)["logits"].numpy()
  at = nets.generator(ids, mask, seg, positions=positions)["logits"].numpy()
  np.testing.assert_allclose(at, np.take_along_axis(full, positions[:, :, None], axis=1), atol=1e-5)


def test_padding_does_not_change_real_positions():
  cfg = configs.PretrainingConfig.create(preset="small", model_hparam_overrides={"num_hidden_layers": 2})
  disc = build_pretraining_networks(cfg).discriminator
  ids, mask, seg = _batch(cfg.vocab_size, batch=1, length=12)
  padded = [np.pad(x, ((0, 0), (0, 6))) for x in (ids, mask, seg)]
  short = disc(ids, mask, seg)["logits"].numpy()
  long = disc(*padded)["logits"].numpy()[:, :12]
  np.testing.assert_allclose(short, long, atol=1e-5)


def test_untied_generator_embeddings_match_transformers():
  cfg = configs.PretrainingConfig.create(untied_generator_embeddings=True,
                                         model_hparam_overrides={"num_hidden_layers": 1})
  nets = build_pretraining_networks(cfg)
  assert nets.generator.encoder.embeddings is not nets.discriminator.encoder.embeddings
  assert nets.generator.encoder.embeddings_project is None  # own tables at the generator's width
  models = _hf_models(nets, cfg)
  ids, mask, seg = _batch(cfg.vocab_size)
  with torch.no_grad():
    theirs = models[hf_mapping.GENERATOR](**_torch_inputs(ids, mask, seg)).logits.numpy()
  ours = nets.generator(ids, mask, seg)["logits"].numpy()
  assert np.abs(ours - theirs)[mask.astype(bool)].max() <= TOLERANCE


def test_generator_shares_the_whole_embeddings_block():
  cfg = configs.PretrainingConfig.create(preset="small", model_hparam_overrides={"num_hidden_layers": 1})
  nets = build_pretraining_networks(cfg)
  shared = {id(v) for v in nets.discriminator.encoder.embeddings.weights}
  assert len(shared) == 5  # word, type, position tables and the LayerNorm pair
  assert shared <= {id(v) for v in nets.generator.weights}
  assert nets.generator.encoder.embeddings_project is not None  # its own E -> Hg projection
  names = checkpoint_names.reference_variables(nets)
  assert "generator/embeddings_project/kernel" in names
  assert not any(n.startswith("generator/embeddings/") for n in names)
  # Each weight exactly once: the optimizer and checkpoints must not see shared tables twice.
  all_ids = [id(v) for v in nets.discriminator.weights] + [
      id(v) for v in nets.generator.weights if id(v) not in shared]
  assert len(set(all_ids)) == len(names)


def test_reference_names_and_shapes_for_small():
  cfg = configs.PretrainingConfig.create(preset="small")
  names = checkpoint_names.reference_variables(build_pretraining_networks(cfg))
  shapes = {n: tuple(v.shape) for n, v in names.items()}
  assert shapes["electra/embeddings/word_embeddings"] == (30522, 128)
  assert shapes["electra/embeddings/position_embeddings"] == (512, 128)
  assert shapes["electra/embeddings/token_type_embeddings"] == (2, 128)
  assert shapes["electra/embeddings_project/kernel"] == (128, 256)
  assert shapes["electra/encoder/layer_11/intermediate/dense/kernel"] == (256, 1024)
  assert shapes["electra/encoder/layer_0/attention/output/LayerNorm/gamma"] == (256,)
  assert shapes["discriminator_predictions/dense/kernel"] == (256, 256)
  assert shapes["discriminator_predictions/dense_1/kernel"] == (256, 1)
  assert shapes["generator/embeddings_project/kernel"] == (128, 64)
  assert shapes["generator/encoder/layer_0/attention/self/query/kernel"] == (64, 64)
  assert shapes["generator_predictions/dense/kernel"] == (64, 128)
  assert shapes["generator_predictions/output_bias"] == (30522,)
  total = sum(int(np.prod(s)) for s in shapes.values())
  d, g = cfg.discriminator_config(), cfg.generator_config()
  expected = (configs.encoder_parameters(d) + configs.discriminator_head_parameters(d)
              + configs.encoder_parameters(g, include_embeddings=False)
              + configs.generator_head_parameters(g, d.embedding_size))
  assert total == expected


def test_initializers_follow_the_reference():
  tf.keras.utils.set_random_seed(0)
  cfg = configs.PretrainingConfig.create(preset="small", model_hparam_overrides={"num_hidden_layers": 1})
  names = checkpoint_names.reference_variables(build_pretraining_networks(cfg))
  word = names["electra/embeddings/word_embeddings"].numpy()
  assert abs(word.std() - 0.02 * 0.88) < 0.001  # a normal truncated at 2 sigma has std 0.88 sigma
  assert np.abs(word).max() <= 0.04 + 1e-6
  glorot = names["discriminator_predictions/dense_1/kernel"].numpy()  # glorot uniform, fan 256 + 1
  assert np.abs(glorot).max() <= np.sqrt(6 / 257) and np.abs(glorot).max() > 0.1
  assert not names["electra/encoder/layer_0/output/dense/bias"].numpy().any()
  assert (names["electra/embeddings/LayerNorm/gamma"].numpy() == 1).all()


def test_mixed_precision_keeps_layernorm_softmax_and_logits_in_float32():
  import keras
  keras.mixed_precision.set_global_policy("mixed_bfloat16")
  try:
    cfg = configs.PretrainingConfig.create(preset="small", model_hparam_overrides={"num_hidden_layers": 1})
    nets = build_pretraining_networks(cfg)
    ids, mask, seg = _batch(cfg.vocab_size)
    out = nets.discriminator(ids, mask, seg, training=True, dropout_seed=tf.constant([1, 2]))
    gen = nets.generator(ids, mask, seg, positions=np.zeros((3, 2), np.int32))
    assert out["logits"].dtype == tf.float32 and gen["logits"].dtype == tf.float32
    layer = nets.discriminator.encoder.transformer_layers[0]
    assert layer.attention.query.compute_dtype == "bfloat16"
    assert layer.output_layer_norm.compute_dtype == "float32"
    assert all(v.dtype == "float32" for v in nets.discriminator.weights)
    assert np.isfinite(out["logits"].numpy()).all()
  finally:
    keras.mixed_precision.set_global_policy("float32")


def test_dropout_is_reproducible_from_the_seed_and_off_at_inference():
  cfg = configs.PretrainingConfig.create(preset="small", model_hparam_overrides={"num_hidden_layers": 2})
  disc = build_pretraining_networks(cfg).discriminator
  ids, mask, seg = _batch(cfg.vocab_size)
  run = lambda seed: disc(ids, mask, seg, training=True, dropout_seed=tf.constant(seed))["logits"].numpy()
  np.testing.assert_array_equal(run([3, 4]), run([3, 4]))
  assert np.abs(run([3, 4]) - run([3, 5])).max() > 1e-3
  eval_a = disc(ids, mask, seg)["logits"].numpy()
  np.testing.assert_array_equal(eval_a, disc(ids, mask, seg, training=False)["logits"].numpy())


@pytest.mark.parametrize("overrides", [{}, {"untied_generator_embeddings": True}, {"electra_objective": False}])
def test_object_checkpoint_saves_and_restores_every_weight(tmp_path, overrides):
  """tf.train.Checkpoint must reach every layer (it does not follow Keras 3's tracked lists)."""
  cfg = configs.PretrainingConfig.create(debug=True, **overrides)
  nets, fresh = build_pretraining_networks(cfg), build_pretraining_networks(cfg)
  objects = lambda n: {k: v for k, v in (("discriminator", n.discriminator), ("generator", n.generator)) if v}
  path = tf.train.Checkpoint(**objects(nets)).write(str(tmp_path / "ckpt"))
  saved = [name for name, _ in tf.train.list_variables(path) if "/.ATTRIBUTES/" in name
           and not name.startswith("save_counter")]
  names = checkpoint_names.reference_variables(nets)
  assert len(saved) == len(names)
  tf.train.Checkpoint(**objects(fresh)).read(path).assert_existing_objects_matched()
  restored = checkpoint_names.reference_variables(fresh)
  for name, var in names.items():
    np.testing.assert_array_equal(var.numpy(), restored[name].numpy(), err_msg=name)
