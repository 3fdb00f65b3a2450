"""``python -m electra_tf.convert``: bad input gives one ``error:`` line and exit status 2; fine-tuned heads
export to Hugging Face where they correspond (exact logits) and are refused clearly where they do not."""

import os
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.configs import FinetuningConfig
from electra_tf.convert import load_pretrained_weights
from electra_tf.convert.__main__ import main
from electra_tf.finetuning.model import FinetuningModel

import _convert_testlib as lib
from test_convert_tf1 import V, reference_layout, write_reference_checkpoint
from test_serving_savedmodel import CONFIG, _finetuned_checkpoint

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def reference_dir(tmp_path_factory):
  folder = tmp_path_factory.mktemp("ref")
  write_reference_checkpoint(str(folder / "model.ckpt-7"), reference_layout(), slots=False)
  with open(folder / "checkpoint", "w") as f:
    f.write('model_checkpoint_path: "model.ckpt-7"\n')
  return folder


def _error_line(capsys, argv):
  assert main(argv) == 2
  err = capsys.readouterr().err.strip()
  assert err.startswith("error: ") and "\n" not in err, err
  return err


def test_missing_file(capsys, tmp_path):
  err = _error_line(capsys, ["import-tf1", str(tmp_path / "nope"), "-o", str(tmp_path / "out")])
  assert "no such file or directory" in err
  assert not (tmp_path / "out").exists()


def test_checkpoint_of_another_architecture(capsys, tmp_path):
  prefix = str(tmp_path / "bert.ckpt")
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=["bert/embeddings/word_embeddings", "bert/pooler/dense/kernel"],
                    shape_and_slices=["", ""], tensors=[tf.zeros([10, 4]), tf.zeros([4, 4])])
  err = _error_line(capsys, ["import-tf1", prefix, "-o", str(tmp_path / "out")])
  assert "is not an ELECTRA checkpoint" in err and "bert/" in err


def test_vocab_that_does_not_match_the_embeddings(capsys, reference_dir, tmp_path):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]) + "\n")
  err = _error_line(capsys, ["import-tf1", str(reference_dir), "-o", str(tmp_path / "out"), "--vocab", str(vocab)])
  assert f"has 7 tokens but the checkpoint's word embeddings have {V} rows" in err
  assert not (tmp_path / "out").exists() and not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


def test_existing_output_is_not_overwritten(capsys, reference_dir, tmp_path):
  (tmp_path / "out").mkdir()
  err = _error_line(capsys, ["import-tf1", str(reference_dir), "-o", str(tmp_path / "out")])
  assert "already exists" in err


def test_export_hf_refuses_before_writing_either_half(capsys, reference_dir, tmp_path):
  """generator/ already there, discriminator/ not: nothing is added (it used to write discriminator/ first)."""
  (tmp_path / "out" / "generator").mkdir(parents=True)
  err = _error_line(capsys, ["export-hf", str(reference_dir), "-o", str(tmp_path / "out")])
  assert "generator already exists" in err
  assert sorted(os.listdir(tmp_path / "out")) == ["generator"]


def test_import_then_inspect_as_a_subprocess(reference_dir, tmp_path):
  out = str(tmp_path / "model")
  env = dict(os.environ, PYTHONPATH=REPO)
  run = lambda *a: subprocess.run([sys.executable, "-m", "electra_tf.convert", *a], capture_output=True,
                                  text=True, env=env, timeout=300)
  result = run("import-tf1", str(reference_dir), "-o", out)
  assert result.returncode == 0, result.stderr
  assert "found ELECTRA custom discriminator L=2 H=32" in result.stdout and "init_checkpoint" in result.stdout
  # The model directory is itself a reference-style init_checkpoint directory.
  assert tf.train.latest_checkpoint(out).endswith(os.path.join("weights", "model.ckpt"))
  result = run("inspect", out)
  assert result.returncode == 0 and "global_step: 1234" in result.stdout, result.stdout + result.stderr


def test_classifier_exports_as_sequence_classification_with_exact_logits(tmp_path, capsys):
  transformers = pytest.importorskip("transformers")
  model_dir, _ = _finetuned_checkpoint(tmp_path, "mnli", "classification", 3)
  assert main(["export-hf", model_dir, "-o", str(tmp_path / "hf")]) == 0
  assert "exact identity" in capsys.readouterr().out
  hf = transformers.ElectraForSequenceClassification.from_pretrained(str(tmp_path / "hf"))
  assert hf.config.id2label[0] == "contradiction"
  inputs = lib.random_inputs(CONFIG.vocab_size, seq=10)
  spec = types.SimpleNamespace(name="mnli", head_type="classification", num_outputs=3,
                               config=FinetuningConfig.create(task_names=["mnli"]))
  model = FinetuningModel(CONFIG, [spec])
  model.build(None)
  load_pretrained_weights(model_dir, model, require_all=True)
  ids, mask, seg = (tf.constant(x) for x in inputs)
  zeros = tf.zeros([ids.shape[0]], tf.int32)
  logits = model(dict(input_ids=ids, input_mask=mask, segment_ids=seg, task_id=zeros, mnli_eid=zeros,
                      mnli_label_ids=zeros), training=False)[1]["mnli"]["logits"].numpy()
  diff = lib.max_diff(logits, lib.hf_logits(hf, inputs))
  print(f"classifier -> ElectraForSequenceClassification: max |diff| = {diff:.2e}")
  assert diff <= 1e-4


def test_qa_head_to_hf_is_refused_clearly(tmp_path, capsys):
  model_dir, _ = _finetuned_checkpoint(tmp_path, "squad", "qa", None)
  err = _error_line(capsys, ["export-hf", model_dir, "-o", str(tmp_path / "hf")])
  assert "no Hugging Face counterpart" in err
