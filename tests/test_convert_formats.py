"""The format registry: ``electra_tf.convert.read_source`` reads a keras-hub preset as the keras-hub reader does,
and recognising a format (a TF1 checkpoint, a keras-hub preset) never imports keras-hub."""

import json
import subprocess
import sys

import numpy as np
import pytest

import _convert_testlib as lib
from conftest import REPO_ROOT, TINY_MODEL, require_module

VOCAB_SIZE = 120


@pytest.fixture(scope="module")
def source(tmp_path_factory):
  """Tiny networks with every weight perturbed, and a WordPiece vocab of their size beside them."""
  from electra_tf.convert import source_from_networks
  vocab = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(VOCAB_SIZE - 5)]
  vocab.write_text("\n".join(words) + "\n", encoding="utf-8")
  nets = lib.perturbed_networks(vocab_size=VOCAB_SIZE, embedding_size=16, model_hparam_overrides=TINY_MODEL)
  return source_from_networks(nets, str(vocab), True)


def test_read_source_reads_a_keras_hub_preset_as_the_keras_hub_reader_does(source, tmp_path):
  require_module("keras_hub")
  from electra_tf.convert import KERAS_HUB, detect_format, load_pretrained_weights, read_source, write_preset
  from electra_tf.convert.keras_hub_preset import read_preset
  from electra_tf.modeling import ElectraEncoder
  preset = str(tmp_path / "preset")
  write_preset(preset, source)
  assert detect_format(preset) == (KERAS_HUB, preset)
  got, want = read_source(preset), read_preset(preset)
  assert got.format == want.format == KERAS_HUB
  assert got.architecture == want.architecture and got.do_lower_case is want.do_lower_case is True
  assert got.vocab_file == want.vocab_file and got.ignored == want.ignored
  encoder = {n: v for n, v in source.arrays.items() if n.startswith("electra/")}
  assert sorted(got.arrays) == sorted(want.arrays) == sorted(encoder)
  for name, value in got.arrays.items():
    np.testing.assert_array_equal(value, want.arrays[name], err_msg=name)
    np.testing.assert_array_equal(value, encoder[name], err_msg=name)
  # The loader reads through the same registry.
  target = ElectraEncoder(got.architecture.discriminator, name="electra")
  target.dummy_build()
  report = load_pretrained_weights(preset, target, require_all=True)
  assert report.format == KERAS_HUB and sorted(report.loaded) == sorted(encoder)


def test_recognising_a_format_does_not_import_keras_hub(source, tmp_path):
  from electra_tf.convert import write_tf1
  prefix = write_tf1(str(tmp_path / "tf1"), source.arrays)
  preset = tmp_path / "preset"  # what keras-hub's save_to_preset writes first; no weights needed to recognise it
  preset.mkdir()
  (preset / "config.json").write_text(json.dumps({"module": "keras_hub.src.models.electra.electra_backbone",
                                                  "class_name": "ElectraBackbone", "config": {}}), encoding="utf-8")
  code = ("import sys\n"
          "from electra_tf.convert import detect_format, read_source\n"
          f"print(detect_format({str(tmp_path / 'tf1')!r})[0], detect_format({str(preset)!r})[0], "
          f"read_source({prefix!r}).format, 'keras_hub' in sys.modules)\n")
  proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
  assert proc.returncode == 0, proc.stderr.strip().splitlines()[-3:]
  assert proc.stdout.split() == ["tf1", "keras-hub-preset", "tf1", "False"]
