"""Configs: the reference's defaults, size presets, derived values and hparam validation."""

import dataclasses
import json

import pytest

from electra_tf import configs
from electra_tf.configs import FinetuningConfig
from electra_tf.hparams import HParamError, parse_hparams


def test_reference_pretraining_defaults():
  cfg = configs.PretrainingConfig.create("m", "/data")
  assert (cfg.gen_weight, cfg.disc_weight, cfg.mask_prob) == (1.0, 50.0, 0.15)
  assert (cfg.learning_rate, cfg.weight_decay_rate, cfg.num_warmup_steps) == (5e-4, 0.01, 10000)
  assert (cfg.num_train_steps, cfg.train_batch_size, cfg.max_seq_length) == (1000000, 128, 128)
  assert (cfg.iterations_per_loop, cfg.save_checkpoints_steps, cfg.keep_checkpoint_max) == (200, 1000, 5)
  assert cfg.embedding_size == 128 and cfg.generator_hidden_size == 0.25
  assert cfg.max_predictions_per_seq == 19
  assert cfg.pretrain_tfrecords == "/data/pretrain_tfrecords/pretrain_data.tfrecord*"
  assert cfg.model_dir == "/data/models/m"
  assert cfg.results_txt == "/data/models/m/results/unsup_results.txt"


@pytest.mark.parametrize("mask_prob,seq,expected", [(0.15, 128, 19), (0.15, 512, 79), (0.25, 512, 130)])
def test_max_predictions_per_seq(mask_prob, seq, expected):
  cfg = configs.PretrainingConfig.create(mask_prob=mask_prob, max_seq_length=seq)
  assert cfg.max_predictions_per_seq == expected


@pytest.mark.parametrize("preset,dims,gen_dims", [
    ("small", (256, 12, 4, 1024, 128), (64, 12, 1, 256)),
    ("small++", (256, 12, 4, 1024, 128), (256, 12, 4, 1024)),
    ("base", (768, 12, 12, 3072, 768), (256, 12, 4, 1024)),
    ("large", (1024, 24, 16, 4096, 1024), (256, 24, 4, 1024)),
])
def test_size_presets_and_generator_dims(preset, dims, gen_dims):
  cfg = configs.PretrainingConfig.create(preset=preset)
  d, g = cfg.discriminator_config(), cfg.generator_config()
  assert (d.hidden_size, d.num_hidden_layers, d.num_attention_heads, d.intermediate_size,
          d.embedding_size) == dims
  assert (g.hidden_size, g.num_hidden_layers, g.num_attention_heads, g.intermediate_size) == gen_dims
  assert g.embedding_size == d.embedding_size  # shared embeddings, own projection


def test_large_preset_follows_paper_table6():
  cfg = configs.PretrainingConfig.create(preset="large")
  assert (cfg.mask_prob, cfg.train_batch_size, cfg.max_seq_length, cfg.learning_rate) == (0.25, 2048, 512, 2e-4)
  assert cfg.max_predictions_per_seq == 130


def test_user_values_win_over_size_defaults():
  cfg = configs.PretrainingConfig.create(preset="small++", generator_hidden_size=0.5, embedding_size=64)
  assert cfg.generator_hidden_size == 0.5 and cfg.embedding_size == 64


def test_generator_layers_fraction_and_untied_embeddings():
  cfg = configs.PretrainingConfig.create(generator_layers=0.5, untied_generator_embeddings=True)
  g = cfg.generator_config()
  assert g.num_hidden_layers == 6 and g.embedding_size == g.hidden_size == 64


def test_debug_mode_is_the_reference_debug_model():
  cfg = configs.PretrainingConfig.create(debug=True)
  d = cfg.discriminator_config()
  assert (d.num_hidden_layers, d.hidden_size, d.intermediate_size, d.num_attention_heads) == (3, 144, 576, 4)
  assert (cfg.train_batch_size, cfg.num_train_steps, cfg.iterations_per_loop) == (8, 20, 1)


def test_model_hparam_overrides_reach_the_model_config():
  cfg = configs.PretrainingConfig.create(model_hparam_overrides={"num_hidden_layers": 2, "hidden_size": 128})
  d = cfg.discriminator_config()
  assert (d.num_hidden_layers, d.hidden_size, d.num_attention_heads, d.intermediate_size) == (2, 128, 2, 512)


def test_electric_forces_two_towers():
  assert configs.PretrainingConfig.create(electric_objective=True,
                                          electra_objective=False).two_tower_generator


@pytest.mark.parametrize("overrides,message", [
    ({"lerning_rate": 1e-3}, "unknown hparam 'lerning_rate'; did you mean 'learning_rate'?"),
    ({"learning_rate": "fast"}, "hparam 'learning_rate': expected a number >= 0.0, got 'fast'"),
    ({"mask_prob": 1.5}, "hparam 'mask_prob': expected a number in (0.0, 1.0], got 1.5"),
    ({"train_batch_size": 0}, "hparam 'train_batch_size': expected an integer >= 1, got 0"),
    ({"train_batch_size": 8.5}, "expected an integer >= 1, got 8.5"),
    ({"do_train": "yes"}, "hparam 'do_train': expected true or false, got 'yes'"),
    ({"model_size": "huge"}, "hparam 'model_size': expected one of 'tiny', 'small', 'base', 'large', got 'huge'"),
    ({"max_seq_length": 4}, "hparam 'max_seq_length': expected an integer in [5, 512], got 4"),
    ({"max_predictions_per_seq": 20}, "derived from mask_prob and max_seq_length"),
])
def test_bad_hparams_fail_with_one_line_naming_the_key(overrides, message):
  with pytest.raises(HParamError) as err:
    configs.PretrainingConfig.create(**overrides)
  assert message in str(err.value)
  assert "\n" not in str(err.value)


def test_bad_model_override_is_rejected_when_the_config_is_created():
  with pytest.raises(HParamError, match="unknown hparam 'hidden_sise'"):
    configs.PretrainingConfig.create(model_hparam_overrides={"hidden_sise": 3})
  with pytest.raises(HParamError, match="not a multiple"):
    configs.PretrainingConfig.create(model_hparam_overrides={"hidden_size": 100, "num_attention_heads": 3})
  with pytest.raises(HParamError, match="unknown hparam 'hidden_sise'"):
    configs.FinetuningConfig.create(model_hparam_overrides={"hidden_sise": 3})


def test_integral_floats_from_json_are_accepted():
  cfg = configs.PretrainingConfig.create(**json.loads('{"num_train_steps": 1e6}'))
  assert cfg.num_train_steps == 1000000 and isinstance(cfg.num_train_steps, int)


def test_parse_hparams_json_string_and_file(tmp_path):
  assert parse_hparams('{"learning_rate": 0.001}') == {"learning_rate": 0.001}
  assert parse_hparams("") == {} and parse_hparams(None) == {}
  path = tmp_path / "h.json"
  path.write_text('{"mask_prob": 0.25}')
  assert parse_hparams(str(path)) == {"mask_prob": 0.25}
  with pytest.raises(HParamError, match="not valid JSON"):
    parse_hparams("{learning_rate: 1}")
  with pytest.raises(HParamError, match="must be a JSON object"):
    parse_hparams("[1, 2]")
  with pytest.raises(HParamError, match="does not exist"):
    parse_hparams(str(tmp_path / "missing.json"))


def test_finetuning_defaults_and_task_overrides():
  cfg = configs.FinetuningConfig.create("m", "/d", task_names=["mnli"])
  assert (cfg.learning_rate, cfg.layerwise_lr_decay, cfg.num_train_epochs, cfg.max_seq_length) == (
      1e-4, 0.8, 3.0, 128)
  assert (cfg.train_batch_size, cfg.warmup_proportion, cfg.weight_decay_rate) == (32, 0.1, 0.01)
  assert cfg.embedding_size == 128 and cfg.qa_na_threshold == -2.75 and cfg.beam_size == 20
  assert configs.FinetuningConfig.create(task_names=["rte"]).num_train_epochs == 10.0
  squad = configs.FinetuningConfig.create(task_names=["squad"])
  assert (squad.max_seq_length, squad.num_train_epochs) == (512, 2.0)
  naturalqs = configs.FinetuningConfig.create(task_names=["naturalqs"])  # the reference's quirk
  assert (naturalqs.max_seq_length, naturalqs.num_train_epochs) == (128, 3.0)
  assert configs.FinetuningConfig.create(task_names=["chunk"]).max_seq_length == 256
  large = configs.FinetuningConfig.create(task_names=["sst"], model_size="large")
  assert (large.learning_rate, large.layerwise_lr_decay) == (5e-5, 0.9)
  assert configs.FinetuningConfig.create(task_names="mnli,rte").task_names == ["mnli", "rte"]
  assert cfg.init_checkpoint == "/d/models/m" and cfg.vocab_file == "/d/vocab.txt"


def test_tiny_finetuning_defaults_are_the_validation_choice_per_task():
  """docs/finetuning.md, "The tiny preset's defaults": 3e-4 for 3 epochs on sst, 1e-3 for 8 on tagging; the
  reference's per-task epochs elsewhere and for several tasks at once; values given win."""
  tiny = lambda **kw: configs.FinetuningConfig.create("m", "/d", model_size="tiny", **kw)
  sst, chunk = tiny(task_names=["sst"]), tiny(task_names=["chunk"])
  assert (sst.learning_rate, sst.num_train_epochs, sst.layerwise_lr_decay) == (3e-4, 3.0, 0.8)
  assert (chunk.learning_rate, chunk.num_train_epochs, chunk.max_seq_length) == (1e-3, 8.0, 256)
  assert tiny(task_names=["rte"]).num_train_epochs == 10.0
  several = tiny(task_names=["chunk", "sst"])
  assert (several.learning_rate, several.num_train_epochs) == (3e-4, 3.0)
  mine = tiny(task_names=["chunk"], num_train_epochs=2.0, learning_rate=2e-4)
  assert (mine.learning_rate, mine.num_train_epochs) == (2e-4, 2.0)
  small = configs.FinetuningConfig.create("m", "/d", model_size="small", task_names=["chunk"])
  assert (small.learning_rate, small.num_train_epochs) == (1e-4, 3.0)


def test_summary_names_dims_and_counts():
  text = configs.pretraining_summary(configs.PretrainingConfig.create(preset="small"))
  assert "discriminator: L=12 H=256 heads=4 FFN=1024 E=128 vocab=30522  params=13,549,057" in text
  assert "generator: L=12 H=64 heads=1 FFN=256" in text
  mlm = configs.pretraining_summary(configs.PretrainingConfig.create(electra_objective=False))
  assert mlm.startswith("MLM model")


def test_hparams_doc_is_current():
  from electra_tf import docs_gen
  from conftest import REPO_ROOT
  doc = (REPO_ROOT / "docs" / "hparams.md").read_text(encoding="utf-8")
  assert doc == docs_gen.render(), "docs/hparams.md is stale: run python -m electra_tf.docs_gen"


def test_tiny_preset_applies_the_short_run_rule_and_given_values_win():
  from electra_tf.configs import PretrainingConfig, pretraining_summary
  cfg = PretrainingConfig.create("t", "/d", preset="tiny", num_train_steps=800)
  disc = cfg.discriminator_config()
  assert (disc.hidden_size, disc.num_hidden_layers, disc.num_attention_heads, disc.intermediate_size,
          disc.embedding_size) == (128, 3, 2, 512, 128)
  assert cfg.generator_config().hidden_size == 64 and cfg.train_batch_size == 32 and cfg.use_xla
  assert (cfg.learning_rate, cfg.num_warmup_steps, cfg.adam_bias_correction, cfg.temperature) == (
      1e-3, 80, True, 2.0)  # from 800 steps the tiny model's peak LR is 1e-3
  shorter = PretrainingConfig.create("t", "/d", preset="tiny", num_train_steps=799)
  assert (shorter.learning_rate, shorter.num_warmup_steps) == (3e-4, 80)
  mine = PretrainingConfig.create("t", "/d", preset="tiny", num_train_steps=800, learning_rate=1e-4,
                                  num_warmup_steps=5, temperature=1.0)
  assert (mine.learning_rate, mine.num_warmup_steps, mine.adam_bias_correction, mine.temperature) == (
      1e-4, 5, True, 1.0)
  assert ("short-run recipe: learning_rate 0.001, num_warmup_steps 80, adam_bias_correction true, temperature 2 "
          in pretraining_summary(cfg))
  assert "temperature 1 " in pretraining_summary(mine)
  # reference sizes keep the reference's recipe; a run shorter than its warmup gets a note instead
  small = PretrainingConfig.create("s", "/d", preset="small", num_train_steps=2000)
  assert (small.learning_rate, small.num_warmup_steps, small.adam_bias_correction, small.temperature) == (
      5e-4, 10000, False, 1.0)
  assert "num_train_steps 2000 is shorter than num_warmup_steps 10000" in pretraining_summary(small)
  assert ('"short_run_recipe": true} sets learning_rate 0.0003, num_warmup_steps 200, adam_bias_correction true, '
          'temperature 2' in pretraining_summary(small))
  assert "note:" not in pretraining_summary(PretrainingConfig.create("s", "/d", preset="small"))


def test_trainer_cache_shares_a_trainer_only_across_per_run_fields():
  """A cached fine-tuning trainer serves a run that differs in per_run fields only (seed, peak LR, epochs,
  paths); any other field, or another head, needs a trainer of its own."""
  import types
  from electra_tf.finetuning.trainer_cache import TrainerCache
  per_run = {f.name for f in dataclasses.fields(FinetuningConfig) if f.metadata.get("per_run")}
  assert {"seed", "learning_rate", "num_train_epochs", "init_checkpoint", "data_dir"} <= per_run
  assert not per_run & {"train_batch_size", "max_seq_length", "model_size", "mixed_precision", "use_xla",
                        "layerwise_lr_decay", "warmup_proportion", "gradient_accumulation_steps",
                        "profile_steps"}  # the runner reads it from the trainer's own config
  tasks = [types.SimpleNamespace(name="sst", head_type="classification", num_outputs=2)]
  key = TrainerCache().key
  base = FinetuningConfig.create("m", "/d")
  assert key(base, tasks) == key(FinetuningConfig.create("n", "/e", seed=4, learning_rate=3e-3,
                                                          num_train_epochs=7.0), tasks)
  assert key(base, tasks) != key(FinetuningConfig.create("m", "/d", train_batch_size=16), tasks)
  other_head = [types.SimpleNamespace(name="sst", head_type="classification", num_outputs=3)]
  assert key(base, tasks) != key(base, other_head)
