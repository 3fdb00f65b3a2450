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
  """Every trainable variable, keyed by its place and path (the generator's and discriminator's layers share
  paths)."""
  return {f"{i}:{v.path}": v.numpy() for i, v in enumerate(t.variables)}


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


@pytest.mark.slow
def test_short_run_recipe_learns_on_real_text_without_collapse(small_vocab_dir):
  from electra_tf.configs import PretrainingConfig
  cfg = _learning_config(small_vocab_dir, "short_run", short_run_recipe=True)
  given = PretrainingConfig.create("x", "", short_run_recipe=True, num_train_steps=400)
  assert (cfg.learning_rate, cfg.num_warmup_steps, cfg.adam_bias_correction, cfg.temperature) == (
      given.learning_rate, given.num_warmup_steps, given.adam_bias_correction, 2.0)  # the rule, not tiny_hparams'
  lines = []
  from electra_tf.pretraining import trainer
  t = trainer.Trainer(cfg, progress=False, log_fn=lines.append)
  before = t.evaluate(step=0)
  result = t.train()
  after = t.evaluate()
  assert result.step == 400 and result.status == "finished"
  assert after["disc_auc_real"] > 0.7 and after["disc_auc_real"] > before["disc_auc_real"] + 0.15, (before, after)
  # ln(vocab) = 6.9 nats before training; 6.25 after 400 steps on this machine kind
  assert after["masked_lm_loss"] < before["masked_lm_loss"] - 0.5
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


@pytest.mark.slow
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


_SIGNAL_STEPS = dict(num_train_steps=30, iterations_per_loop=5, save_checkpoints_steps=100)


@pytest.fixture(scope="module")
def straight_weights(wiki_dir):
  """The weights of an uninterrupted 30-step run (shared by the signal tests)."""
  straight = _trainer(_config(wiki_dir, "straight", **_SIGNAL_STEPS))
  straight.train()
  return _weights(straight)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_mid_run_then_rerun_matches_uninterrupted_run(wiki_dir, straight_weights, sig):
  """SIGTERM (a scheduler) and SIGINT (Ctrl-C) alike: the loop finishes, saves, says so and returns."""
  cfg = _config(wiki_dir, f"killed_{sig.name}", **_SIGNAL_STEPS)
  lines = []
  from electra_tf.pretraining import trainer
  first = trainer.Trainer(cfg, progress=False, log_fn=lines.append)
  handler = signal.getsignal(sig)
  result = first.train(after_loop=lambda step: step == 15 and os.kill(os.getpid(), sig))
  assert result.status == "interrupted" and result.step == 15
  assert lines[-1].startswith(f"stopped by signal {int(sig)} at step 15; checkpoint saved")
  assert os.path.exists(os.path.join(cfg.model_dir, "ckpt-15.index"))
  assert signal.getsignal(sig) == handler  # the previous handler is back
  second = _trainer(cfg)  # the same command again: resumes weights, Adam slots, step and input position
  assert second.train().step == 30
  resumed = _weights(second)
  assert resumed.keys() == straight_weights.keys()
  for k, v in resumed.items():  # bit for bit
    np.testing.assert_array_equal(v, straight_weights[k], err_msg=k)
  assert int(second.optimizer.iterations.numpy()) == 30


@pytest.mark.slow
def test_resume_restores_the_input_position_or_replays_to_it(wiki_dir, straight_weights):
  """A checkpoint holds the input iterator's position, so resuming replays nothing; one written without it
  (an older version's) resumes by replaying the stream to the step. Both end with the uninterrupted run's
  weights."""
  import tensorflow as tf
  from electra_tf.pretraining import inputs
  from electra_tf.runtime import checkpointing
  stream = lambda c: iter(inputs.global_batches(c, inputs.train_files(c), c.train_batch_size, c.seed))
  cfg = _config(wiki_dir, "resume_position", **_SIGNAL_STEPS)
  first = _trainer(cfg)
  first.train(max_steps=15)
  saved = dict(tf.train.list_variables(os.path.join(cfg.model_dir, "ckpt-15")))
  assert any(name.startswith(checkpointing.ITERATOR_KEY + "/") for name in saved)
  resumed = _trainer(cfg)
  assert resumed.runner.checkpointer(cfg.model_dir, stream(cfg)).restore()[1] == 0
  assert _trainer(cfg).train().step == 30

  old = _config(wiki_dir, "resume_replay", **_SIGNAL_STEPS)  # the same step-15 state without the position
  os.makedirs(old.model_dir)
  src = _trainer(old)
  tf.train.Checkpoint(**src.runner.checkpoint_objects()).read(
      os.path.join(cfg.model_dir, "ckpt-15")).expect_partial()
  tf.train.CheckpointManager(tf.train.Checkpoint(**src.runner.checkpoint_objects()), old.model_dir,
                             max_to_keep=1, checkpoint_name="ckpt").save(checkpoint_number=15)
  replayed = _trainer(old)
  assert replayed.runner.checkpointer(old.model_dir, stream(old)).restore()[1] == 15
  replayed = _trainer(old)
  assert replayed.train().step == 30
  resumed = _weights(replayed)
  assert resumed.keys() == straight_weights.keys()
  for k, v in resumed.items():  # bit for bit
    np.testing.assert_array_equal(v, straight_weights[k], err_msg=k)


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_cli_errors_are_one_line_with_exit_code_2(wiki_dir, tmp_path, capsys):
  from electra_tf.cli import pretrain
  # the script as users start it, once; the other cases through its main() in this process
  bad = _cli("--data-dir", str(wiki_dir), "--model-name", "x", "--hparams", '{"mask_prob": 2}')
  assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith("error: hparam 'mask_prob'")

  def cli(*args):
    capsys.readouterr()
    code = pretrain.main(list(args))
    return code, capsys.readouterr().err

  code, err = cli("--data-dir", str(tmp_path), "--model-name", "x")
  assert code == 2 and "error: no pre-training data matches" in err
  other_vocab = tmp_path / "vocab.txt"
  other_vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]) + "\n")
  hp = json.dumps({"vocab_file": str(other_vocab), "max_seq_length": 32, "pretrain_tfrecords": str(wiki_dir / "pretrain_tfrecords" /
                                                                              "pretrain_data.tfrecord*")})
  code, err = cli("--data-dir", str(tmp_path), "--model-name", "x", "--hparams", hp)
  assert code == 2 and "differs from the one the data" in err
  code, err = cli("--data-dir", str(wiki_dir), "--model-name", "x")  # data built at 32, config says 128
  assert code == 2 and "has max_seq_length 32 but the config has 128" in err
  code, err = cli("--data-dir", str(wiki_dir), "--model-name", "x", "--hparams", '{"do_eval": true}')
  assert code == 2 and "exactly one of do_train and do_eval" in err
  assert err.strip().count("\n") == 0  # one line


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
    assert result.last_log["loss_scale"] == float(t.loss_scale.scale.numpy())


def test_float16_overflow_skips_the_step_halves_the_scale_and_grows_it_back(wiki_dir):
  """An infinite gradient at step 2 (as a float16 overflow gives): that step changes no weight but counts,
  the scale halves, and after ``growth_interval`` (3) finite steps it doubles back; the scale is saved.
  (The scale starts at 2^8: at the default 2^15 this model's first float16 gradient really overflows.)"""
  import keras
  import tensorflow as tf
  from electra_tf.runtime.loss_scale import DynamicLossScale
  INITIAL_SCALE = 2.0 ** 8
  cfg = _config(wiki_dir, "fp16_overflow", num_train_steps=6, iterations_per_loop=1, save_checkpoints_steps=100,
                mixed_precision="float16")
  try:
    t = _trainer(cfg)
    with t.strategy.scope():
      t.runner.loss_scale = DynamicLossScale(INITIAL_SCALE, growth_interval=3)
    forward = t.model.forward

    def overflowing(features, seed, step, **kw):
      out = dict(forward(features, seed, step, **kw))

      @tf.custom_gradient
      def overflow_at_step_2(loss):
        return tf.identity(loss), lambda dy: dy * tf.where(step == 2, np.inf, 1.0)

      out["total_loss"] = overflow_at_step_2(out["total_loss"])  # the loss itself stays finite
      return out

    t.model.forward = overflowing
    seen = {0: (_weights(t), INITIAL_SCALE, 0)}
    result = t.train(after_loop=lambda step: seen.__setitem__(step, (
        _weights(t), float(t.loss_scale.scale.numpy()), int(t.loss_scale.good_steps.numpy()))))
  finally:
    keras.mixed_precision.set_global_policy("float32")
  assert result.step == 6 and int(t.optimizer.iterations.numpy()) == 6
  scales = [(step, scale, good) for step, (_, scale, good) in sorted(seen.items())]
  assert scales == [(0, INITIAL_SCALE, 0), (1, INITIAL_SCALE, 1), (2, INITIAL_SCALE, 2),
                    (3, INITIAL_SCALE / 2, 0),  # step 2 overflowed
                    (4, INITIAL_SCALE / 2, 1), (5, INITIAL_SCALE / 2, 2), (6, INITIAL_SCALE, 0)]
  for step in range(1, 7):
    before, after = seen[step - 1][0], seen[step][0]
    moved = sum(not np.array_equal(before[i], after[i]) for i in before)
    if step == 3:
      assert moved == 0  # the skipped step left every weight as it was
    else:
      assert moved > 0.9 * len(before), step
  assert result.last_log["loss_scale"] == INITIAL_SCALE
  saved = dict(tf.train.list_variables(os.path.join(cfg.model_dir, "ckpt-6")))
  reader = tf.train.load_checkpoint(os.path.join(cfg.model_dir, "ckpt-6"))
  key = [k for k in saved if k.startswith("loss_scale")][0]
  assert reader.get_tensor(key) == INITIAL_SCALE


@pytest.mark.slow
def test_xla_matches_the_uncompiled_run(wiki_dir):
  """``use_xla`` on CPU, dropout on (the default, keyed per example): masking, sampling and dropout are keyed
  by our own hash (``keyed_random``), so the first step's losses and gradient norm equal the uncompiled
  run's. (With ``per_example_dropout`` false, TensorFlow's stateless Philox draws other masks under XLA.)
  After that, Adam's first update (about lr * sign(g)) turns XLA's last-bit differences in near-zero
  gradients into lr-sized ones, so the weights are compared element by element."""
  runs = {}
  for xla in (False, True):
    t = _trainer(_config(wiki_dir, f"xla_{xla}", num_train_steps=2, iterations_per_loop=1, use_xla=xla))
    assert t.per_example_dropout
    logs = []
    t.train(after_loop=lambda step: logs.append(t.runner.training_log.last))  # each loop's logged values
    assert getattr(t.replica_step._single_fn, "_jit_compile", None) is (True if xla else None)  # pylint: disable=protected-access
    runs[xla] = (logs, _weights(t))
  (plain_logs, plain_w), (xla_logs, xla_w) = runs[False], runs[True]
  assert len(plain_logs) == len(xla_logs) == 2
  for key in ("total_loss", "mlm_loss", "disc_loss", "grad_norm", "mlm_accuracy", "disc_accuracy"):
    assert xla_logs[0][key] == pytest.approx(plain_logs[0][key], rel=1e-4, abs=1e-6), key
    assert xla_logs[1][key] == pytest.approx(plain_logs[1][key], rel=1e-3, abs=1e-5), key
  close = sum(np.isclose(xla_w[k], v, rtol=1e-4, atol=1e-6).sum() for k, v in plain_w.items())
  assert close > 0.99 * sum(v.size for v in plain_w.values())


def test_log_every_steps_lines_match_the_tensorboard_scalars(wiki_dir):
  """Extra log lines every ``log_every_steps`` within a loop; each line's values are the ones TensorBoard
  gets under the same tags, and the evaluation's scalars are its results file's."""
  from electra_tf import reporting
  from electra_tf.pretraining import trainer
  cfg = _config(wiki_dir, "log_every", num_train_steps=20, iterations_per_loop=10, log_every_steps=5,
                eval_every_steps=10)
  lines = []
  trainer.Trainer(cfg, progress=False, log_fn=lines.append).train()
  loop_lines = [line for line in lines if line.startswith("step ")]
  assert [line.split()[1] for line in loop_lines] == ["5/20", "10/20", "15/20", "20/20"]
  scalars = reporting.read_scalars(os.path.join(cfg.model_dir, "train"))
  train_tags = {"total_loss", "mlm_loss", "disc_loss", "grad_norm", "mlm_accuracy", "disc_accuracy", "disc_recall",
                "disc_auc_real", "learning_rate", "sequences_per_sec", "tokens_per_sec"}
  assert {tag for tag in scalars if not tag.startswith("eval/")} == train_tags
  for line in loop_lines:
    fields = line.split()
    step = int(fields[1].split("/")[0])
    assert fields[-2] == "eta" and fields[-1][-1] == "s"
    values = dict(zip(fields[2:-2:2], map(float, fields[3:-2:2])))
    assert set(values) == train_tags - {"tokens_per_sec"}  # tokens/s is in TensorBoard only
    for tag, value in values.items():
      assert dict(scalars[tag])[step] == pytest.approx(value, rel=5e-4), (tag, step)
  assert [s for s, _ in scalars["total_loss"]] == [5, 10, 15, 20]
  lr = dict(scalars["learning_rate"])
  assert lr[5] == pytest.approx(cfg.learning_rate * (1 - 4 / 20), rel=1e-5)  # linear decay, no warmup: step - 1
  assert all(dict(scalars["tokens_per_sec"])[s] == pytest.approx(32 * v) for s, v in scalars["sequences_per_sec"])
  results = json.loads(open(os.path.join(cfg.model_dir, "results", "unsup_results.json")).read())
  assert [r["step"] for r in results] == [10]
  assert {tag[5:] for tag in scalars if tag.startswith("eval/")} == set(results[0]) - {"step", "split"}
  for name, value in results[0].items():
    if name not in ("step", "split"):
      assert scalars["eval/" + name] == [(10, pytest.approx(value, rel=1e-6))], name


@pytest.mark.parametrize("generator", ["uniform", "tied"])
def test_uniform_and_tied_generators_train_under_the_electra_objective(wiki_dir, generator):
  """``uniform_generator``: no generator network, so the MLM loss is exactly ln(vocab) and the total is
  ln(V) + 50 * disc_loss. ``untied_generator: false``: one encoder serves both heads (no generator/ weights)."""
  import math
  from electra_tf.checkpoint_names import reference_variables
  hp = {"uniform_generator": True} if generator == "uniform" else {"untied_generator": False}
  t = _trainer(_config(wiki_dir, f"gen_{generator}", num_train_steps=20, iterations_per_loop=10, **hp))
  names = reference_variables(t.model.networks)
  before = t.evaluate(step=0)
  log = t.train().last_log
  after = t.evaluate()
  assert not any(name.startswith("generator/") for name in names)  # no generator transformer in either
  if generator == "uniform":
    assert t.model.networks.generator is None
    assert not any(name.startswith("generator_predictions/") for name in names)
    assert log["mlm_loss"] == pytest.approx(math.log(30522), rel=1e-6)
    assert log["total_loss"] == pytest.approx(log["mlm_loss"] + 50.0 * log["disc_loss"], rel=1e-5)
    assert after["sampled_masked_lm_accuracy"] < 0.01  # uniform samples are almost never the original
  else:
    nets = t.model.networks
    assert nets.generator.encoder is nets.discriminator.encoder
    assert "generator_predictions/output_bias" in names
    assert after["masked_lm_loss"] < before["masked_lm_loss"] - 0.5  # the shared encoder learns the MLM task
    assert log["total_loss"] == pytest.approx(log["mlm_loss"] + 50.0 * log["disc_loss"], rel=1e-5)
  assert after["disc_loss"] < before["disc_loss"]


def test_resuming_with_other_networks_or_another_batch_is_one_line_before_the_restore(tmp_path):
  """A run's saved hparams say what its checkpoints hold; a rerun that would build other networks (attention
  heads leave every shape as it was) or read another batch shape is refused, naming the change. Other hparams
  (more steps, another learning rate) resume."""
  from electra_tf.configs import PretrainingConfig
  from electra_tf.errors import PretrainingError
  from electra_tf.pretraining.trainer import check_resumable
  started = PretrainingConfig.create("m", str(tmp_path), preset="tiny", train_batch_size=8)
  os.makedirs(started.model_dir)
  with open(os.path.join(started.model_dir, started.SAVED_CONFIG_FILE), "w") as f:
    f.write(started.to_json())
  check_resumable(PretrainingConfig.create("m", str(tmp_path), preset="tiny", train_batch_size=8,
                                           num_train_steps=99, learning_rate=1e-4))
  heads = PretrainingConfig.create("m", str(tmp_path), preset="tiny", train_batch_size=8,
                                   model_hparam_overrides={"num_attention_heads": 4})
  n = started.discriminator_config().num_attention_heads
  with pytest.raises(PretrainingError, match=rf"holds a run started with num_attention_heads {n} \(now 4\) \(.*"
                     rf"pretraining_config.json\); resume it with the hparams it was started with"):
    check_resumable(heads)
  with pytest.raises(PretrainingError, match=r"started with train_batch_size 8 \(now 16\) \("):
    check_resumable(PretrainingConfig.create("m", str(tmp_path), preset="tiny", train_batch_size=16))
