"""End-to-end pre-training on real text (WikiText-2, BERT vocab) with tiny models on CPU."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import _pretraining_testlib as lib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def wiki_dir(tmp_path_factory, data_dir, bert_vocab):
  return lib.build_tfrecords(tmp_path_factory.mktemp("wiki"), data_dir, bert_vocab, max_lines=1500)


@pytest.fixture(scope="module")
def small_vocab_dir(tmp_path_factory, data_dir, bert_vocab):
  """The same text with a 1,005-token vocab, so a tiny model sees each token often."""
  return lib.build_tfrecords(tmp_path_factory.mktemp("wiki1k"), data_dir, bert_vocab, max_lines=1500, top_k=1000)


def _config(root, name, **hp):
  from electra_tf.configs import PretrainingConfig
  return PretrainingConfig.create(name, str(root), **lib.tiny_hparams(**hp))


def _trainer(cfg):
  from electra_tf.pretraining import trainer
  return trainer.Trainer(cfg, progress=False, log_fn=lambda *_: None)


def _weights(t):
  return {id_: v.numpy() for id_, v in enumerate(t.variables)}


_LEARNING_MODEL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128,
                   "embedding_size": 32, "vocab_size": 1005}


def _learning_config(root, name, **hp):
  """H 64, 2 layers on the 1,005-token WikiText data: 400 steps of 16 x 32 tokens (about a minute)."""
  from electra_tf.configs import PretrainingConfig
  hp = lib.tiny_hparams(**{"num_train_steps": 400, "iterations_per_loop": 25, "vocab_size": 1005,
                           "save_checkpoints_steps": 400, "num_eval_steps": 8, "train_batch_size": 16,
                           "model_hparam_overrides": _LEARNING_MODEL, "generator_hidden_size": 0.25, **hp})
  if hp.get("short_run_recipe"):  # let the rule set what tiny_hparams would otherwise pin
    hp.pop("learning_rate"), hp.pop("num_warmup_steps")
  return PretrainingConfig.create(name, str(root), **hp)


def test_short_run_recipe_learns_on_real_text_without_collapse(small_vocab_dir):
  from electra_tf.configs import PretrainingConfig
  cfg = _learning_config(small_vocab_dir, "short_run", short_run_recipe=True)
  given = PretrainingConfig.create("x", "", short_run_recipe=True, num_train_steps=400)
  assert (cfg.learning_rate, cfg.num_warmup_steps, cfg.adam_bias_correction) == (
      given.learning_rate, given.num_warmup_steps, given.adam_bias_correction)  # the rule, not tiny_hparams'
  lines = []
  from electra_tf.pretraining import trainer
  t = trainer.Trainer(cfg, progress=False, log_fn=lines.append)
  before = t.evaluate(step=0)
  result = t.train()
  after = t.evaluate()
  assert result.step == 400 and result.status == "finished"
  assert after["disc_auc_real"] > 0.7 and after["disc_auc_real"] > before["disc_auc_real"] + 0.15, (before, after)
  assert after["masked_lm_loss"] < before["masked_lm_loss"] - 1.0
  assert not any("collapsed" in line for line in lines)
  assert any(f"short-run recipe: learning_rate {cfg.learning_rate:g}, num_warmup_steps 40" in line for line in lines)
  loop_lines = [line for line in lines if line.startswith("step ")]
  assert len(loop_lines) == 16 and all("disc_recall" in l and "disc_auc_real" in l for l in loop_lines)
  history = json.loads(open(os.path.join(cfg.model_dir, "results", "unsup_results.json")).read())
  assert [h["step"] for h in history] == [0, 400]
  assert set(history[-1]) >= {"masked_lm_accuracy", "masked_lm_loss", "sampled_masked_lm_accuracy", "disc_loss",
                              "disc_auc", "disc_auc_real", "disc_accuracy", "disc_precision", "disc_recall"}
  assert "disc_auc_real: " in open(os.path.join(cfg.model_dir, "results", "unsup_results.txt")).read()
  assert any(f.startswith("events.out.tfevents") for f in os.listdir(os.path.join(cfg.model_dir, "train")))


def test_a_collapsing_recipe_is_caught_and_stop_on_collapse_keeps_the_last_checkpoint(small_vocab_dir):
  """The reference's uncorrected Adam at 2e-3 with 20 warmup steps: the discriminator calls everything
  original. The guard says so; with stop_on_collapse the run stops with one line naming the checkpoint."""
  from electra_tf.pretraining import trainer
  cfg = _learning_config(small_vocab_dir, "collapse", learning_rate=2e-3, num_warmup_steps=20,
                         save_checkpoints_steps=100, stop_on_collapse=True)
  lines = []
  t = trainer.Trainer(cfg, progress=False, log_fn=lines.append)
  with pytest.raises(trainer.PretrainingError, match=r"stop_on_collapse.*collapsed.*learning_rate.*ckpt-\d+") as err:
    t.train()
  step = int(str(err.value).split("stopped at step ")[1].split()[0])
  assert 100 <= step < 400
  assert os.path.exists(os.path.join(cfg.model_dir, f"ckpt-{step // 100 * 100}.index"))
  assert not os.path.exists(os.path.join(cfg.model_dir, "ckpt-400.index"))


def test_signal_mid_run_then_rerun_matches_uninterrupted_run(wiki_dir):
  steps = dict(num_train_steps=30, iterations_per_loop=5, save_checkpoints_steps=100)
  straight = _trainer(_config(wiki_dir, "straight", **steps))
  straight.train()
  expected = _weights(straight)

  cfg = _config(wiki_dir, "killed", **steps)
  first = _trainer(cfg)
  result = first.train(after_loop=lambda step: step == 15 and os.kill(os.getpid(), signal.SIGTERM))
  assert result.status == "interrupted" and result.step == 15
  second = _trainer(cfg)  # the same command again: resumes weights, Adam slots, step and input position
  assert second.train().step == 30
  for k, v in _weights(second).items():
    np.testing.assert_allclose(v, expected[k], rtol=1e-5, atol=1e-6)
  assert int(second.optimizer.iterations.numpy()) == 30


def test_init_checkpoint_loads_weights_only(wiki_dir):
  src = _trainer(_config(wiki_dir, "straight_src", num_train_steps=10, iterations_per_loop=10))
  src.train()
  cfg = _config(wiki_dir, "from_init", num_train_steps=10, init_checkpoint=src.cfg.model_dir)
  t = _trainer(cfg)
  t.train(max_steps=1)  # loads the weights, then one step from step 0 with fresh slots
  assert int(t.optimizer.iterations.numpy()) == 1
  emb = t.model.networks.discriminator.encoder.embeddings.word_embeddings.numpy()
  src_emb = src.model.networks.discriminator.encoder.embeddings.word_embeddings.numpy()
  assert np.abs(emb - src_emb).max() < 1e-2  # one Adam step (<= ~3.2 lr) from the source, not random init


@pytest.mark.parametrize("objective", ["mlm", "electric"])
def test_mlm_only_and_electric_train(wiki_dir, objective):
  hp = ({"electra_objective": False} if objective == "mlm"
        else {"electra_objective": False, "electric_objective": True})
  cfg = _config(wiki_dir, objective, num_train_steps=40, iterations_per_loop=20, learning_rate=3e-3, **hp)
  t = _trainer(cfg)
  logs = []
  t.train(after_loop=lambda step: logs.append(step))
  metrics = t.evaluate()
  assert logs == [20, 40]
  assert np.isfinite(metrics["masked_lm_loss"]) and metrics["masked_lm_loss"] < 9.0
  assert ("disc_auc" in metrics) == (objective == "electric")


def test_nan_loss_stops_with_the_step_and_keeps_last_checkpoint(wiki_dir):
  import tensorflow as tf
  from electra_tf.pretraining import trainer
  cfg = _config(wiki_dir, "nan", num_train_steps=20, iterations_per_loop=5, save_checkpoints_steps=5)
  t = _trainer(cfg)
  forward = t.model.forward

  def poisoned(features, seed, step, **kw):
    out = dict(forward(features, seed, step, **kw))
    out["total_loss"] = out["total_loss"] + tf.where(step >= 7, np.nan, 0.0)
    return out

  t.model.forward = poisoned
  with pytest.raises(trainer.PretrainingError, match="NaN or infinite at step 7.*ckpt-5"):
    t.train()
  assert tf.train.latest_checkpoint(cfg.model_dir).endswith("ckpt-5")


def _cli(*args, env=None):
  return subprocess.run([sys.executable, os.path.join(REPO, "pretrain", "run_pretraining.py"), *args],
                        capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300)


def test_cli_errors_are_one_line_with_exit_code_2(wiki_dir, tmp_path):
  bad = _cli("--data-dir", str(wiki_dir), "--model-name", "x", "--hparams", '{"mask_prob": 2}')
  assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith("error: hparam 'mask_prob'")
  missing = _cli("--data-dir", str(tmp_path), "--model-name", "x")
  assert missing.returncode == 2 and "error: no pre-training data matches" in missing.stderr
  other_vocab = tmp_path / "vocab.txt"
  other_vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]) + "\n")
  hp = json.dumps({"vocab_file": str(other_vocab), "max_seq_length": 32, "pretrain_tfrecords": str(wiki_dir / "pretrain_tfrecords" /
                                                                              "pretrain_data.tfrecord*")})
  mismatch = _cli("--data-dir", str(tmp_path), "--model-name", "x", "--hparams", hp)
  assert mismatch.returncode == 2 and "differs from the one the data" in mismatch.stderr
  length = _cli("--data-dir", str(wiki_dir), "--model-name", "x")  # data built at 32, config says 128
  assert length.returncode == 2 and "has max_seq_length 32 but the config has 128" in length.stderr
  both = _cli("--data-dir", str(wiki_dir), "--model-name", "x", "--hparams", '{"do_eval": true}')
  assert both.returncode == 2 and "exactly one of do_train and do_eval" in both.stderr


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
def test_mixed_precision_trains_with_float32_variables(wiki_dir, precision):
  """bf16, and fp16 with dynamic loss scaling: finite losses, weights move, variables stay float32."""
  import keras
  cfg = _config(wiki_dir, precision, num_train_steps=20, iterations_per_loop=10, learning_rate=3e-3,
                mixed_precision=precision)
  try:
    t = _trainer(cfg)
    before = _weights(t)
    result = t.train()
    metrics = t.evaluate()
  finally:
    keras.mixed_precision.set_global_policy("float32")  # the trainer sets the process-wide policy
  assert result.step == 20 and np.isfinite(result.last_log["total_loss"])
  assert all(np.isfinite(v) for k, v in metrics.items() if k != "step")
  after = _weights(t)
  assert sum(not np.array_equal(before[i], after[i]) for i in before) > 0.9 * len(before)
  assert all(v.dtype == np.float32 for v in after.values())
  if precision == "float16":
    scale = float(t.loss_scale.scale.numpy())
    assert 1.0 <= scale <= 2.0 ** 15 and "loss_scale" in result.last_log
