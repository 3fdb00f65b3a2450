"""Our networks against an independent implementation: transformers' PyTorch ELECTRA on identical weights.

The weights travel through ``checkpoint_names.reference_variables`` and ``hf_mapping.to_hf_state_dict``
(the exporter's core), and every HF parameter must be filled: a missed or misnamed weight fails the
strict load rather than silently keeping a random value.
"""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import checkpoint_names, configs
from electra_tf.convert import hf_mapping
from electra_tf.modeling import build_pretraining_networks

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-4


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


SHAPES = {
    # The ELECTRA-Small discriminator and its 1/4-width generator, full depth.
    "small": dict(preset="small"),
    # Base width (768, 12 heads, E=768, generator 256) at two layers to keep CPU time low.
    "base-shallow": dict(preset="base", model_hparam_overrides={"num_hidden_layers": 2}),
    # Released ELECTRA-Small: full-width generator, so generator E=128 != H=256 (projection exercised).
    "small++-shallow": dict(preset="small++", model_hparam_overrides={"num_hidden_layers": 2}),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_discriminator_and_generator_match_transformers(shape):
  tf.keras.utils.set_random_seed(1)
  cfg = configs.PretrainingConfig.create(**SHAPES[shape])
  nets = build_pretraining_networks(cfg)
  models = _hf_models(nets, cfg)
  ids, mask, seg = _batch(cfg.vocab_size)
  real = mask.astype(bool)

  ours = nets.discriminator(ids, mask, seg, output_hidden_states=True)
  with torch.no_grad():
    theirs = models[hf_mapping.DISCRIMINATOR](**_torch_inputs(ids, mask, seg))
  assert len(ours["hidden_states"]) == len(theirs.hidden_states) == cfg.discriminator_config().num_hidden_layers + 1
  for layer, (a, b) in enumerate(zip(ours["hidden_states"], theirs.hidden_states)):
    diff = np.abs(np.asarray(a) - b.numpy())[real].max()
    assert diff <= TOLERANCE, f"discriminator hidden state {layer}: max abs diff {diff}"
  logit_diff = np.abs(ours["logits"].numpy() - theirs.logits.numpy())[real].max()
  assert logit_diff <= TOLERANCE, f"discriminator logits: max abs diff {logit_diff}"

  ours_g = nets.generator(ids, mask, seg, output_hidden_states=True)
  with torch.no_grad():
    theirs_g = models[hf_mapping.GENERATOR](**_torch_inputs(ids, mask, seg))
  for layer, (a, b) in enumerate(zip(ours_g["hidden_states"], theirs_g.hidden_states)):
    diff = np.abs(np.asarray(a) - b.numpy())[real].max()
    assert diff <= TOLERANCE, f"generator hidden state {layer}: max abs diff {diff}"
  gen_diff = np.abs(ours_g["logits"].numpy() - theirs_g.logits.numpy())[real].max()
  assert gen_diff <= TOLERANCE, f"generator logits: max abs diff {gen_diff}"
  print(f"{shape}: disc logits {logit_diff:.2e}, gen logits {gen_diff:.2e}")


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
