"""Heads, variable names, loss masking and the layer-wise learning rates of the fine-tuning model."""

import numpy as np
import pytest
import scipy.special
import tensorflow as tf

from electra_tf.finetuning import head_families
from electra_tf.finetuning.model import FinetuningModel
from electra_tf.finetuning.tasks import TASKS
from electra_tf.finetuning.tasks import get_tasks
from electra_tf.finetuning.trainer import Trainer
from electra_tf.tokenization import load_tokenizer
from tests._finetuning_testlib import tiny_config


@pytest.fixture(scope="module")
def tokenizer(bert_vocab):
  return load_tokenizer(bert_vocab, True)


def _model(tmp_path, tasks, bert_vocab, tokenizer, **kw):
  cfg = tiny_config(tmp_path, tasks, bert_vocab, **kw)
  task_objs = get_tasks(cfg, tokenizer)
  for t in task_objs:
    if t.name == "chunk":
      t._label_mapping = {"B-NP": 0, "E-NP": 1, "O": 2}  # pylint: disable=protected-access
  model = FinetuningModel(cfg.model_config(), task_objs)
  model.build()
  return cfg, task_objs, model


def test_reference_variable_names(tmp_path, bert_vocab, tokenizer):
  _, _, model = _model(tmp_path, ["mnli", "sts", "squad", "chunk"], bert_vocab, tokenizer)
  names = model.reference_variables()
  heads = sorted(n for n in names if n.startswith("task_specific/"))
  assert heads == sorted(
      [f"task_specific/mnli/dense/{k}" for k in ("kernel", "bias")] +
      [f"task_specific/sts/dense/{k}" for k in ("kernel", "bias")] +
      [f"task_specific/chunk/dense/{k}" for k in ("kernel", "bias")] +
      [f"task_specific/squad/{d}/{k}" for d in ("dense", "qa_hidden", "dense_1", "dense_2", "dense_3")
       for k in ("kernel", "bias")])
  assert names["task_specific/mnli/dense/kernel"].shape == (32, 3)
  assert names["task_specific/squad/qa_hidden/kernel"].shape == (64, 512)
  assert names["task_specific/squad/dense_2/kernel"].shape == (64, 512)
  assert "electra/embeddings_project/kernel" in names and "electra/encoder/layer_0/output/dense/kernel" in names
  # every trainable variable has a reference name (the layer-wise LR needs one for each)
  assert {id(v) for v in model.trainable_variables} == {id(v) for v in names.values()}


def test_layerwise_learning_rates_follow_reference_formula(tmp_path, bert_vocab, tokenizer):
  cfg = tiny_config(tmp_path, ["rte"], bert_vocab, model_hparam_overrides=dict(
      hidden_size=32, num_hidden_layers=3, num_attention_heads=2, intermediate_size=64), layerwise_lr_decay=0.8)
  trainer = Trainer(cfg, get_tasks(cfg, tokenizer), tf.distribute.get_strategy(), seed=0)
  opt = trainer.make_optimizer(100)
  names = {id(v): n for n, v in trainer.model.reference_variables().items()}
  L, d = 3, 0.8
  for var, mult in zip(trainer.model.trainable_variables, opt._multipliers):  # pylint: disable=protected-access
    name = names[id(var)]
    if "/embeddings" in name:
      depth = 0
    elif name.startswith("task_specific/"):
      depth = L + 2
    else:
      depth = int(name.split("/layer_")[1].split("/")[0]) + 1
    assert mult == pytest.approx(d ** (L + 2 - depth)), name
  mults = dict(zip([names[id(v)] for v in trainer.model.trainable_variables], opt._multipliers))  # pylint: disable=protected-access
  assert mults["task_specific/rte/dense/kernel"] == 1.0
  assert mults["electra/encoder/layer_2/output/dense/kernel"] == pytest.approx(0.64)  # top layer: d^2
  assert mults["electra/embeddings/word_embeddings"] == pytest.approx(0.8 ** 5)
  assert mults["electra/embeddings_project/kernel"] == pytest.approx(0.8 ** 5)


def test_loss_is_summed_and_masked_by_task(tmp_path, bert_vocab, tokenizer):
  cfg, tasks, model = _model(tmp_path, ["sst", "sts"], bert_vocab, tokenizer)
  b, t = 4, 32
  rng = np.random.RandomState(0)
  feats = {"input_ids": tf.constant(rng.randint(1000, 2000, (b, t)), tf.int32),
           "input_mask": tf.ones((b, t), tf.int32), "segment_ids": tf.zeros((b, t), tf.int32),
           "task_id": tf.constant([0, 1, 1, 2]),  # 2 = dummy padding row
           "sst_label_ids": tf.constant([1, 0, 0, 0]), "sst_eid": tf.range(b),
           "sts_targets": tf.constant([0.0, 0.2, 0.8, 0.0]), "sts_eid": tf.range(b)}
  total, outs = model(feats, training=False)
  expected = outs["sst"]["loss"][0] + outs["sts"]["loss"][1] + outs["sts"]["loss"][2]
  assert float(total) == pytest.approx(float(expected), rel=1e-5)
  sts_pred = outs["sts"]["predictions"].numpy()
  assert outs["sts"]["loss"].numpy()[1] == pytest.approx((sts_pred[1] - 0.2) ** 2, rel=1e-5)
  # dropout differs with the seed in training, and is reproducible for a fixed seed
  a, _ = model(feats, training=True, dropout_seed=tf.constant([1, 2]))
  a2, _ = model(feats, training=True, dropout_seed=tf.constant([1, 2]))
  c, _ = model(feats, training=True, dropout_seed=tf.constant([3, 4]))
  assert float(a) == float(a2) and float(a) != float(c)


def test_qa_head_beam_outputs(tmp_path, bert_vocab, tokenizer):
  cfg, tasks, model = _model(tmp_path, ["squad"], bert_vocab, tokenizer, beam_size=3)
  b, t = 2, 32
  seg = np.zeros((b, t), np.int32)
  seg[:, 10:20] = 1
  mask = np.zeros((b, t), np.int32)
  mask[:, :20] = 1
  feats = {"input_ids": tf.constant(np.random.RandomState(0).randint(1000, 2000, (b, t)), tf.int32),
           "input_mask": tf.constant(mask), "segment_ids": tf.constant(seg), "task_id": tf.zeros(b, tf.int32),
           "squad_start_positions": tf.constant([12, 0]), "squad_end_positions": tf.constant([14, 0]),
           "squad_is_impossible": tf.constant([0, 1]), "squad_eid": tf.constant([0, 1000])}
  _, outs = model(feats, training=False)
  o = {k: v.numpy() for k, v in outs["squad"].items()}
  assert o["start_top_index"].shape == (2, 3) and o["end_top_index"].shape == (2, 3, 3)
  allowed = set(range(10, 20)) | {0}  # answer mask: the context (segment 1, real) and [CLS]
  assert set(o["start_top_index"].ravel()) <= allowed and set(o["end_top_index"].ravel()) <= allowed
  assert np.all(np.diff(o["start_top_log_probs"], axis=1) <= 0)
  # training uses the gold start; the loss includes the answerable term. Recomputed here from the returned
  # logits: mean of the start and end cross-entropies plus answerable_weight x the answerable log loss.
  loss, outs = model(feats, training=True, dropout_seed=tf.constant([0, 0]))
  o = {k: v.numpy().astype(np.float64) for k, v in outs["squad"].items()}
  nll = lambda logits, gold: scipy.special.logsumexp(logits, -1) - logits[np.arange(b), gold]
  answerable = np.logaddexp(0, o["answerable_logit"]) - np.array([0, 1]) * o["answerable_logit"]
  expected = ((nll(o["start_logits"], [12, 0]) + nll(o["end_logits"], [14, 0])) / 2
              + cfg.answerable_weight * answerable)
  assert float(loss) == pytest.approx(expected.sum(), rel=1e-5)


def test_every_head_family_gives_what_its_scorer_reads(tmp_path, bert_vocab, tokenizer):
  cfg, tasks, model = _model(tmp_path, ["sst", "sts", "chunk", "squad"], bert_vocab, tokenizer, beam_size=3)
  assert {t.head_type for t in TASKS.values()} <= set(head_families.FAMILIES)  # every task's family is registered
  b, t, rng = 2, 16, np.random.RandomState(0)
  ints = lambda *shape: tf.constant(rng.randint(0, 3, shape), tf.int32)
  feats = {"input_ids": tf.constant(rng.randint(1000, 2000, (b, t)), tf.int32),
           "input_mask": tf.ones((b, t), tf.int32), "segment_ids": tf.ones((b, t), tf.int32),
           "task_id": tf.zeros(b, tf.int32), "sst_label_ids": ints(b), "sts_targets": tf.zeros(b),
           "chunk_labeled_positions": ints(b, t), "chunk_labels": ints(b, t), "chunk_labels_mask": ints(b, t),
           "squad_start_positions": ints(b), "squad_end_positions": ints(b), "squad_is_impossible": ints(b)}
  feats.update({f"{task.name}_eid": tf.range(b) for task in tasks})
  _, outs = model(feats, training=False)
  for task in tasks:
    family = head_families.family(task.head_type)
    assert isinstance(model.heads[model.task_names.index(task.name)], family.layer)
    assert set(family.scorer_outputs) | {"loss", "eid"} <= set(outs[task.name]), task.name
    scorer = task.get_scorer("dev")
    if task.head_type != "qa":  # the QA scorer also needs the evaluation features' token maps
      scorer.update({k: v.numpy() for k, v in outs[task.name].items()})


@pytest.mark.parametrize("reinit", [False, True])
def test_reinit_embeddings_keeps_the_fresh_embedding_layer(tmp_path, bert_vocab, tokenizer, reinit):
  from electra_tf.convert.writers import write_tf1
  from electra_tf.finetuning.run import load_encoder
  _, _, source = _model(tmp_path, ["rte"], bert_vocab, tokenizer)
  prefix = write_tf1(str(tmp_path / "ckpt"), {n: v.numpy() for n, v in source.reference_variables().items()
                                              if n.startswith("electra/")})
  _, _, target = _model(tmp_path, ["rte"], bert_vocab, tokenizer)
  fresh = {n: v.numpy() for n, v in target.reference_variables().items()}
  load_encoder(target, prefix, reinit_embeddings=reinit)
  expected_source = {n for n in fresh if n.startswith("electra/")}
  if reinit:
    expected_source = {n for n in expected_source if not n.startswith("electra/embeddings/")}
    assert len(fresh) - len(expected_source) > 5  # the embedding tables, their LayerNorm and the head stay fresh
  for name, variable in target.reference_variables().items():
    want = source.reference_variables()[name].numpy() if name in expected_source else fresh[name]
    np.testing.assert_array_equal(variable.numpy(), want, err_msg=name)
    if name.endswith("_embeddings") or name.endswith("kernel"):  # the two models' draws differ
      assert not np.array_equal(fresh[name], source.reference_variables()[name].numpy()), name


def test_the_trainer_reads_the_batches_directly():
  """The trainer iterates the dataset itself (a local iterator of global batches), with tf.data's autotuner
  off: the distributed wrapper's and the autotuner's background threads made deleting a trial's training
  iterator wait for their next wake-up at the end of every trial. The batches are the ones the wrapper
  gives."""
  from electra_tf.finetuning.inputs import make_dataset
  arrays = {"input_ids": np.arange(40 * 3).reshape(40, 3), "task_id": np.zeros(40, np.int32)}
  ds = make_dataset(arrays, 8, training=True, seed=3)
  assert ds.options().autotune.enabled is False
  direct = [b["input_ids"].numpy() for b in ds.take(7)]
  # a fresh dataset: a seeded shuffle draws new seeds for each iterator of the same dataset object
  again = make_dataset(arrays, 8, training=True, seed=3)
  wrapped = iter(tf.distribute.OneDeviceStrategy("/cpu:0").experimental_distribute_dataset(again))
  for batch in direct:
    np.testing.assert_array_equal(batch, next(wrapped)["input_ids"].numpy())
  assert len({tuple(b[:, 0]) for b in direct}) == 7  # shuffled, repeated batches, not one batch again


def test_length_buckets_cut_only_padding(tmp_path, bert_vocab, tokenizer):
  """``length_bucket_width``: each batch is cut to a bucket length at or above its longest example, the cut
  rows are the padded rows' first columns, and the tagging head's loss and predictions on a cut batch equal
  those on the examples padded to max_seq_length."""
  from electra_tf.finetuning.inputs import bucket_lengths, make_dataset
  _, _, model = _model(tmp_path, ["chunk"], bert_vocab, tokenizer)
  n, t, width = 24, 32, 8
  rng = np.random.RandomState(1)
  lengths = rng.randint(3, t + 1, n)
  arrays = {k: np.zeros((n, t), np.int32) for k in ("input_ids", "input_mask", "segment_ids", "chunk_labels",
                                                      "chunk_labeled_positions")}
  arrays["chunk_labels_mask"] = np.zeros((n, t), np.float32)
  arrays.update(task_id=np.zeros(n, np.int32), chunk_eid=np.arange(n, dtype=np.int32))
  for i, length in enumerate(lengths):
    arrays["input_ids"][i, :length] = rng.randint(1000, 2000, length)
    arrays["input_mask"][i, :length] = arrays["segment_ids"][i, :length] = 1
    positions = np.sort(rng.choice(np.arange(1, length), rng.randint(1, length), replace=False))
    arrays["chunk_labeled_positions"][i, :len(positions)] = positions
    arrays["chunk_labels"][i, :len(positions)] = rng.randint(0, 3, len(positions))
    arrays["chunk_labels_mask"][i, :len(positions)] = 1.0
  _, padded = model({k: tf.constant(v) for k, v in arrays.items()}, training=False)
  seen, widths = set(), set()
  for batch in make_dataset(arrays, 4, training=True, seed=0, bucket_width=width).take(40):
    cut = batch["input_ids"].shape[1]
    rows = batch["chunk_eid"].numpy()
    assert cut in bucket_lengths(width, t) and cut - width < lengths[rows].max() <= cut, (cut, lengths[rows])
    for key, full in arrays.items():
      want = full[rows][:, :cut] if full.ndim == 2 else full[rows]
      np.testing.assert_array_equal(batch[key].numpy(), want, err_msg=key)
      if full.ndim == 2:
        assert not full[rows][:, cut:].any(), key  # only padding was cut
    _, outs = model(batch, training=False)
    np.testing.assert_allclose(outs["chunk"]["loss"].numpy(), padded["chunk"]["loss"].numpy()[rows], rtol=1e-5)
    mask = arrays["chunk_labels_mask"][rows][:, :cut] > 0
    np.testing.assert_array_equal(outs["chunk"]["predictions"].numpy()[mask],
                                  padded["chunk"]["predictions"].numpy()[rows][:, :cut][mask])
    seen.update(rows.tolist())
    widths.add(cut)
  assert seen == set(range(n)) and widths == set(bucket_lengths(width, t))


def test_length_buckets_narrower_than_the_qa_beam_are_refused(tmp_path, bert_vocab, tokenizer):
  """A QA head takes the top beam_size positions of every example, so a bucket narrower than that is refused
  before training, in one line."""
  from electra_tf.hparams import HParamError
  cfg = tiny_config(tmp_path, ["squad"], bert_vocab, length_bucket_width=16, beam_size=20)
  with pytest.raises(HParamError, match="length_bucket_width 16 is below beam_size 20.*at least 20, or 0"):
    Trainer(cfg, get_tasks(cfg, tokenizer), tf.distribute.OneDeviceStrategy("/cpu:0"), seed=0)
  cfg = tiny_config(tmp_path, ["squad"], bert_vocab, length_bucket_width=32, beam_size=20)
  assert Trainer(cfg, get_tasks(cfg, tokenizer), tf.distribute.OneDeviceStrategy("/cpu:0"), seed=0).model


def test_sentence_heads_compute_the_last_layer_at_cls_only_with_the_same_values(tmp_path, bert_vocab, tokenizer):
  from electra_tf.modeling import keyed_random  # pylint: disable=import-outside-toplevel
  from electra_tf.modeling.dropout import RowKeyedSeed  # pylint: disable=import-outside-toplevel
  _, _, model = _model(tmp_path, ["sst", "sts"], bert_vocab, tokenizer,
                       model_hparam_overrides={**tiny_config(tmp_path, ["sst"], bert_vocab).model_hparam_overrides,
                                               "num_hidden_layers": 2, "num_attention_heads": 2})
  assert model.first_token_only
  assert not _model(tmp_path, ["sst", "chunk"], bert_vocab, tokenizer)[2].first_token_only
  rng = np.random.RandomState(3)
  for v in model.weights:  # every bias and LayerNorm gain away from its initial value
    v.assign(v.numpy() + rng.normal(0, 0.05, v.shape).astype(np.float32))
  b, t = 4, 32
  lengths = [32, 20, 9, 27]
  feats = {"input_ids": tf.constant(rng.randint(1000, 2000, (b, t)), tf.int32),
           "input_mask": tf.constant([[1] * n + [0] * (t - n) for n in lengths], tf.int32),
           "segment_ids": tf.constant([[0] * 12 + [1] * (t - 12)] * b, tf.int32),
           "task_id": tf.constant([0, 1, 0, 1]), "sst_label_ids": tf.constant([1, 0, 0, 1]), "sst_eid": tf.range(b),
           "sts_targets": tf.constant([0.0, 0.2, 0.8, 0.4]), "sts_eid": tf.range(b)}

  def run(first_token_only, training, seed):
    model.first_token_only = first_token_only
    with tf.GradientTape() as tape:
      total, outs = model(feats, training=training, dropout_seed=seed)
    grads = tape.gradient(total, model.trainable_variables)
    return total.numpy(), outs["sst"]["logits"].numpy(), outs["sts"]["predictions"].numpy(), grads

  keyed = lambda: RowKeyedSeed(keyed_random.step_key(7, 3, 4), 0)
  for training, seed in ((False, None), (True, tf.constant([5, 6])), (True, keyed())):
    cut, full = run(True, training, seed), run(False, training, seed)
    for a, c in zip(cut[:3], full[:3]):
      np.testing.assert_allclose(a, c, rtol=2e-6, atol=2e-6)
    for g_cut, g_full in zip(cut[3], full[3]):
      np.testing.assert_allclose(tf.convert_to_tensor(g_cut).numpy(), tf.convert_to_tensor(g_full).numpy(),
                                 rtol=2e-5, atol=2e-6)
  # dropout is on in training: another seed gives another loss
  assert run(True, True, tf.constant([5, 7]))[0] != run(True, True, tf.constant([5, 6]))[0]
  # under XLA too
  compiled = tf.function(lambda f: model(f, training=True, dropout_seed=keyed()), jit_compile=True)
  model.first_token_only = True
  a = compiled(feats)[0].numpy()
  model.first_token_only = False
  compiled = tf.function(lambda f: model(f, training=True, dropout_seed=keyed()), jit_compile=True)
  np.testing.assert_allclose(a, compiled(feats)[0].numpy(), rtol=2e-6)
