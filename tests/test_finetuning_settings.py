"""No silent settings: the reference's fine-tuning loop hparams do what they say or are refused,
and the reference's results pickles are written."""

import json
import logging
import pickle

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import reporting
from electra_tf.configs import FinetuningConfig, PretrainingConfig
from electra_tf.finetuning.run import FinetuningData, FinetuningRun
from electra_tf.finetuning.tasks import get_tasks
from electra_tf.finetuning.inputs import num_train_steps
from electra_tf.finetuning.trainer import Trainer
from electra_tf.runtime.loop import loop_length
from electra_tf.hparams import HParamError
from electra_tf.pretraining import evaluation
from electra_tf.tokenization import load_tokenizer
from tests._finetuning_testlib import tiny_config, tsv, write


def test_refused_settings_name_the_reason():
  with pytest.raises(HParamError, match="use_tfrecords_if_existing: fine-tuning keeps no TFRecord cache"):
    FinetuningConfig.create("m", "/d", use_tfrecords_if_existing=True)
  assert not FinetuningConfig.create("m", "/d", use_tfrecords_if_existing=False).use_tfrecords_if_existing
  for create in (FinetuningConfig.create, PretrainingConfig.create):
    with pytest.raises(HParamError, match="num_tpu_cores is 8 but this run uses no TPU"):
      create("m", "/d", num_tpu_cores=8)
    assert create("m", "/d", num_tpu_cores=8, tpu_name="my-tpu").num_tpu_cores == 8
    assert create("m", "/d", num_tpu_cores=8, strategy="tpu").num_tpu_cores == 8
    assert create("m", "/d").num_tpu_cores is None


def test_debug_mode_sets_the_reference_loop_settings_and_given_values_win():
  cfg = FinetuningConfig.create("m", "/d", debug=True)
  assert (cfg.iterations_per_loop, cfg.log_examples) == (1, True)
  cfg = FinetuningConfig.create("m", "/d", debug=True, iterations_per_loop=7, log_examples=False)
  assert (cfg.iterations_per_loop, cfg.log_examples) == (7, False)
  assert (FinetuningConfig.create("m", "/d").iterations_per_loop, FinetuningConfig().log_examples) == (1000, False)


def test_loop_length_stops_at_every_boundary():
  assert loop_length(0, 100, 1000) == 100
  assert loop_length(0, 100, 30) == 30
  assert loop_length(90, 100, 30) == 10
  assert loop_length(5, 100, 30, 8, 0) == 3  # the epoch ends at step 8
  assert loop_length(8, 100, 30, 8, 20) == 8
  assert loop_length(17, 100, 30, 0, 20) == 3
  assert loop_length(5, 100, 30, 8, stops=[2, 6]) == 1  # a single stop ahead at step 6; the one behind is passed


def _sst_files(root, n):
  rows = [["sentence", "label"]] + [[f"{'a great film' if i % 2 else 'dull and slow'} number {i}", i % 2]
                                    for i in range(n)]
  write(root / "finetuning_data/sst/train.tsv", tsv(rows))
  write(root / "finetuning_data/sst/dev.tsv", tsv(rows[:5]))


def _train(tmp_path, bert_vocab, tokenizer, log_dir=None, **hparams):
  cfg = tiny_config(tmp_path, ["sst"], bert_vocab, train_batch_size=2, num_train_epochs=2.0, **hparams)
  tasks = get_tasks(cfg, tokenizer)
  arrays = FinetuningData(cfg, tasks).train_arrays()
  n_padded = len(arrays["task_id"])
  steps, per_epoch = num_train_steps(n_padded, 2, 2.0), n_padded // 2
  trainer = Trainer(cfg, tasks, tf.distribute.OneDeviceStrategy("/cpu:0"), seed=0)
  trainer.make_optimizer(steps)
  compiled = trainer.runner.train_loop()
  calls, checkpoints = [], []

  def counting_loop(iterator, num_steps):
    calls.append(int(num_steps))
    return compiled(iterator, num_steps)

  trainer.runner._loop = counting_loop  # pylint: disable=protected-access
  epochs = []
  trainer.train(arrays, steps, per_epoch, on_epoch_end=epochs.append, progress=False,
                on_checkpoint=checkpoints.append, log_dir=log_dir)
  weights = {n: v.numpy() for n, v in trainer.model.reference_variables().items()}
  return steps, per_epoch, calls, checkpoints, epochs, weights


def test_iterations_per_loop_runs_steps_per_call_with_the_same_result(tmp_path, bert_vocab):
  tokenizer = load_tokenizer(bert_vocab, True)
  _sst_files(tmp_path, 14)  # 7 steps per epoch at batch 2, 14 in all
  steps, per_epoch, calls, checkpoints, epochs, one = _train(tmp_path, bert_vocab, tokenizer, str(tmp_path / "tb"),
                                                             iterations_per_loop=1, save_checkpoints_steps=4)
  assert (steps, per_epoch) == (14, 7)
  assert calls == [1] * 14 and checkpoints == [4, 8, 12] and epochs == [1]
  # TensorBoard: the training log's points (every epoch here: fewer than 25 steps each)
  scalars = reporting.read_scalars(str(tmp_path / "tb"))
  assert {"train/loss", "train/grad_norm", "train/learning_rate", "train/examples_per_sec",
          "train/tokens_per_sec"} <= set(scalars)
  assert [s for s, _ in scalars["train/loss"]] == [7, 14]
  assert all(np.isfinite(v) and v > 0 for _, v in scalars["train/loss"])
  _, _, calls, checkpoints, epochs, many = _train(tmp_path, bert_vocab, tokenizer, iterations_per_loop=5,
                                                  save_checkpoints_steps=4)
  # Calls end at checkpoints (4, 8, 12) and at the epoch's end (7); the host acts at each of them.
  assert calls == [4, 3, 1, 4, 2] and checkpoints == [4, 8, 12] and epochs == [1]
  for name, value in one.items():
    np.testing.assert_allclose(many[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_log_examples_mid_run_checkpoint_and_results_pickle(tmp_path, bert_vocab, caplog):
  _sst_files(tmp_path, 6)
  cfg = tiny_config(tmp_path, ["sst"], bert_vocab, train_batch_size=2, log_examples=True, save_checkpoints_steps=2,
                    iterations_per_loop=10)
  with caplog.at_level(logging.INFO, logger="electra_tf.finetuning"):
    trials = FinetuningRun(cfg, progress=False).run()
  text = caplog.text
  assert "sst train, first of 6 features:" in text and "sst dev, first of 4 features:" in text
  assert "tokens: [CLS] dull and slow number 0 [SEP]" in text and "sst_label_ids: 0" in text
  assert text.count("(save_checkpoints_steps)") == 1  # step 2 of 3; the end is the regular save
  model_dir = tmp_path / "models/tiny/finetuning_models/sst_model_1"
  assert (model_dir / "checkpoint").exists() and (model_dir / "model.ckpt-3.index").exists()
  results = tmp_path / "models/tiny/results/sst_results"
  pickled = pickle.loads(results.with_suffix(".pkl").read_bytes())
  assert pickled == trials and pickled == json.loads(results.with_suffix(".json").read_text())["trials"]


def test_pretraining_results_pickle_holds_the_json_history(tmp_path):
  txt, pkl = tmp_path / "results" / "unsup_results.txt", tmp_path / "results" / "unsup_results.pkl"
  evaluation.write_results(str(txt), {"disc_auc": 0.75}, step=10, results_pkl=str(pkl))
  path = evaluation.write_results(str(txt), {"disc_auc": 0.8}, step=20, results_pkl=str(pkl))
  history = json.loads(open(path, encoding="utf-8").read())
  assert pickle.loads(pkl.read_bytes()) == history and [h["step"] for h in history] == [10, 20]
  assert PretrainingConfig.create("m", "/d").results_pkl == "/d/models/m/results/unsup_results.pkl"


def test_pretraining_evaluation_writes_the_pickle_it_is_configured_with(tmp_path, data_dir, bert_vocab):
  import _pretraining_testlib as lib  # pylint: disable=g-import-not-at-top
  from electra_tf.pretraining import trainer  # pylint: disable=g-import-not-at-top
  root = lib.build_tfrecords(tmp_path / "wiki", data_dir, bert_vocab, max_lines=200)
  pkl = tmp_path / "elsewhere" / "evals.pkl"  # results_pkl given: written there, not beside the text
  cfg = PretrainingConfig.create("m", str(root), **lib.tiny_hparams(results_pkl=str(pkl)))
  metrics = trainer.Trainer(cfg, progress=False, log_fn=lambda *_: None).evaluate(step=0, num_steps=1)
  history = pickle.loads(pkl.read_bytes())
  assert history == json.loads(open(evaluation.results_json_path(cfg.results_txt), encoding="utf-8").read())
  assert history[0]["step"] == 0 and history[0]["disc_auc"] == pytest.approx(metrics["disc_auc"])


def test_eval_every_epoch_and_keep_all_models_false(tmp_path, bert_vocab, caplog):
  """A dev evaluation after every epoch but the last (whose evaluation is the final one); with
  keep_all_models false each trial's model directory is gone once its results are written."""
  _sst_files(tmp_path, 6)
  cfg = tiny_config(tmp_path, ["sst"], bert_vocab, train_batch_size=2, num_train_epochs=3.0, eval_every_epoch=True,
                    keep_all_models=False, num_trials=2, learning_rate=1e-3)
  with caplog.at_level(logging.INFO, logger="electra_tf.finetuning"):
    trials = FinetuningRun(cfg, progress=False).run()
  evals = [r.getMessage() for r in caplog.records if r.getMessage().startswith("sst dev: ")]
  assert len(evals) == 2 * (2 + 1)  # per trial: after epochs 1 and 2, then the final evaluation
  for trial, lines in zip(trials, (evals[:3], evals[3:])):
    assert lines[2] == f"sst dev: accuracy: {trial['sst']['accuracy']:.2f} - loss: {trial['sst']['loss']:.2f}"
    assert len({line.split("loss: ")[1] for line in lines}) > 1  # the epochs' weights differ
  models = tmp_path / "models/tiny/finetuning_models"
  assert not (models / "sst_model_1").exists() and not (models / "sst_model_2").exists()
  assert len(json.loads((tmp_path / "models/tiny/results/sst_results.json").read_text())["trials"]) == 2


def test_bfloat16_fine_tuning_computes_in_bfloat16_and_tracks_float32(tmp_path, bert_vocab):
  """mixed_precision bfloat16: the run computes under the mixed_bfloat16 policy, saves float32 weights, and
  its dev loss and weights stay close to the float32 run's from the same seed."""
  import keras
  runs = {}
  for precision in ("float32", "bfloat16"):
    _sst_files(tmp_path / precision, 16)
    cfg = tiny_config(tmp_path / precision, ["sst"], bert_vocab, mixed_precision=precision)
    try:
      run = FinetuningRun(cfg, progress=False)
      results = run.run()[0]["sst"]
      assert keras.mixed_precision.global_policy().name == ("mixed_bfloat16" if precision == "bfloat16" else "float32")
    finally:
      keras.mixed_precision.set_global_policy("float32")
    reader = tf.train.load_checkpoint(run.model_dir(1))
    runs[precision] = results, {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}
  (f32, f32_w), (bf16, bf16_w) = runs["float32"], runs["bfloat16"]
  assert all(v.dtype in (np.float32, np.int64) for v in bf16_w.values())
  assert bf16["loss"] == pytest.approx(f32["loss"], rel=0.02)
  name = "electra/encoder/layer_0/attention/self/query/kernel"
  np.testing.assert_allclose(bf16_w[name], f32_w[name], atol=0.02)
  assert not np.array_equal(bf16_w[name], f32_w[name])  # bfloat16 arithmetic really ran
