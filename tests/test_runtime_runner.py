"""The training runtime both jobs share (``electra_tf.runtime``): fine-tuning gains float16, resumable
trials, XLA on several replicas and the NaN line; pre-training resumes in constant time.

Each check runs the real jobs on tiny models: real rt_polarity sentences (fine-tuning) and WikiText-2
(pre-training) from ``ELECTRA_TEST_DATA``.
"""

import json
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

import _pretraining_testlib as lib
from tests._finetuning_testlib import rt_polarity_as_sst, tiny_config

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def sst_root(tmp_path_factory, data_dir):
  """200 real rt_polarity training sentences and 64 dev sentences in the sst layout."""
  return rt_polarity_as_sst(tmp_path_factory.mktemp("sst"), data_dir, 200, 64)


def _config(root, vocab, name, **overrides):
  hp = dict(train_batch_size=8, num_train_epochs=2.0, learning_rate=1e-3, iterations_per_loop=5)
  hp.update(overrides)
  cfg = tiny_config(root, ["sst"], vocab, **hp)
  cfg.model_name = name  # its own model_dir: <root>/models/<name>
  return cfg


def _trial_weights(run, trial):
  import tensorflow as tf
  reader = tf.train.load_checkpoint(run.model_dir(trial))
  return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map() if n != "global_step"}


def _kill_after_loops(monkeypatch, trial_to_kill: int, loops: int):
  """Sends SIGTERM to this process after ``loops`` compiled loops of trial ``trial_to_kill``."""
  from electra_tf.finetuning import trainer as trainer_lib
  from electra_tf.runtime import loop
  calls = {"trial": 0}
  original_train = trainer_lib.Trainer.train

  def train(self, *args, **kwargs):
    calls["trial"] += 1
    calls["loops"] = 0
    return original_train(self, *args, **kwargs)

  original_compile = loop.compile_loop

  def compile_loop(*args, **kwargs):
    run_loop = original_compile(*args, **kwargs)

    def counted(iterator, num_steps):
      out = run_loop(iterator, num_steps)
      calls["loops"] += 1
      if calls["trial"] == trial_to_kill and calls["loops"] == loops:
        os.kill(os.getpid(), signal.SIGTERM)
      return out
    return counted

  monkeypatch.setattr(trainer_lib.Trainer, "train", train)
  monkeypatch.setattr(loop, "compile_loop", compile_loop)


@pytest.mark.slow
def test_sigterm_mid_trial_then_rerun_equals_the_uninterrupted_run(sst_root, bert_vocab, monkeypatch, capsys):
  """Two trials; SIGTERM in the second one's second loop. The run stops with a checkpoint and a line saying
  so; the same command again keeps trial 1's result, resumes trial 2 at its step and input position, and
  ends with the weights and dev results of a run never interrupted, bit for bit."""
  from electra_tf.finetuning.run import FinetuningRun
  straight = FinetuningRun(_config(sst_root, bert_vocab, "straight", num_trials=2, keep_all_models=True),
                           progress=False)
  straight_results = straight.run()

  cfg = _config(sst_root, bert_vocab, "killed", num_trials=2, keep_all_models=True)
  with monkeypatch.context() as m:
    _kill_after_loops(m, trial_to_kill=2, loops=2)
    first = FinetuningRun(cfg, progress=False)
    assert len(first.run()) == 1 and first.stopped
  out = capsys.readouterr().out
  assert "stopped by signal 15 in trial 2 at step 10; checkpoint saved, rerun the same command to resume" in out
  state = json.loads((sst_root / "models/killed/finetuning_resume/sst/state.json").read_text())
  assert state["trial"] == 2 and len(state["results"]) == 1

  second = FinetuningRun(cfg, progress=False)
  results = second.run()
  assert "resuming trial 2 (1 finished trial(s) kept)" in capsys.readouterr().out
  assert [r["sst"] for r in results] == [r["sst"] for r in straight_results]
  for trial in (1, 2):
    want, got = _trial_weights(straight, trial), _trial_weights(second, trial)
    assert want.keys() == got.keys()
    for name in want:
      np.testing.assert_array_equal(got[name], want[name], err_msg=name)
  assert not (sst_root / "models/killed/finetuning_resume").exists()  # done: nothing left to resume


@pytest.mark.slow
def test_the_next_trial_on_the_reset_trainer_equals_a_new_trainer(sst_root, bert_vocab, monkeypatch):
  """A run's trials share one trainer (``Trainer.reset``) and trace and compile the XLA step once; each trial
  still ends with the weights and dev results of a trainer built new for its seed, bit for bit."""
  from electra_tf.finetuning import run as run_lib
  from electra_tf.runtime import loop
  compiled = []
  original_compile = loop.compile_loop

  def counting_compile(*args, **kwargs):
    compiled.append(1)
    return original_compile(*args, **kwargs)

  def new_trainer_each_trial(self, seed):
    return run_lib.Trainer(self.config, self.tasks, self.strategy, seed)

  with monkeypatch.context() as m:
    m.setattr(loop, "compile_loop", counting_compile)
    shared = run_lib.FinetuningRun(_config(sst_root, bert_vocab, "shared", num_trials=2, keep_all_models=True,
                                           use_xla=True), progress=False)
    shared_results = shared.run()
  assert len(compiled) == 1
  with monkeypatch.context() as m:
    m.setattr(run_lib.FinetuningRun, "trainer_for", new_trainer_each_trial)
    fresh = run_lib.FinetuningRun(_config(sst_root, bert_vocab, "fresh", num_trials=2, keep_all_models=True,
                                          use_xla=True), progress=False)
    fresh_results = fresh.run()
  assert [r["sst"] for r in shared_results] == [r["sst"] for r in fresh_results]
  assert shared_results[0]["sst"] != shared_results[1]["sst"]  # the seeds differ, so do the trials
  for trial in (1, 2):
    want, got = _trial_weights(fresh, trial), _trial_weights(shared, trial)
    assert want.keys() == got.keys()
    for name in want:
      np.testing.assert_array_equal(got[name], want[name], err_msg=f"trial {trial}: {name}")


def test_a_cached_trainer_runs_another_grid_point_like_a_new_trainer_with_constant_schedule(sst_root, bert_vocab,
                                                                                             monkeypatch):
  """An experiment's runs share trainers (``TrainerCache``): a run with another peak LR, length and seed on the
  kept trainer traces and compiles nothing new, and ends with the weights and dev results of a new trainer whose
  schedule holds its peak and length as constants (``settable_schedule`` false), bit for bit. A run of another
  shape gets a trainer of its own."""
  from electra_tf import optimization
  from electra_tf.finetuning import run as run_lib, trainer_cache
  from electra_tf.runtime import loop, runner as runner_lib
  compiled = []
  original_compile = loop.compile_loop

  def counting_compile(*args, **kwargs):
    compiled.append(1)
    return original_compile(*args, **kwargs)

  cache = trainer_cache.TrainerCache()
  grid_point = dict(learning_rate=3e-4, num_train_epochs=1.5, seed=5, use_xla=True, keep_all_models=True)
  with monkeypatch.context() as m:
    m.setattr(loop, "compile_loop", counting_compile)
    run_lib.FinetuningRun(_config(sst_root, bert_vocab, "cached_a", learning_rate=1e-3, num_train_epochs=1.0,
                                  seed=3, use_xla=True), progress=False, trainers=cache).run()
    cached = run_lib.FinetuningRun(_config(sst_root, bert_vocab, "cached_b", **grid_point), progress=False,
                                   trainers=cache)
    cached_results = cached.run()
  assert len(compiled) == 1 and (cache.built, cache.reused) == (1, 1)

  def constant_schedule_optimizer(*args, **kwargs):
    return optimization.create_optimizer(*args, **{**kwargs, "settable_schedule": False})

  with monkeypatch.context() as m:
    m.setattr(runner_lib, "create_optimizer", constant_schedule_optimizer)
    fresh = run_lib.FinetuningRun(_config(sst_root, bert_vocab, "fresh_b", **grid_point), progress=False)
    fresh_results = fresh.run()
    assert type(fresh._trainer.schedule) is optimization.ReferenceSchedule  # pylint: disable=protected-access
  assert [r["sst"] for r in cached_results] == [r["sst"] for r in fresh_results]
  want, got = _trial_weights(fresh, 1), _trial_weights(cached, 1)
  assert want.keys() == got.keys()
  for name in want:
    np.testing.assert_array_equal(got[name], want[name], err_msg=name)

  other = _config(sst_root, bert_vocab, "other", train_batch_size=4)
  tasks = cached.tasks
  assert cache.key(other, tasks) != cache.key(cached.config, tasks)
  assert cache.key(_config(sst_root, bert_vocab, "x", **{**grid_point, "learning_rate": 1e-4, "seed": 9}), tasks) \
      == cache.key(cached.config, tasks)


def test_no_variable_the_compiled_fine_tuning_step_reads_is_int32(sst_root, bert_vocab):
  """TensorFlow keeps int32 variables in host memory on a GPU, and an XLA cluster there cannot read them (on an
  H200 the fine-tuning step stopped with "Trying to access resource trial_seed ... located in device CPU:0 from
  device GPU:0"): the trial's seed, the model's and the optimizer's variables are of other types."""
  import tensorflow as tf
  from electra_tf.finetuning.run import FinetuningRun
  trainer = FinetuningRun(_config(sst_root, bert_vocab, "dtypes"), progress=False).trainer_for(1)
  trainer.make_optimizer(10)
  variables = [trainer.seed_var, *trainer.model.variables, *trainer.optimizer.variables]
  assert len(variables) > 20 and trainer.seed_var.dtype == tf.int64
  assert [v.name for v in variables if v.dtype == tf.int32] == []


def test_resume_with_other_hparams_is_one_line(sst_root, bert_vocab):
  from electra_tf.errors import FinetuningError
  from electra_tf.finetuning import interrupted
  from electra_tf.finetuning.run import FinetuningRun
  cfg = _config(sst_root, bert_vocab, "changed")
  interrupted.InterruptedRun(cfg, "sst").record(1, [])
  changed = _config(sst_root, bert_vocab, "changed", learning_rate=3e-4)
  with pytest.raises(FinetuningError, match=r"interrupted run with other hparams \(learning_rate\); rerun"):
    FinetuningRun(changed, progress=False).run()


def test_float16_fine_tuning_trains_with_float32_variables(sst_root, bert_vocab):
  """float16 with dynamic loss scaling (V100/T4 users): finite loss, weights move, variables stay float32."""
  import keras
  from electra_tf.finetuning.run import FinetuningRun
  cfg = _config(sst_root, bert_vocab, "fp16", mixed_precision="float16", num_train_epochs=1.0)
  seen = {}
  from electra_tf.finetuning import run as run_lib
  try:
    run = FinetuningRun(cfg, progress=False)
    original = run_lib.Trainer.train

    def train(self, *args, **kwargs):
      seen["before"] = {n: v.numpy() for n, v in self.model.reference_variables().items()}
      stats = original(self, *args, **kwargs)
      seen["after"] = {n: v.numpy() for n, v in self.model.reference_variables().items()}
      seen["scale"] = float(self.loss_scale.scale.numpy())
      seen["stats"] = stats
      return stats

    run_lib.Trainer.train = train
    try:
      results = run.run()
    finally:
      run_lib.Trainer.train = original
  finally:
    keras.mixed_precision.set_global_policy("float32")
  assert np.isfinite(seen["stats"]["loss"]) and seen["stats"]["global_step"] == 25
  assert 0.0 <= results[0]["sst"]["accuracy"] <= 100.0
  moved = sum(not np.array_equal(seen["before"][n], seen["after"][n]) for n in seen["before"])
  assert moved > 0.9 * len(seen["before"])
  assert all(v.dtype == np.float32 for v in seen["after"].values())
  assert seen["scale"] >= 1.0


def test_nan_loss_in_fine_tuning_is_one_error_line(sst_root, bert_vocab, monkeypatch):
  import tensorflow as tf
  from electra_tf.errors import ElectraError
  from electra_tf.finetuning import trainer as trainer_lib
  from electra_tf.finetuning.run import FinetuningRun
  forward = trainer_lib.Trainer.forward

  def poisoned(self, features, step, *args):
    loss, values = forward(self, features, step, *args)
    loss = loss + tf.where(step >= 3, np.nan, 0.0)
    return loss, {"loss": loss}

  monkeypatch.setattr(trainer_lib.Trainer, "forward", poisoned)
  with pytest.raises(ElectraError) as e:
    FinetuningRun(_config(sst_root, bert_vocab, "nan"), progress=False).run()
  message = str(e.value)
  assert "\n" not in message and message.startswith("loss became NaN or infinite at step 3; stopped")
  assert "lower learning_rate" in message


def _worker(job, root, vocab):
  """{mode: (replicas, whether the step is compiled, weights)} of the one-device and two-replica runs."""
  proc = subprocess.run([sys.executable, os.path.join(HERE, "_runtime_runner_worker.py"), job, str(root),
                         str(vocab)], capture_output=True, text=True, timeout=600,
                        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
  assert proc.returncode == 0, proc.stderr[-3000:]
  out = json.loads(proc.stdout.strip().splitlines()[-1])
  return {mode: (run["replicas"], run["xla"], dict(np.load(run["weights"]))) for mode, run in out.items()}


@pytest.mark.slow
@pytest.mark.parametrize("job", ["finetune", "pretrain"])
def test_xla_on_two_replicas_trains_like_one_device(job, sst_root, data_dir, bert_vocab, tmp_path):
  """``use_xla`` with two replicas (MirroredStrategy on two logical CPUs): the shared policy compiles the
  gradient computation and each device's optimizer update, and keeps the all-reduce outside them; the weights
  equal the one-device XLA run's, element by element (dropout on: its masks are keyed by each example's global
  row)."""
  if job == "finetune":
    root = tmp_path / "ft"
    shutil.copytree(sst_root / "finetuning_data", root / "finetuning_data")
  else:
    root = lib.build_tfrecords(tmp_path / "pt", data_dir, bert_vocab, max_lines=300)
  runs = _worker(job, root, bert_vocab)
  (one, xla_one, w_one), (two, xla_two, w_two) = runs["single"], runs["mirrored"]
  assert (one, two) == (1, 2) and xla_one and xla_two
  assert w_one.keys() == w_two.keys()
  for name in w_one:
    np.testing.assert_allclose(w_two[name], w_one[name], rtol=1e-4, atol=2e-5, err_msg=name)
