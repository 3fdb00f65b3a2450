"""Each ``electra-convert`` subcommand through the CLI's ``main``: ``import-hf`` (identical arrays),
``export-tf1`` (reads back with ``tf.train.load_checkpoint``), ``export-hf --what encoder|generator``
(transformers gives the same hidden states / logits) and ``export-savedmodel`` for a sentence-pair
classifier, a regressor and QA (the SavedModel on raw strings equals the fine-tuned model in Python)."""

import numpy as np
import pytest
import tensorflow as tf

from conftest import require_module
from electra_tf.cli.convert import main
from electra_tf.convert import read_source, source_from_networks, write_hf
from electra_tf.configs import FinetuningConfig
from electra_tf.tokenization import FullTokenizer

import _convert_testlib as lib
from test_serving_savedmodel import CONTEXTS, PAIRS, QUESTIONS, TEXTS, _finetuned_checkpoint, _in_process

# One attention head: a checkpoint's shapes cannot tell the head count (max(1, H // 64) on import).
HPARAMS = dict(vocab_size=120, embedding_size=32, generator_hidden_size=0.25,
               model_hparam_overrides=dict(hidden_size=64, num_hidden_layers=1, num_attention_heads=1,
                                           intermediate_size=128, max_position_embeddings=64))


def _cli(argv, capsys):
  code = main(argv)
  captured = capsys.readouterr()
  assert code == 0, captured.err
  return captured.out


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
  """(networks, their Source, a model directory written by ``import-hf`` from their HF export)."""
  nets = lib.perturbed_networks(None, seed=11, **HPARAMS)
  source = source_from_networks(nets, global_step=42)
  folder = tmp_path_factory.mktemp("hf_in")
  write_hf(str(folder / "discriminator"), source, "discriminator")
  write_hf(str(folder / "generator"), source, "generator")
  model_dir = str(folder / "model")
  assert main(["import-hf", str(folder / "discriminator"), "--generator", str(folder / "generator"),
               "-o", model_dir]) == 0
  return nets, source, model_dir


def test_import_hf_gives_identical_arrays(pretrained):
  _, source, model_dir = pretrained
  back = read_source(model_dir)
  assert back.format == "electra-tf" and back.architecture == source.architecture
  assert sorted(back.arrays) == sorted(source.arrays)
  for name, value in source.arrays.items():
    np.testing.assert_array_equal(back.arrays[name], value, err_msg=name)


def test_export_tf1_reads_back_with_the_same_values(pretrained, tmp_path, capsys):
  _, source, model_dir = pretrained
  out = _cli(["export-tf1", model_dir, "-o", str(tmp_path / "tf1")], capsys)
  assert "wrote" in out
  reader = tf.train.load_checkpoint(str(tmp_path / "tf1"))
  assert set(reader.get_variable_to_shape_map()) == set(source.arrays) | {"global_step"}
  for name, value in source.arrays.items():
    np.testing.assert_array_equal(reader.get_tensor(name), value, err_msg=name)


def test_export_hf_encoder_gives_the_same_hidden_states(pretrained, tmp_path, capsys):
  transformers = require_module("transformers")
  torch = require_module("torch")
  nets, _, model_dir = pretrained
  _cli(["export-hf", model_dir, "--what", "encoder", "-o", str(tmp_path / "enc")], capsys)
  hf, info = transformers.ElectraModel.from_pretrained(str(tmp_path / "enc"), output_loading_info=True)
  assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
  inputs = lib.random_inputs(HPARAMS["vocab_size"])
  ids, mask, seg = (tf.constant(x) for x in inputs)
  ours = nets.discriminator(ids, mask, seg, training=False)["sequence_output"].numpy()
  hf.eval()
  with torch.no_grad():
    theirs = hf(**{k: torch.tensor(x, dtype=torch.long) for k, x in
                   zip(("input_ids", "attention_mask", "token_type_ids"), inputs)}).last_hidden_state.numpy()
  diff = lib.max_diff(ours, theirs)
  print(f"export-hf --what encoder: max |hidden state diff| = {diff:.2e}")
  assert diff <= 1e-4


def test_export_hf_generator_gives_the_same_logits(pretrained, tmp_path, capsys):
  transformers = require_module("transformers")
  require_module("torch")
  nets, _, model_dir = pretrained
  _cli(["export-hf", model_dir, "--what", "generator", "-o", str(tmp_path / "gen")], capsys)
  hf, info = transformers.ElectraForMaskedLM.from_pretrained(str(tmp_path / "gen"), output_loading_info=True)
  assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
  inputs = lib.random_inputs(HPARAMS["vocab_size"])
  diff = lib.max_diff(lib.our_logits(nets.generator, inputs), lib.hf_logits(hf, inputs))
  print(f"export-hf --what generator: max |logit diff| = {diff:.2e}")
  assert diff <= 1e-4


def _export_and_serve(tmp_path, capsys, task, head_type, num_outputs, seq, inputs):
  model_dir, vocab = _finetuned_checkpoint(tmp_path, task, head_type, num_outputs)
  served = str(tmp_path / "served")
  out = _cli(["export-savedmodel", model_dir, "-o", served, "--max-seq-length", str(seq)], capsys)
  assert f"task {task} ({head_type})" in out
  serve = tf.saved_model.load(served).signatures["serving_default"]
  result = {k: v.numpy() for k, v in serve(**{k: tf.constant(v) for k, v in inputs.items()}).items()}
  return model_dir, vocab, result


def test_export_savedmodel_sentence_pair_classifier(tmp_path, capsys):
  model_dir, vocab, out = _export_and_serve(tmp_path, capsys, "mrpc", "classification", 2, 16,
                                            {"text": TEXTS, "text_pair": PAIRS})
  ref = _in_process(model_dir, vocab, "mrpc", "classification", 2, TEXTS, PAIRS, 16)
  probs = tf.nn.softmax(ref["logits"]).numpy()
  diff = lib.max_diff(out["probabilities"], probs)
  print(f"export-savedmodel mrpc: max |probability diff| = {diff:.2e}")
  assert diff <= 1e-5
  np.testing.assert_array_equal(out["label_id"], probs.argmax(-1))
  assert [s.decode() for s in out["label"]] == [["0", "1"][i] for i in probs.argmax(-1)]


def test_export_savedmodel_regression(tmp_path, capsys):
  model_dir, vocab, out = _export_and_serve(tmp_path, capsys, "sts", "regression", 1, 16,
                                            {"text": TEXTS, "text_pair": PAIRS})
  ref = _in_process(model_dir, vocab, "sts", "regression", 1, TEXTS, PAIRS, 16)["predictions"].numpy()
  diff = lib.max_diff(out["prediction"], ref)
  print(f"export-savedmodel sts: max |prediction diff| = {diff:.2e}")
  assert diff <= 1e-5
  np.testing.assert_allclose(out["score"], ref * 5.0, atol=5e-5)


def test_export_savedmodel_qa(tmp_path, capsys):
  seq = 32
  model_dir, vocab, out = _export_and_serve(tmp_path, capsys, "squad", "qa", None, seq,
                                            {"question": QUESTIONS, "context": CONTEXTS})
  ref = _in_process(model_dir, vocab, "squad", "qa", None, QUESTIONS, CONTEXTS, seq)
  diff = lib.max_diff(out["no_answer_logit"], ref["answerable_logit"].numpy())
  print(f"export-savedmodel squad: max |no-answer logit diff| = {diff:.2e}")
  assert diff <= 1e-4
  max_answer = FinetuningConfig.create(task_names=["squad"]).max_answer_length
  start_lp, start_idx = ref["start_top_log_probs"].numpy(), ref["start_top_index"].numpy()
  end_lp, end_idx = ref["end_top_log_probs"].numpy(), ref["end_top_index"].numpy()
  tok = FullTokenizer(vocab, True)
  for row, (question, context) in enumerate(zip(QUESTIONS, CONTEXTS)):
    q, c = tok.tokenize(question), tok.tokenize(context)
    first, last = len(q) + 2, min(len(q) + 2 + len(c), seq - 1) - 1  # the context's token positions
    spans = [(start_lp[row, i] + end_lp[row, i, j], start_idx[row, i], end_idx[row, i, j])
             for i in range(start_idx.shape[1]) for j in range(end_idx.shape[2])
             if first <= start_idx[row, i] <= end_idx[row, i, j] <= last
             and end_idx[row, i, j] - start_idx[row, i] < max_answer]
    best = max(score for score, _, _ in spans)
    # An untrained head scores many spans alike, and logits within 1e-4 can swap which positions make the top
    # k: the served span must be a valid context span scoring the best, and one of the best if it is among
    # the in-process candidates.
    candidates = {(s, e): score for score, s, e in spans}
    served = (out["start"][row], out["end"][row])
    assert first <= served[0] <= served[1] <= last and served[1] - served[0] < max_answer, served
    if served in candidates:
      assert candidates[served] >= best - 1e-4, (served, candidates[served], best)
    assert abs(out["score"][row] - best) <= 1e-4, (served, out["score"][row], best)
    tokens = ["[CLS]"] + q + ["[SEP]"] + c + ["[SEP]"]
    expected = " ".join(tokens[served[0]:served[1] + 1]).replace(" ##", "")
    assert out["answer"][row].decode() == (expected if out["has_answer"][row] else "")
