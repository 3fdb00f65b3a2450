"""SavedModel export: a fine-tuned classifier / QA model served on raw strings, loaded in a fresh process
that imports only tensorflow and tensorflow_text, matches the in-process model."""

import json
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.configs import FinetuningConfig, ModelConfig
from electra_tf.convert import write_tf1
from electra_tf.serving.savedmodel import export_savedmodel, truncate_pair_lengths
from electra_tf.finetuning.base import truncate_seq_pair
from electra_tf.finetuning.model import FinetuningModel
from electra_tf.tokenization import FullTokenizer

WORDS = ("the a movie film was is great terrible good bad not very and but it plot acting who what where "
         "directed paris london city capital of france england ##s ##ing ##ed . , ? !").split()
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# Heads are max(1, H // 64) as in the reference: a checkpoint's shapes cannot tell the head count.
CONFIG = ModelConfig(vocab_size=len(SPECIAL) + len(WORDS), hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=1, intermediate_size=64, embedding_size=16, max_position_embeddings=64)
TEXTS = ["The movie was great!", "terrible acting, bad plot", "Not very good.", "who directed it?"]
PAIRS = ["it was not bad", "the film is good", "Paris", "what a movie"]


def _finetuned_checkpoint(folder, task, head_type, num_outputs):
  tmp = folder / "model"
  vocab = folder / "vocab.txt"
  vocab.write_text("\n".join(SPECIAL + list(WORDS)) + "\n")
  config = FinetuningConfig.create(task_names=[task])
  spec = types.SimpleNamespace(name=task, head_type=head_type, num_outputs=num_outputs, config=config)
  tf.keras.utils.set_random_seed(0)  # the same weights whatever ran before in this process
  model = FinetuningModel(CONFIG, [spec])
  model.build(None)
  rng = np.random.default_rng(0)
  arrays = {n: v.numpy() + rng.normal(0, 0.3, v.shape).astype(np.float32)
            for n, v in model.reference_variables().items()}
  write_tf1(str(tmp), arrays, 100, str(vocab))
  return str(tmp), str(vocab)


def _in_process(model_dir, vocab, task, head_type, num_outputs, texts, pairs, seq):
  """Reference featurization in Python (pure-Python tokenizer, reference truncation) -> our Keras model."""
  from electra_tf.convert import load_pretrained_weights
  config = FinetuningConfig.create(task_names=[task])
  model = FinetuningModel(CONFIG, [types.SimpleNamespace(name=task, head_type=head_type,
                                                         num_outputs=num_outputs, config=config)])
  model.build(None)
  load_pretrained_weights(model_dir, model, require_all=True)
  tok = FullTokenizer(vocab, True)
  rows = []
  for a, b in zip(texts, pairs):
    ta, tb = tok.tokenize(a), tok.tokenize(b)
    truncate_seq_pair(ta, tb, seq - 3)
    tokens = ["[CLS]"] + ta + ["[SEP]"] + tb + ["[SEP]"]
    ids = tok.convert_tokens_to_ids(tokens)
    segs = [0] * (len(ta) + 2) + [1] * (len(tb) + 1)
    rows.append((ids + [0] * (seq - len(ids)), [1] * len(ids) + [0] * (seq - len(ids)), segs + [0] * (seq - len(segs))))
  ids, mask, segs = (tf.constant([r[i] for r in rows], tf.int32) for i in range(3))
  zeros = tf.zeros([len(rows)], tf.int32)
  feats = dict(input_ids=ids, input_mask=mask, segment_ids=segs, task_id=zeros,
               **{f"{task}_{k}": zeros for k in ("eid", "label_ids", "start_positions", "end_positions",
                                                   "is_impossible", "targets")})
  return model(feats, training=False)[1][task]


FRESH = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    import tensorflow_text  # registers the tokenizer ops
    results = []
    for saved_dir, args in json.loads(sys.argv[1]):
      serve = tf.saved_model.load(saved_dir).signatures["serving_default"]
      out = serve(**{k: tf.constant(v) for k, v in args.items()})
      results.append({k: v.numpy().tolist() if v.dtype != tf.string else [s.decode() for s in v.numpy()]
                      for k, v in out.items()})
    assert not any(m.startswith("electra_tf") for m in sys.modules), "electra_tf was imported"
    print(json.dumps(results))
""")

QUESTIONS = ["who directed the film?", "what is the capital of france?"]
CONTEXTS = ["the film was directed by paris . it is good", "paris is the capital city of france , not london"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
  """Exports a classifier (mnli) and a QA model (squad), then serves both in ONE fresh process."""
  cls_dir, qa_dir = tmp_path_factory.mktemp("cls"), tmp_path_factory.mktemp("qa")
  cls_model, vocab = _finetuned_checkpoint(cls_dir, "mnli", "classification", 3)
  qa_model, _ = _finetuned_checkpoint(qa_dir, "squad", "qa", None)
  cls_info = export_savedmodel(cls_model, str(cls_dir / "served"), max_seq_length=16)
  qa_info = export_savedmodel(qa_model, str(qa_dir / "served"), max_seq_length=32)
  jobs = [(str(cls_dir / "served"), {"text": TEXTS, "text_pair": PAIRS}),
          (str(qa_dir / "served"), {"question": QUESTIONS, "context": CONTEXTS})]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH="")
  result = subprocess.run([sys.executable, "-c", FRESH, json.dumps(jobs)], capture_output=True, text=True,
                          env=env, cwd="/", timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  cls_out, qa_out = json.loads(result.stdout.strip().splitlines()[-1])
  return dict(vocab=vocab, cls=(cls_model, cls_info, cls_out), qa=(qa_model, qa_info, qa_out))


def test_pair_truncation_matches_the_reference():
  budget = 7
  la, lb = np.meshgrid(np.arange(12), np.arange(12))
  a, b = truncate_pair_lengths(tf.constant(la.ravel()), tf.constant(lb.ravel()), budget)
  for x, y, ea, eb in zip(la.ravel(), lb.ravel(), a.numpy(), b.numpy()):
    ta, tb = list(range(x)), list(range(y))
    truncate_seq_pair(ta, tb, budget)
    assert (len(ta), len(tb)) == (ea, eb), (x, y)


def test_classifier_savedmodel_in_fresh_process(served):
  model_dir, info, out = served["cls"]
  assert info["pair"] and info["labels"] == ["contradiction", "entailment", "neutral"]
  ref = _in_process(model_dir, served["vocab"], "mnli", "classification", 3, TEXTS, PAIRS, 16)
  probs = tf.nn.softmax(ref["logits"]).numpy()
  diff = float(np.max(np.abs(np.array(out["probabilities"]) - probs)))
  print(f"classifier SavedModel vs in-process probabilities: max |diff| = {diff:.2e}")
  assert diff <= 1e-5
  assert out["label"] == [info["labels"][i] for i in probs.argmax(-1)]


def test_qa_savedmodel_in_fresh_process(served):
  model_dir, info, out = served["qa"]
  assert info["type"] == "qa"
  config = FinetuningConfig.create(task_names=["squad"])
  ref = _in_process(model_dir, served["vocab"], "squad", "qa", None, QUESTIONS, CONTEXTS, 32)
  diff = float(np.max(np.abs(np.array(out["no_answer_logit"]) - ref["answerable_logit"].numpy())))
  print(f"QA SavedModel vs in-process no-answer logit: max |diff| = {diff:.2e}")
  assert diff <= 1e-4
  # The best valid (start, end) of the in-process beams must be the served span.
  start_lp, start_idx = ref["start_top_log_probs"].numpy(), ref["start_top_index"].numpy()
  end_lp, end_idx = ref["end_top_log_probs"].numpy(), ref["end_top_index"].numpy()
  tok = FullTokenizer(served["vocab"], True)
  for row, question in enumerate(QUESTIONS):
    first_context = len(tok.tokenize(question)) + 2
    best = max((start_lp[row, i] + end_lp[row, i, j], start_idx[row, i], end_idx[row, i, j])
               for i in range(start_idx.shape[1]) for j in range(end_idx.shape[2])
               if first_context <= start_idx[row, i] <= end_idx[row, i, j] < 32
               and end_idx[row, i, j] - start_idx[row, i] < config.max_answer_length
               and ref["start_logits"].numpy()[row, end_idx[row, i, j]] > -500)  # inside the context
    assert (out["start"][row], out["end"][row]) == (best[1], best[2])
    assert abs(out["score"][row] - best[0]) <= 1e-4
    tokens = ["[CLS]"] + tok.tokenize(question) + ["[SEP]"] + tok.tokenize(CONTEXTS[row]) + ["[SEP]"]
    pieces = tokens[best[1]:best[2] + 1]
    expected = " ".join(pieces).replace(" ##", "")
    assert out["answer"][row] == (expected if out["has_answer"][row] else "")
