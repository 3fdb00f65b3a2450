"""keras-hub presets in and out: ``keras_hub.models.ElectraBackbone`` + ``ElectraTokenizer`` directories.

A preset directory, as keras-hub's ``save_to_preset`` writes it (and as its released ELECTRA presets are
laid out)::

    <dir>/config.json                    {"module": "keras_hub.src.models...", "class_name": "ElectraBackbone", ...}
    <dir>/model.weights.h5               the backbone's weights (Keras 3 layout)
    <dir>/tokenizer.json                 ElectraTokenizer config (lowercase, strip_accents)
    <dir>/assets/tokenizer/vocabulary.txt
    <dir>/metadata.json                  versions

keras-hub's backbone is the reference's encoder with three differences: its feed-forward GELU is the tanh
approximation (the reference's is exact), its attention kernels are split per head
(``[H, heads, H / heads]``), and it has a pooler (dense H -> H + tanh on the first token) that ELECTRA
lacks. Export writes the pooler as the identity kernel and a zero bias, so ``pooled_output`` is
``tanh`` of the discriminator's ``[CLS]`` vector; import ignores it. Neither pre-training head has a
keras-hub counterpart, so a preset holds one encoder: the discriminator's, or with ``what="generator"``
the generator's (with the embeddings it reads).

keras-hub itself is optional (``pip install electra-tf[keras-hub]``) and imported only here, inside the
reader and the writer; ``formats`` recognises a preset by its ``config.json`` alone.
"""

import dataclasses
import os

import numpy as np

from electra_tf import fileio, runtime
from electra_tf.configs import ModelConfig
from electra_tf.convert.architecture import infer_architecture
from electra_tf.convert.layout import KERAS_HUB, read_json
from electra_tf.convert.source import Source, generator_arrays
from electra_tf.convert.vocab_files import check_vocab, count_vocab, vocab_kind
from electra_tf.errors import ConversionError, OutputExistsError

CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE = "config.json", "model.weights.h5", "tokenizer.json"
VOCAB_PATH = os.path.join("assets", "tokenizer", "vocabulary.txt")
BACKBONE_CLASS, TOKENIZER_CLASS = "ElectraBackbone", "ElectraTokenizer"
INSTALL_HINT = "pip install 'electra-tf[keras-hub]' (keras-hub==0.32.*)"
POOLER = ("pooled_dense/kernel", "pooled_dense/bias")


def _keras_hub():
  try:
    import keras_hub  # pylint: disable=g-import-not-at-top  (optional extra)
  except ImportError:
    raise ConversionError(f"keras-hub is not installed; {INSTALL_HINT}") from None
  return keras_hub


# ---------------------------------------------------------------------------------------------------
# Names: keras-hub weight paths <-> reference names, one tower at a time.


def _weight_pairs(config: ModelConfig, scope: str, embeddings_scope: str):
  """``(keras-hub path, reference name, kind)``; kind says how the array is reshaped between the two."""
  e, pairs = f"{embeddings_scope}/embeddings", []
  pairs += [("token_embedding/embeddings", f"{e}/word_embeddings", None),
            ("position_embedding/embeddings", f"{e}/position_embeddings", None),
            ("segment_embedding/embeddings", f"{e}/token_type_embeddings", None),
            ("embeddings_layer_norm/gamma", f"{e}/LayerNorm/gamma", None),
            ("embeddings_layer_norm/beta", f"{e}/LayerNorm/beta", None)]
  if config.embedding_size != config.hidden_size:
    pairs += [(f"embeddings_projection/{w}", f"{scope}/embeddings_project/{w}", None) for w in ("kernel", "bias")]
  for i in range(config.num_hidden_layers):
    k, r = f"transformer_layer_{i}", f"{scope}/encoder/layer_{i}"
    for part in ("query", "key", "value"):
      pairs += [(f"{k}/self_attention_layer/{part}/kernel", f"{r}/attention/self/{part}/kernel", "qkv_kernel"),
                (f"{k}/self_attention_layer/{part}/bias", f"{r}/attention/self/{part}/bias", "qkv_bias")]
    pairs += [(f"{k}/self_attention_layer/attention_output/kernel", f"{r}/attention/output/dense/kernel", "out_kernel"),
              (f"{k}/self_attention_layer/attention_output/bias", f"{r}/attention/output/dense/bias", None)]
    for ours, theirs in (("attention/output/LayerNorm", "self_attention_layer_norm"),
                         ("output/LayerNorm", "feedforward_layer_norm")):
      pairs += [(f"{k}/{theirs}/gamma", f"{r}/{ours}/gamma", None), (f"{k}/{theirs}/beta", f"{r}/{ours}/beta", None)]
    for ours, theirs in (("intermediate/dense", "feedforward_intermediate_dense"),
                         ("output/dense", "feedforward_output_dense")):
      pairs += [(f"{k}/{theirs}/{w}", f"{r}/{ours}/{w}", None) for w in ("kernel", "bias")]
  return pairs


def _to_keras_hub(value: np.ndarray, kind, config: ModelConfig) -> np.ndarray:
  heads = config.num_attention_heads
  width = config.hidden_size // heads
  if kind == "qkv_kernel":  # [H, H] -> [H, heads, H / heads]
    return value.reshape(value.shape[0], heads, width)
  if kind == "qkv_bias":  # [H] -> [heads, H / heads]
    return value.reshape(heads, width)
  if kind == "out_kernel":  # [H, H] -> [heads, H / heads, H]
    return value.reshape(heads, width, value.shape[-1])
  return value


def _from_keras_hub(value: np.ndarray, kind) -> np.ndarray:
  if kind == "qkv_kernel":
    return value.reshape(value.shape[0], -1)
  if kind == "qkv_bias":
    return value.reshape(-1)
  if kind == "out_kernel":
    return value.reshape(-1, value.shape[-1])
  return value


def _backbone_kwargs(config: ModelConfig) -> dict:
  return dict(vocab_size=config.vocab_size, num_layers=config.num_hidden_layers,
              num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
              embedding_dim=config.embedding_size, intermediate_dim=config.intermediate_size,
              dropout=config.hidden_dropout_prob, max_sequence_length=config.max_position_embeddings,
              num_segments=config.type_vocab_size)


def _model_config(kh_config: dict) -> ModelConfig:
  """Our ``ModelConfig`` for keras-hub's ``ElectraBackbone`` arguments (one dropout rate for both of ours)."""
  c = kh_config
  return ModelConfig(vocab_size=c["vocab_size"], hidden_size=c["hidden_dim"], num_hidden_layers=c["num_layers"],
                     num_attention_heads=c["num_heads"], intermediate_size=c["intermediate_dim"],
                     hidden_dropout_prob=c.get("dropout", 0.1), attention_probs_dropout_prob=c.get("dropout", 0.1),
                     max_position_embeddings=c.get("max_sequence_length", 512),
                     type_vocab_size=c.get("num_segments", 2), embedding_size=c["embedding_dim"])


# ---------------------------------------------------------------------------------------------------
# Import.


def read_preset(path) -> Source:
  """A keras-hub ``ElectraBackbone`` preset as a ``Source`` (the encoder under ``electra/``; no heads).

  Raises ``ConversionError`` (one line) for a preset of another model family, a missing weights file, a
  vocab whose size differs from the word table, or a missing keras-hub."""
  path = os.fspath(path)
  meta = read_json(os.path.join(path, CONFIG_FILE)) or {}
  family = meta.get("class_name")
  if family != BACKBONE_CLASS:
    raise ConversionError(f"{path} is a keras-hub {family} preset, not ELECTRA; electra-tf reads "
                          f"{BACKBONE_CLASS} presets (e.g. keras-hub's electra_base_discriminator_uncased_en)")
  if not fileio.isfile(os.path.join(path, WEIGHTS_FILE)):
    raise ConversionError(f"{path} has no {WEIGHTS_FILE}: the preset's weights are missing; download or save "
                          "the preset again (backbone.save_to_preset)")
  config = _model_config(meta.get("config", {}))
  vocab = os.path.join(path, VOCAB_PATH)
  vocab = vocab if fileio.isfile(vocab) else None
  if vocab is not None and count_vocab(vocab) != config.vocab_size:
    raise ConversionError(f"{path}: the tokenizer's vocabulary has {count_vocab(vocab)} tokens but the "
                          f"backbone's word embeddings have {config.vocab_size} rows; the preset mixes two "
                          "models: save the tokenizer of the model the weights belong to")
  keras_hub = _keras_hub()
  try:
    backbone = keras_hub.models.ElectraBackbone.from_preset(path)  # keras-hub reads gs:// itself
  except (ValueError, OSError, KeyError) as e:
    raise ConversionError(f"{path}: keras-hub cannot load the preset ({str(e).splitlines()[0]})") from None
  weights = {w.path: np.asarray(w.numpy(), np.float32) for w in backbone.weights}
  arrays = {ref: _from_keras_hub(weights[kh], kind) for kh, ref, kind in _weight_pairs(config, "electra", "electra")}
  arch = infer_architecture({n: a.shape for n, a in arrays.items()}, source=path)
  arch = dataclasses.replace(arch, discriminator=config, stated=True)  # the config states the head count
  tok = read_json(os.path.join(path, TOKENIZER_FILE))
  lower = tok.get("config", {}).get("lowercase") if tok else None
  ignored = [p for p in POOLER if p in weights]
  return Source(KERAS_HUB, path, arrays, arch, ignored=ignored, vocab_file=vocab, do_lower_case=lower)


# ---------------------------------------------------------------------------------------------------
# Export.


def _tower(source: Source, what: str):
  """(ModelConfig, reference-named arrays, scope, embeddings scope) of the encoder to export."""
  arch = source.architecture
  if what == "discriminator":
    return arch.discriminator, source.arrays, "electra", "electra"
  if arch.generator is None:
    raise ConversionError(f"{source.path} holds no generator weights to export")
  arrays = generator_arrays(source)
  emb = "generator" if "generator/embeddings/word_embeddings" in arrays else "electra"
  return arch.generator, arrays, "generator", emb


def write_preset(out_dir: str, source: Source, what: str = "discriminator", overwrite: bool = False) -> dict:
  """A keras-hub preset of one encoder (``what``: "discriminator" or "generator") and its tokenizer.

  ``ElectraBackbone.from_preset(out_dir)`` and ``ElectraTokenizer.from_preset(out_dir)`` load it. An
  uncased model's tokenizer gets ``lowercase`` and ``strip_accents`` (keras-hub's WordPiece equals BERT's
  only with both). A SentencePiece vocab is refused: keras-hub's ELECTRA tokenizer is WordPiece only.
  Returns what was written (config, lowercase)."""
  if what not in ("discriminator", "generator"):
    raise ConversionError(f"--what must be discriminator or generator, not {what!r}")
  vocab = source.vocab_file
  if vocab is None:
    raise ConversionError(f"no vocab.txt found beside {source.path}; pass --vocab (the preset's tokenizer "
                          "needs the model's WordPiece vocab)")
  if vocab_kind(vocab) == "sentencepiece":
    raise ConversionError(f"{vocab} is a SentencePiece model and keras-hub's ElectraTokenizer is WordPiece only; "
                          "export it with export-hf (transformers' AlbertTokenizer reads spiece.model)")
  check_vocab(vocab, source.architecture)
  config, arrays, scope, emb_scope = _tower(source, what)
  if config.hidden_act != "gelu":
    raise ConversionError(f"the model's activation is {config.hidden_act}; keras-hub's ElectraBackbone "
                          "always uses GELU")
  if not overwrite and fileio.exists(out_dir):
    raise OutputExistsError(f"{out_dir} already exists; pass --overwrite to replace it")
  keras_hub = _keras_hub()
  backbone = keras_hub.models.ElectraBackbone(**_backbone_kwargs(config))
  variables = {w.path: w for w in backbone.weights}
  for kh, ref, kind in _weight_pairs(config, scope, emb_scope):
    value = _to_keras_hub(np.asarray(arrays[ref], np.float32), kind, config)
    if tuple(value.shape) != tuple(variables[kh].shape):
      raise ConversionError(f"{ref}: shape {list(value.shape)} does not fit keras-hub's {kh} "
                            f"{list(variables[kh].shape)}")
    variables[kh].assign(value)
  variables[POOLER[0]].assign(np.eye(config.hidden_size, dtype=np.float32))  # pooled = tanh([CLS] vector)
  variables[POOLER[1]].assign(np.zeros([config.hidden_size], np.float32))
  lower = True if source.do_lower_case is None else bool(source.do_lower_case)
  with runtime.atomic_directory(out_dir, overwrite) as tmp:
    with fileio.local_copy(vocab) as local_vocab:
      tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=local_vocab, lowercase=lower, strip_accents=lower)
    backbone.save_to_preset(tmp)
    tokenizer.save_to_preset(tmp)
  return dict(config=config, lowercase=lower, what=what)
