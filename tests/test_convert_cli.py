"""``python -m electra_tf.convert``: bad input gives one ``error:`` line and exit status 2; fine-tuned heads
export to Hugging Face where they correspond (exact logits) and are refused clearly where they do not."""

import os
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow as tf

from conftest import require_module
from electra_tf.configs import FinetuningConfig
from electra_tf.convert import load_pretrained_weights, read_source
from electra_tf.convert.__main__ import main
from electra_tf.errors import ConversionError
from electra_tf.finetuning.model import FinetuningModel
from electra_tf.modeling import ElectraEncoder

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
  transformers = require_module("transformers")
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


# A damaged file in any of the formats, given to the converter or to the loader that pre-training's
# init_checkpoint and fine-tuning's --init-checkpoint call: one ConversionError line naming the file and the
# fix, exit 2 from the command, nothing written.
def _break_json(path, text):
  def damage(folder):
    (folder / path).write_text(text)
  return damage


def _truncate(pattern, keep=1 / 3):
  def damage(folder):
    files = sorted(folder.glob(pattern))
    assert files, pattern
    for f in files:
      data = f.read_bytes()
      f.write_bytes(data[:int(len(data) * keep)])
  return damage


DAMAGED = {
    "hf_config_not_json": ("hf", _break_json("config.json", '{"model_type": "electra",'),
                           "config.json is not valid JSON (Expecting"),
    "hf_config_not_an_object": ("hf", _break_json("config.json", "[1, 2]"), "config.json holds an array"),
    "hf_safetensors_corrupt": ("hf", _truncate("model.safetensors", keep=0.5),
                               "model.safetensors is corrupt or truncated"),
    "model_dir_config_not_json": ("model_dir", _break_json("electra_config.json", "{oops"),
                                  "electra_config.json is not valid JSON"),
    "model_dir_config_without_architecture": (
        "model_dir", _break_json("electra_config.json", '{"format": "electra-tf-model"}'),
        "electra_config.json has no valid architecture (KeyError: 'architecture')"),
    "tf1_data_truncated": ("tf1", _truncate("*.data-*"), "its .data file is truncated or corrupt"),
    "model_dir_data_truncated": ("model_dir", _truncate("weights/*.data-*"), "its .data file is truncated"),
}


@pytest.fixture(scope="module")
def formats(reference_dir, tmp_path_factory):
  """The reference checkpoint in each format: tf1, model_dir, hf."""
  root = tmp_path_factory.mktemp("formats")
  assert main(["import-tf1", str(reference_dir), "-o", str(root / "model_dir")]) == 0
  assert main(["export-hf", str(reference_dir), "--what", "discriminator", "-o", str(root / "hf")]) == 0
  return {"tf1": reference_dir, "model_dir": root / "model_dir", "hf": root / "hf"}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_damaged_input_is_one_line_for_the_converter_and_the_loader(case, formats, tmp_path, capsys):
  fmt, damage, expected = DAMAGED[case]
  config = read_source(str(formats[fmt])).architecture.discriminator
  damaged = tmp_path / "in"
  shutil.copytree(formats[fmt], damaged)
  damage(damaged)
  capsys.readouterr()
  assert expected in _error_line(capsys, ["inspect", str(damaged)])
  assert expected in _error_line(capsys, ["import-tf1" if fmt == "tf1" else "import-hf" if fmt == "hf"
                                          else "export-tf1", str(damaged), "-o", str(tmp_path / "out")])
  assert sorted(os.listdir(tmp_path)) == ["in"]  # no output, no temporary directory
  encoder = ElectraEncoder(config, name="electra")
  encoder.dummy_build()
  with pytest.raises(ConversionError) as error:
    load_pretrained_weights(str(damaged), encoder)
  assert expected in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("length", ["0", "-1", "2"])
def test_export_savedmodel_refuses_a_max_seq_length_too_short(length, reference_dir, tmp_path, capsys):
  err = _error_line(capsys, ["export-savedmodel", str(reference_dir), "-o", str(tmp_path / "sm"),
                             "--max-seq-length", length])
  assert f"max_seq_length {length} is too short" in err
  assert not (tmp_path / "sm").exists()


def test_export_savedmodel_refuses_a_max_seq_length_beyond_the_position_table(tmp_path, capsys):
  model_dir, _ = _finetuned_checkpoint(tmp_path, "mnli", "classification", 3)
  err = _error_line(capsys, ["export-savedmodel", model_dir, "-o", str(tmp_path / "sm"), "--max-seq-length",
                             "65"])
  assert f"longer than the model's {CONFIG.max_position_embeddings} position embeddings" in err
  assert not (tmp_path / "sm").exists()
