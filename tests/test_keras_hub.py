"""keras-hub presets in and out: ``export-keras-hub`` writes a preset that keras-hub's own ``from_preset``
loads with the project's outputs, its tokenizer gives the reference
tokenizer's ids on real reviews, a backbone keras-hub built and saved itself imports with keras-hub's
outputs, and bad presets are one line each. Every preset is built here; nothing downloads."""

import os
import shutil

import numpy as np
import pytest

import _convert_testlib as convert_lib
from conftest import TINY_MODEL, require_module, skip_missing

keras_hub = require_module("keras_hub")

# A keras-hub backbone unlike any preset size: E != H (the projection), 4 heads of width 8 (not H // 64).
KH_DIMS = dict(vocab_size=120, num_layers=2, num_heads=4, hidden_dim=32, embedding_dim=16, intermediate_dim=48,
               max_sequence_length=64)


def _convert(args, capsys):
  from electra_tf.cli import convert
  code = convert.main(args)
  out = capsys.readouterr()
  return code, out.out, out.err


def _word_vocab(path, size):
  words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(size - 5)]
  path.write_text("\n".join(words) + "\n", encoding="utf-8")
  return path


@pytest.fixture(scope="module")
def kh_preset(tmp_path_factory):
  """A preset keras-hub built and saved itself: random weights with every bias, LayerNorm gain and the
  pooler perturbed, and an uncased tokenizer over a vocab of the same size."""
  import keras
  keras.utils.set_random_seed(3)
  root = tmp_path_factory.mktemp("kh")
  backbone = keras_hub.models.ElectraBackbone(**KH_DIMS)
  rng = np.random.default_rng(3)
  for w in backbone.weights:
    w.assign(w.numpy() + rng.normal(0.0, 0.1, w.shape).astype(np.float32))
  preset = root / "preset"
  backbone.save_to_preset(str(preset))
  vocab = _word_vocab(root / "vocab.txt", KH_DIMS["vocab_size"])
  keras_hub.models.ElectraTokenizer(vocabulary=str(vocab), lowercase=True, strip_accents=True).save_to_preset(str(preset))
  return preset, backbone


def test_a_backbone_saved_by_keras_hub_imports_with_its_outputs(kh_preset, tmp_path, capsys):
  from electra_tf.convert import load_pretrained_weights, read_source
  from electra_tf.modeling import ElectraEncoder
  import electra_tf
  preset, backbone = kh_preset
  code, out, err = _convert(["import-keras-hub", str(preset), "-o", str(tmp_path / "model")], capsys)
  assert code == 0, err
  assert "L=2 H=32 E=16 V=120" in out and "pooled_dense" in out
  code, out, err = _convert(["inspect", str(preset)], capsys)
  assert code == 0 and "format: keras-hub-preset" in out and "num_attention_heads\": 4" in out, (out, err)
  arch = read_source(str(tmp_path / "model")).architecture
  assert arch.discriminator.num_attention_heads == 4 and arch.generator is None
  assert (tmp_path / "model" / "vocab.txt").read_text() == (preset / "assets/tokenizer/vocabulary.txt").read_text()

  inputs = convert_lib.random_inputs(KH_DIMS["vocab_size"], seq=12)  # padded second row, two segments
  encoder = ElectraEncoder(arch.discriminator, name="electra")
  encoder.dummy_build()
  report = load_pretrained_weights(str(tmp_path / "model"), encoder, require_all=True)
  assert not report.missing
  ours = convert_lib.encoder_outputs(encoder, inputs)
  exact = convert_lib.max_diff(ours, convert_lib.keras_hub_outputs(backbone, inputs, exact_gelu=True))
  shipped = convert_lib.max_diff(ours, convert_lib.keras_hub_outputs(backbone, inputs))
  print(f"keras-hub preset imported: max |diff| {exact:.1e} with keras-hub's GELU made exact, {shipped:.1e} as shipped")
  assert exact <= 1e-5, exact  # the mapping itself
  # keras-hub's tanh GELU against the reference's exact one: 1.9e-4 on these weights (noise of std 0.1,
  # five times the initialiser's), under 1e-4 on trained ones (the pre-training run below)
  assert shipped <= 1e-3, shipped
  assert np.abs(ours).max() > 0.5  # not a trivially small output

  # --init-checkpoint / init_checkpoint take the preset itself, through the same loader.
  direct = ElectraEncoder(arch.discriminator, name="electra")
  direct.dummy_build()
  report = load_pretrained_weights(str(preset), direct, require_all=True)
  assert report.format == "keras-hub-preset" and "pooled_dense/kernel" not in report.loaded
  np.testing.assert_array_equal(convert_lib.encoder_outputs(direct, inputs), ours)
  # and electra_tf.load_encoder returns it as a Keras model
  model = electra_tf.load_encoder(str(preset))
  ids, mask, seg = inputs
  got = model({"input_ids": ids, "input_mask": mask, "segment_ids": seg}).numpy()
  np.testing.assert_allclose(got, ours, atol=1e-6)
  assert model.vocab_file.endswith("vocabulary.txt") and model.do_lower_case


def test_export_of_an_imported_preset_gives_back_keras_hubs_weights(kh_preset, tmp_path, capsys):
  preset, backbone = kh_preset
  code, _, err = _convert(["import-keras-hub", str(preset), "-o", str(tmp_path / "model")], capsys)
  assert code == 0, err
  code, out, err = _convert(["export-keras-hub", str(tmp_path / "model"), "-o", str(tmp_path / "again")], capsys)
  assert code == 0, err
  assert "identity pooler" in out
  again = keras_hub.models.ElectraBackbone.from_preset(str(tmp_path / "again"))
  original = {w.path: w.numpy() for w in backbone.weights}
  for w in again.weights:
    if w.path.startswith("pooled_dense/"):
      continue
    np.testing.assert_array_equal(w.numpy(), original[w.path], err_msg=w.path)
  np.testing.assert_array_equal(again.get_layer("pooled_dense").kernel.numpy(), np.eye(32, dtype=np.float32))
  tokenizer = keras_hub.models.ElectraTokenizer.from_preset(str(tmp_path / "again"))
  assert tokenizer.lowercase and tokenizer.strip_accents
  assert [int(i) for i in tokenizer("W3 w7")] == [8, 12]


# Characters on which keras-hub's WordPiece and the reference's BasicTokenizer disagree even with lowercase
# and strip_accents both set (docs/interop.md): keras-hub normalises with NFKD, so compatibility characters
# such as the acute accent U+00B4 and the fraction U+00BD decompose (´ -> space + combining accent; ½ -> 1⁄2);
# the reference deletes C1 control characters (U+0080-U+009F) inside a word, keras-hub splits the word there.
ODD_CHARACTERS = {"\u00b4", "\u00bd"} | {chr(c) for c in range(0x80, 0xA0)}


def _reviews(n):
  from electra_tf import sample_data
  from electra_tf.errors import SampleDataError
  try:
    imdb, _ = sample_data.read_reviews()
  except SampleDataError as e:
    skip_missing(str(e))
  return imdb[:n]


def test_the_exported_tokenizer_gives_full_tokenizers_ids_on_real_reviews(bert_vocab, tmp_path):
  from electra_tf.configs import PretrainingConfig
  from electra_tf.convert import keras_hub_preset, source_from_networks
  from electra_tf.modeling import build_pretraining_networks
  from electra_tf.tokenization import FullTokenizer
  nets = build_pretraining_networks(PretrainingConfig.create(
      vocab_size=30522, embedding_size=16, model_hparam_overrides=TINY_MODEL))
  keras_hub_preset.write_preset(str(tmp_path / "preset"), source_from_networks(nets, str(bert_vocab), True))
  exported = keras_hub.models.ElectraTokenizer.from_preset(str(tmp_path / "preset"))
  lowercase_only = keras_hub.models.ElectraTokenizer(vocabulary=str(bert_vocab), lowercase=True)
  reference = FullTokenizer(str(bert_vocab), do_lower_case=True)
  texts = _reviews(300)
  want = [reference.convert_tokens_to_ids(reference.tokenize(t)) for t in texts]
  got = [[int(i) for i in ids] for ids in exported(texts)]
  got_lower = [[int(i) for i in ids] for ids in lowercase_only(texts)]
  same = [a == b for a, b in zip(want, got)]
  lower_same = sum(a == b for a, b in zip(want, got_lower))
  print(f"keras-hub tokenizer on {len(texts)} IMDB reviews: {sum(same)} equal to FullTokenizer with lowercase and "
        f"strip_accents, {lower_same} with lowercase alone")
  assert sum(same) >= 295, sum(same)  # 295 of 300 (docs/interop.md)
  assert lower_same < sum(same)  # lowercase alone is not enough
  unexplained = [t[:80] for t, ok in zip(texts, same) if not ok and not ODD_CHARACTERS & set(t)]
  assert not unexplained, unexplained


def _one_line_error(code, err, *words):
  assert code == 2, err
  assert err.count("\n") == 1 and err.startswith("error: "), err
  for word in words:
    assert word in err, err


def test_bad_presets_and_vocabs_are_one_line_each(kh_preset, tmp_path, capsys, data_dir):
  from electra_tf.convert import ConversionError, load_pretrained_weights
  from electra_tf.modeling import ElectraEncoder
  from electra_tf.configs import ModelConfig
  preset, _ = kh_preset
  out = tmp_path / "out"

  bert = tmp_path / "bert"  # another model family, saved by keras-hub itself
  keras_hub.models.BertBackbone(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
                                max_sequence_length=16).save_to_preset(str(bert))
  code, _, err = _convert(["import-keras-hub", str(bert), "-o", str(out)], capsys)
  _one_line_error(code, err, "BertBackbone", "ElectraBackbone")
  encoder = ElectraEncoder(ModelConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                       intermediate_size=16), name="electra")
  encoder.dummy_build()
  with pytest.raises(ConversionError, match="BertBackbone"):
    load_pretrained_weights(str(bert), encoder)  # the --init-checkpoint path says the same

  no_weights = tmp_path / "no_weights"
  shutil.copytree(preset, no_weights)
  os.remove(no_weights / "model.weights.h5")
  code, _, err = _convert(["import-keras-hub", str(no_weights), "-o", str(out)], capsys)
  _one_line_error(code, err, "model.weights.h5")

  other_vocab = tmp_path / "other_vocab"  # a tokenizer of another size than the word table
  shutil.copytree(preset, other_vocab)
  _word_vocab(other_vocab / "assets" / "tokenizer" / "vocabulary.txt", 100)
  code, _, err = _convert(["import-keras-hub", str(other_vocab), "-o", str(out)], capsys)
  _one_line_error(code, err, "100 tokens", "120 rows")

  short = _word_vocab(tmp_path / "short.txt", 50)
  code, _, err = _convert(["export-keras-hub", str(preset), "-o", str(out), "--vocab", str(short)], capsys)
  _one_line_error(code, err, "50 tokens", "120 rows")

  import sentencepiece as spm  # a SentencePiece vocab: keras-hub's ElectraTokenizer cannot carry it
  import gzip
  with gzip.open(data_dir / "corpus" / "wikitext-2" / "valid.raw.gz", "rt", encoding="utf-8") as f:
    lines = [l.strip() for l in f if len(l.strip()) > 40][:300]
  spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=str(tmp_path / "sp"), vocab_size=120,
                                 user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"], minloglevel=2)
  code, _, err = _convert(["export-keras-hub", str(preset), "-o", str(out), "--vocab", str(tmp_path / "sp.model")],
                          capsys)
  _one_line_error(code, err, "SentencePiece", "export-hf")
  assert not out.exists() and not [p for p in os.listdir(tmp_path) if p.startswith(".out")]


def test_load_encoders_layerwise_optimizer_gives_each_depth_its_rate(kh_preset):
  import keras
  import electra_tf
  from electra_tf.keras_encoder import INPUT_NAMES, layerwise_optimizer
  preset, _ = kh_preset
  encoder = electra_tf.load_encoder(str(preset))
  inputs = {n: keras.Input(shape=(None,), dtype="int32", name=n) for n in INPUT_NAMES}
  model = keras.Model(inputs, keras.layers.Dense(2, name="classifier")(encoder(inputs)[:, 0]))
  opt = layerwise_optimizer(model, 1e-4, 100, layerwise_lr_decay=0.5)
  opt.build(model.trainable_variables)
  rates = {opt.reference_name(v): m for v, m in zip(model.trainable_variables, opt._multipliers)}  # pylint: disable=protected-access
  assert rates["electra/embeddings/word_embeddings"] == 0.5 ** 4  # L = 2: embeddings d^(L + 2)
  assert rates["electra/embeddings_project/kernel"] == 0.5 ** 4
  assert rates["electra/encoder/layer_0/attention/self/query/kernel"] == 0.5 ** 3
  assert rates["electra/encoder/layer_1/output/dense/kernel"] == 0.5 ** 2
  assert rates["task_specific/classifier/kernel"] == 1.0
  assert len(rates) == len(model.trainable_variables)
  decays = {opt.reference_name(v): d for v, d in zip(model.trainable_variables, opt._decays)}  # pylint: disable=protected-access
  assert decays["electra/encoder/layer_1/output/LayerNorm/gamma"] == 0.0 and decays["task_specific/classifier/bias"] == 0.0
  assert decays["task_specific/classifier/kernel"] == 0.01


@pytest.mark.slow
def test_load_encoder_and_fit_train_a_classifier_above_the_majority_class(data_dir, bert_vocab, tmp_path):
  """A user's own Keras model around ``load_encoder`` trains with ``fit`` on Rotten Tomatoes."""
  import csv
  import keras
  import electra_tf
  from electra_tf.configs import PretrainingConfig
  from electra_tf.convert import source_from_networks, write_model_dir
  from electra_tf.keras_encoder import INPUT_NAMES, encode_texts, layerwise_optimizer
  from electra_tf.modeling import build_pretraining_networks
  from electra_tf.tokenization import load_tokenizer
  keras.utils.set_random_seed(0)
  nets = build_pretraining_networks(PretrainingConfig.create(
      vocab_size=30522, embedding_size=32, model_hparam_overrides=TINY_MODEL))
  write_model_dir(str(tmp_path / "model"), source_from_networks(nets, str(bert_vocab), True))

  def read(split, n):
    with open(data_dir / "glue-style" / "rt_polarity" / f"{split}.tsv", encoding="utf-8", newline="") as f:
      rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[:n]
    return [r["sentence"] for r in rows], np.array([int(r["label"]) for r in rows])

  (train_x, train_y), (dev_x, dev_y) = read("train", 3000), read("dev", 1000)
  encoder = electra_tf.load_encoder(str(tmp_path / "model"))
  tokenizer = load_tokenizer(encoder.vocab_file, encoder.do_lower_case)
  inputs = {n: keras.Input(shape=(None,), dtype="int32", name=n) for n in INPUT_NAMES}
  logits = keras.layers.Dense(2, name="classifier")(encoder(inputs)[:, 0])
  model = keras.Model(inputs, logits)
  epochs, batch = 2, 32
  model.compile(optimizer=layerwise_optimizer(model, 1e-3, epochs * len(train_x) // batch),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
  model.fit(encode_texts(tokenizer, train_x, 48), train_y, epochs=epochs, batch_size=batch, verbose=0)
  _, accuracy = model.evaluate(encode_texts(tokenizer, dev_x, 48), dev_y, verbose=0)
  majority = max(dev_y.mean(), 1 - dev_y.mean())
  print(f"load_encoder + fit, random-weights tiny encoder, 3000 rt_polarity sentences: dev accuracy {accuracy:.3f}, "
        f"majority class {majority:.3f}")
  assert accuracy > majority + 0.03, (accuracy, majority)
