"""The pre-trained encoder as a plain Keras model, for users who build their own models with ``model.fit``.

``load_encoder(path)`` reads any checkpoint the loader accepts (a pre-training run, this project's model
directory, a reference TF1 or Hugging Face checkpoint, a keras-hub ``ElectraBackbone`` preset) and returns a
``keras.Model``::

    {"input_ids": int [B, T], "input_mask": int [B, T], "segment_ids": int [B, T]} -> float32 [B, T, H]

(the discriminator's sequence output; no pooler, as in the reference). It can be called inside another
Keras model and trained with ``fit``; dropout is active in training. ``layerwise_optimizer(model, ...)``
gives the reference's fine-tuning optimizer for such a model: AdamW without bias correction, the
polynomial schedule with warmup, the layer-wise learning-rate decay ``d^(L + 2 - depth)`` (the encoder's
layers by depth; everything outside the encoder is a task head, at the top rate) and gradient clipping at
global norm 1. ``encode_texts`` turns strings into those three arrays with the model's tokenizer.
"""

import typing

import keras
import numpy as np

from electra_tf import optimization
from electra_tf.checkpoint_names import encoder_variables
from electra_tf.convert import read_source
from electra_tf.convert.source import assign_arrays
from electra_tf.errors import ConversionError
from electra_tf.modeling import ElectraEncoder
from electra_tf.tokenization import load_tokenizer, read_vocab

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


def load_encoder(path: str, name: str = "electra_encoder", load_weights: bool = True) -> keras.Model:
  """The encoder of the checkpoint at ``path`` as a ``keras.Model`` (see the module docstring).

  Its sizes come from the checkpoint; ``load_weights=False`` keeps the reference's initialisation instead of
  the checkpoint's weights (the random-weights baseline of the same network). The model carries
  ``vocab_file`` (None when the checkpoint has no vocab beside it), ``do_lower_case`` and ``encoder``, the
  ``ElectraEncoder`` layer inside it."""
  source = read_source(path)
  config = source.architecture.discriminator
  encoder = ElectraEncoder(config, name="electra")
  encoder.dummy_build()
  if load_weights:
    variables = encoder_variables(encoder, "electra", embeddings_scope="electra")
    loaded = assign_arrays(variables, source.arrays)
    missing = sorted(set(variables) - set(loaded))
    if missing:
      raise ConversionError(f"{path} lacks {len(missing)} encoder weights (e.g. {missing[0]})")
  inputs = {n: keras.Input(shape=(None,), dtype="int32", name=n) for n in INPUT_NAMES}
  outputs = encoder(inputs["input_ids"], inputs["input_mask"], inputs["segment_ids"])["sequence_output"]
  model = keras.Model(inputs, outputs, name=name)
  model.encoder = encoder
  model.vocab_file = source.vocab_file
  model.do_lower_case = True if source.do_lower_case is None else bool(source.do_lower_case)
  return model


def encode_texts(tokenizer, texts: typing.Sequence[str], max_seq_length: int = 128,
                 text_pairs: typing.Optional[typing.Sequence[str]] = None) -> dict:
  """``[CLS] a [SEP]`` (or ``[CLS] a [SEP] b [SEP]``) ids, mask and segment ids, int32 [N, max_seq_length].

  ``tokenizer``: ``load_tokenizer(vocab, do_lower_case)`` (or the vocab path itself). Pairs are truncated
  as the reference does, longest first."""
  if isinstance(tokenizer, str):
    tokenizer = load_tokenizer(tokenizer)
  special = read_vocab(tokenizer.vocab_file).special
  cls_id, sep_id = special["[CLS]"], special["[SEP]"]
  n = len(texts)
  out = {name: np.zeros([n, max_seq_length], np.int32) for name in INPUT_NAMES}
  for row, text in enumerate(texts):
    a = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))
    b = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text_pairs[row])) if text_pairs is not None else None
    room = max_seq_length - (3 if b is not None else 2)
    if b is None:
      a = a[:room]
    else:
      while len(a) + len(b) > room:
        (a if len(a) > len(b) else b).pop()
    ids = [cls_id] + a + [sep_id] + ((b + [sep_id]) if b is not None else [])
    segments = [0] * (len(a) + 2) + ([1] * (len(b) + 1) if b is not None else [])
    out["input_ids"][row, :len(ids)] = ids
    out["input_mask"][row, :len(ids)] = 1
    out["segment_ids"][row, :len(ids)] = segments
  return out


def find_encoder(model) -> ElectraEncoder:
  """The one ``ElectraEncoder`` layer inside ``model`` (at any depth)."""
  found = [layer for layer in model._flatten_layers(include_self=True, recursive=True)  # pylint: disable=protected-access
           if isinstance(layer, ElectraEncoder)]
  if len(found) != 1:
    raise ValueError(f"{model.name} holds {len(found)} ELECTRA encoders; pass encoder= explicitly")
  return found[0]


def layerwise_optimizer(model, learning_rate: float, num_train_steps: int, layerwise_lr_decay: float = 0.8,
                        weight_decay_rate: float = 0.01, warmup_proportion: float = 0.1,
                        clip_norm: typing.Optional[float] = 1.0, encoder: typing.Optional[ElectraEncoder] = None,
                        ) -> optimization.AdamWeightDecay:
  """The reference's fine-tuning optimizer for a Keras model that contains a ``load_encoder`` encoder.

  Learning rate of a weight: ``learning_rate * schedule(step) * layerwise_lr_decay^(L + 2 - depth)`` with
  depth 0 for the embeddings, i + 1 for encoder layer i and L + 2 for every weight outside the encoder (the
  task head). ``layerwise_lr_decay`` 1.0 (or <= 0) turns the decay off. Weight decay skips LayerNorm and
  bias weights, as the reference. Use it in ``model.compile(optimizer=...)`` before ``fit``."""
  encoder = encoder or find_encoder(model)
  names = {id(v): n for n, v in encoder_variables(encoder, "electra", embeddings_scope="electra").items()}
  for variable in model.trainable_variables:  # a weight outside the encoder is a task head
    names.setdefault(id(variable), "task_specific/" + variable.path)
  multipliers = None
  if 0 < layerwise_lr_decay != 1.0:
    multipliers = optimization.layerwise_lr_multipliers(encoder.config.num_hidden_layers, layerwise_lr_decay)
  schedule = optimization.learning_rate_schedule(learning_rate, num_train_steps,
                                                 warmup_proportion=warmup_proportion)
  extra = {"global_clipnorm": clip_norm} if clip_norm else {}
  return optimization.AdamWeightDecay(schedule, weight_decay_rate=weight_decay_rate, variable_names=names,
                                      lr_multipliers=multipliers, **extra)
