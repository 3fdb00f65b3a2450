"""The ELECTRA encoder network: embeddings, optional E->H projection, transformer stack. No pooler."""

import keras
import tensorflow as tf

from electra_tf.configs import ModelConfig
from electra_tf.modeling.dropout import derive_seed, fresh_seed
from electra_tf.modeling.embeddings import ElectraEmbeddings
from electra_tf.modeling.transformer import TransformerLayer


class ElectraEncoder(keras.layers.Layer):
  """The reference's ``BertModel`` (post-LN BERT) for one tower of ELECTRA.

  Inputs: ``input_ids``, ``input_mask`` (1 = real token) and ``segment_ids``, int [B, T].
  Output: dict with ``sequence_output`` [B, T, H] float32, ``embedding_output`` [B, T, H] (after the
  projection) and, if asked, ``hidden_states`` (L+1 tensors, embeddings first, as Hugging Face returns).

  ``embeddings`` may be another encoder's ``ElectraEmbeddings``: the generator shares the
  discriminator's whole embeddings block (tables and LayerNorm) but keeps its own projection.
  Checkpoint names: ``<scope>/embeddings_project``, ``<scope>/encoder/layer_i/...``.

  ``direction`` "ltr" / "rtl" makes attention causal (a token sees itself and the tokens to its left /
  right), as the reference's ``BertModel(ltr=True / rtl=True)`` for the two-tower (ELECTRIC) generator.
  """

  def __init__(self, config: ModelConfig, embeddings: ElectraEmbeddings = None, name: str = "electra",
               direction: str = None, **kwargs):
    super().__init__(name=name, **kwargs)
    if direction not in (None, "ltr", "rtl"):
      raise ValueError(f"direction must be None, 'ltr' or 'rtl', got {direction!r}")
    self.config = config
    self.direction = direction
    self.embeddings = embeddings or ElectraEmbeddings(
        config.vocab_size, config.embedding_size, config.max_position_embeddings, config.type_vocab_size,
        config.hidden_dropout_prob, config.initializer_range)
    emb_width = self.embeddings.embedding_size
    # The reference's embeddings_project uses tf.layers.dense's default (glorot uniform) initializer.
    self.embeddings_project = (keras.layers.Dense(config.hidden_size, name="embeddings_project")
                               if emb_width != config.hidden_size else None)
    # One attribute per layer, not a list: tf.train.Checkpoint does not follow Keras 3's tracked
    # lists, so layers kept only in a list would silently be left out of every checkpoint.
    for i in range(config.num_hidden_layers):
      setattr(self, f"layer_{i}", TransformerLayer(
          config.hidden_size, config.num_attention_heads, config.intermediate_size, config.hidden_act,
          config.hidden_dropout_prob, config.attention_probs_dropout_prob, config.initializer_range,
          name=f"layer_{i}"))

  @property
  def transformer_layers(self):
    return [getattr(self, f"layer_{i}") for i in range(self.config.num_hidden_layers)]

  def build(self, input_shape=None):
    if not self.embeddings.built:
      self.embeddings.build(None)
    if self.embeddings_project is not None:
      self.embeddings_project.build((None, None, self.embeddings.embedding_size))
    for layer in self.transformer_layers:
      layer.build((None, None, self.config.hidden_size))
    self.built = True

  def call(self, input_ids, input_mask=None, segment_ids=None, training=False, dropout_seed=None,
           output_hidden_states=False, first_token_only=False):
    """``first_token_only``: the last layer computes the [CLS] position only, so ``sequence_output`` is
    [B, 1, H], equal to the first row of the whole output (a reader of [CLS] alone saves the rest of the
    last layer's queries, attention outputs and FFN; its keys and values still cover every position)."""
    if first_token_only and output_hidden_states:
      raise ValueError("first_token_only leaves the last layer's other positions out: no hidden_states")
    if input_mask is None:
      input_mask = tf.ones_like(input_ids)
    if training and dropout_seed is None:
      dropout_seed = fresh_seed()
    seed = (lambda i: derive_seed(dropout_seed, i)) if training else (lambda i: None)
    x = self.embeddings(input_ids, segment_ids, training=training, dropout_seed=seed(0))
    if self.embeddings_project is not None:
      x = self.embeddings_project(x)
    outputs = {"embedding_output": x}
    hidden_states = [x]
    if self.direction is not None:  # [B, T] key mask -> [B, T, T] query/key mask with a causal band
      t = tf.shape(input_ids)[1]
      ones = tf.ones([t, t], tf.int32)
      band = tf.linalg.band_part(ones, -1, 0) if self.direction == "ltr" else tf.linalg.band_part(ones, 0, -1)
      input_mask = tf.cast(input_mask, tf.int32)[:, tf.newaxis, :] * band[tf.newaxis]
    last = self.config.num_hidden_layers - 1
    for i, layer in enumerate(self.transformer_layers):
      x = layer(x, input_mask, training=training, dropout_seed=seed(i + 1),
                query_rows=1 if first_token_only and i == last else None)
      hidden_states.append(x)
    outputs["sequence_output"] = tf.cast(x, tf.float32)
    if output_hidden_states:
      outputs["hidden_states"] = hidden_states
    return outputs

  def dummy_build(self):
    """Creates every weight by running a tiny batch (weights must exist before mapping or compiling)."""
    ids = tf.constant([[1, 2]], tf.int32)
    self(ids, tf.ones_like(ids), tf.zeros_like(ids))
    return self
