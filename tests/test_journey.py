"""A user's whole journey through the command lines, for a WordPiece and a SentencePiece vocab:

raw WikiText-2 text -> build_vocab -> build_pretraining_dataset -> run_pretraining (a few tiny steps) ->
convert export-hf -> transformers (its own tokenizer from the export) gives our discriminator's logits ->
run_finetuning initialised from that Hugging Face directory on rt_polarity -> convert export-savedmodel ->
the SavedModel, loaded in a fresh process, gives the fine-tuned model's predictions on raw strings.

The commands run in-process through the ``electra_tf.cli`` mains (the same code as the console commands);
only serving runs in a subprocess, as a user's server would. About a minute per vocab kind on 2 cores.
"""

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import TINY_MODEL, require_module
from tests._finetuning_testlib import rt_polarity_as_sst

pytestmark = pytest.mark.slow

SEQ = 32
SHAPE = dict(model_hparam_overrides=dict(TINY_MODEL), embedding_size=32, max_seq_length=SEQ)


def _wikitext_paragraphs(data_dir, n):
  out = []
  with gzip.open(data_dir / "corpus" / "wikitext-2" / "train.raw.gz", "rt", encoding="utf-8") as f:
    for line in f:
      line = line.strip()
      if line and not line.startswith("="):
        out.append(line)
      if len(out) >= n:
        return out
  return out


def _cli(main, argv):
  code = main([str(a) for a in argv])
  assert code == 0, (main.__module__, argv)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, data_dir):
  """600 WikiText-2 paragraphs as a --corpus-dir: one sentence-ish line each, a blank line every 6."""
  root = tmp_path_factory.mktemp("corpus")
  lines = _wikitext_paragraphs(data_dir, 600)
  text = "".join(line + ("\n\n" if i % 6 == 5 else "\n") for i, line in enumerate(lines))
  (root / "wiki.txt").write_text(text, encoding="utf-8")
  return root


def _finetuning_data(root, data_dir, n_train=240, n_dev=64):
  """The sst layout of the first rt_polarity rows; returns the dev sentences."""
  rows = (rt_polarity_as_sst(root, data_dir, n_train, n_dev) / "finetuning_data/sst/dev.tsv").read_text(
      encoding="utf-8").splitlines()[1:]
  return [row.split("\t")[0] for row in rows]


FRESH = """
import json, sys
import tensorflow as tf
import tensorflow_text  # registers the in-graph tokenizer ops
served = tf.saved_model.load(sys.argv[1])
out = served.signatures["serving_default"](text=tf.constant(json.loads(sys.argv[2])))
print(json.dumps({"logits": out["logits"].numpy().tolist(), "label": [s.decode() for s in out["label"].numpy()]}))
"""


def _python_logits(model_dir, vocab_file, sentences):
  """The fine-tuned model in Python on the project tokenizer's ids, packed as fine-tuning packs them."""
  from electra_tf import tokenization
  from electra_tf.serving.savedmodel import build_finetuned_model
  model, info, _ = build_finetuned_model(model_dir)
  tok = tokenization.load_tokenizer(vocab_file, do_lower_case=True)
  cls, sep = tok.convert_tokens_to_ids(["[CLS]", "[SEP]"])
  ids = np.zeros([len(sentences), SEQ], np.int32)
  for r, s in enumerate(sentences):
    row = [cls] + tok.convert_tokens_to_ids(tok.tokenize(s))[:SEQ - 2] + [sep]
    ids[r, :len(row)] = row
  zeros = np.zeros([len(sentences)], np.int32)
  features = dict(input_ids=ids, input_mask=(ids > 0).astype(np.int32), segment_ids=np.zeros_like(ids),
                  task_id=zeros)
  for key in ("eid", "label_ids"):
    features[f"{info['name']}_{key}"] = zeros
  _, outputs = model(features, training=False)
  return outputs[info["name"]]["logits"].numpy()


@pytest.mark.parametrize("kind", ["wordpiece", "sentencepiece"])
def test_journey_from_raw_text_to_transformers_and_a_served_model(kind, corpus, tmp_path, data_dir, capsys):
  transformers = require_module("transformers")
  torch = require_module("torch")
  from electra_tf import tokenization
  from electra_tf.cli import build_data, build_vocab, convert, finetune, pretrain
  from electra_tf.convert import load_pretrained_weights
  from electra_tf.convert.readers import read_pretraining_config
  from electra_tf.modeling import build_pretraining_networks

  root = tmp_path
  # 1. a vocab learned from the raw text
  if kind == "sentencepiece":
    _cli(build_vocab.main, ["--corpus-dir", corpus, "--sentencepiece", "--output", root / "sp", "--vocab-size", 1000])
    vocab_file = root / "sp.model"
  else:
    _cli(build_vocab.main, ["--corpus-dir", corpus, "--output", root / "vocab.txt", "--vocab-size", 1000])
    vocab_file = root / "vocab.txt"
  vocab_size = tokenization.read_vocab(vocab_file).size

  # 2. TFRecords, 3. a short pre-training run
  _cli(build_data.main, ["--corpus-dir", corpus, "--vocab-file", vocab_file, "--output-dir",
                         root / "pretrain_tfrecords", "--max-seq-length", SEQ, "--num-shards", 2, "--no-progress"])
  hparams = dict(SHAPE, vocab_file=str(vocab_file), vocab_size=vocab_size, train_batch_size=8,
                 num_train_steps=12, num_warmup_steps=0, learning_rate=2e-3, iterations_per_loop=6,
                 save_checkpoints_steps=12, generator_hidden_size=0.5, do_eval=False)
  _cli(pretrain.main, ["--data-dir", root, "--model-name", "tiny", "--hparams", json.dumps(hparams), "--no-progress"])
  run_dir = root / "models" / "tiny"

  # 4. export-hf: transformers, with the exported tokenizer, gives our discriminator's logits
  hf_dir = root / "hf"
  capsys.readouterr()
  _cli(convert.main, ["export-hf", run_dir, "--output", hf_dir])
  hf_class = "AlbertTokenizer" if kind == "sentencepiece" else "ElectraTokenizer"
  assert f"with {'tokenizer_class ' if kind == 'sentencepiece' else ''}{hf_class}" in capsys.readouterr().out
  disc_dir = hf_dir / "discriminator"
  expected_vocab = "spiece.model" if kind == "sentencepiece" else "vocab.txt"
  assert (disc_dir / expected_vocab).read_bytes() == vocab_file.read_bytes()
  hf_tok = transformers.AutoTokenizer.from_pretrained(str(disc_dir))
  lines = _wikitext_paragraphs(data_dir, 700)[600:606]
  ours_tok = tokenization.load_tokenizer(vocab_file, do_lower_case=True)
  cls, sep = ours_tok.convert_tokens_to_ids(["[CLS]", "[SEP]"])
  for line in lines:  # the same ids as the data builder's tokenizer
    assert hf_tok(line)["input_ids"] == [cls] + ours_tok.convert_tokens_to_ids(ours_tok.tokenize(line)) + [sep]
  batch = hf_tok(lines, padding="max_length", truncation=True, max_length=SEQ, return_tensors="np")
  inputs = tuple(batch[k].astype(np.int32) for k in ("input_ids", "attention_mask", "token_type_ids"))
  nets = build_pretraining_networks(read_pretraining_config(str(run_dir)))
  load_pretrained_weights(str(run_dir), nets)
  ours = nets.discriminator(*inputs, training=False)["logits"].numpy()
  hf = transformers.ElectraForPreTraining.from_pretrained(str(disc_dir)).eval()
  with torch.no_grad():
    theirs = hf(**{k: torch.tensor(v) for k, v in batch.items()}).logits.numpy()
  mask = inputs[1].astype(bool)
  diff = float(np.max(np.abs(ours - theirs)[mask]))
  assert diff <= 1e-4, diff

  # 5. fine-tuning initialised from the Hugging Face directory, 6. export-savedmodel
  dev = _finetuning_data(root, data_dir)
  ft_hparams = dict(SHAPE, vocab_file=str(vocab_file), vocab_size=vocab_size, train_batch_size=16,
                    eval_batch_size=32, num_train_epochs=1.0, learning_rate=1e-3)
  _cli(finetune.main, ["--data-dir", root, "--model-name", "ft", "--task", "sst", "--init-checkpoint", disc_dir,
                       "--hparams", json.dumps(ft_hparams), "--no-progress"])
  ft_dir = root / "models" / "ft" / "finetuning_models" / "sst_model_1"
  assert (ft_dir / expected_vocab).is_file()
  served = root / "served"
  _cli(convert.main, ["export-savedmodel", ft_dir, "--output", served, "--max-seq-length", SEQ])

  # 7. served in a fresh process on raw strings == the fine-tuned model in Python
  result = subprocess.run([sys.executable, "-c", FRESH, str(served), json.dumps(dev)], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  got = json.loads(result.stdout.strip().splitlines()[-1])
  expected = _python_logits(str(ft_dir), str(vocab_file), dev)
  np.testing.assert_allclose(np.array(got["logits"]), expected, atol=1e-5)
  assert [int(l) for l in got["label"]] == expected.argmax(-1).tolist()
