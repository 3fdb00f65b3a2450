"""electra_tf.flops: the reference's FLOP count, against flops_computation.py's published totals."""

import types

import pytest

from electra_tf import flops, presets
from electra_tf.configs import PretrainingConfig


def _model(h, layers, e, v=30522):
  return types.SimpleNamespace(hidden_size=h, num_hidden_layers=layers, embedding_size=e, vocab_size=v,
                               intermediate_size=4 * h, num_attention_heads=max(1, h // 64))


def test_flop_count_matches_the_reference_scripts_totals():
  """flops_computation.py's MODEL_FLOPS (reference_spec.md): bert_small 1.42e18, electra_small 1.29e18,
  bert_base 6.43e19, electra_base 6.42e19 (train FLOPs, 3 significant figures)."""
  seq = flops.train_flops_per_sequence
  assert 128 * 1.45e6 * seq(_model(256, 12, 128), 128, False) == pytest.approx(1.42e18, rel=5e-3)
  assert 128 * 1e6 * (seq(_model(256, 12, 128), 128, True) + seq(_model(64, 12, 128), 128, False)) == \
      pytest.approx(1.29e18, rel=5e-3)
  assert 256 * 1e6 * seq(_model(768, 12, 768), 512, False) == pytest.approx(6.43e19, rel=5e-3)
  assert 256 * 766000 * (seq(_model(768, 12, 768), 512, True) + seq(_model(256, 12, 768), 512, False)) == \
      pytest.approx(6.42e19, rel=5e-3)


def test_a_step_counts_the_discriminator_and_generator_or_the_one_masked_lm(tmp_path):
  hp = presets.sample_pretraining_hparams(8000, 600)
  electra = PretrainingConfig.create("e", str(tmp_path), **hp)
  mlm = PretrainingConfig.create("m", str(tmp_path), **{**hp, "electra_objective": False})
  s, batch = electra.max_seq_length, electra.train_batch_size
  disc = flops.train_flops_per_sequence(electra.discriminator_config(), s, True)
  gen = flops.train_flops_per_sequence(electra.generator_config(), s, False)
  assert flops.flops_per_step(electra) == pytest.approx(batch * (disc + gen))
  assert flops.flops_per_step(mlm) == pytest.approx(
      batch * flops.train_flops_per_sequence(mlm.discriminator_config(), s, False))
  assert flops.flops_per_step(mlm) > flops.flops_per_step(electra) / 2  # MLM-only's one model is the full width
