"""The embeddings block that the generator and discriminator share."""

import keras
import tensorflow as tf

from electra_tf.modeling.dropout import derive_seed, fresh_seed, stateless_dropout


def truncated_normal(stddev: float):
  """The reference's ``create_initializer``: normal truncated at two standard deviations."""
  return keras.initializers.TruncatedNormal(stddev=stddev)


def layer_norm(name: str):
  """``contrib.layers.layer_norm`` of the reference: epsilon 1e-12, always computed in float32."""
  return keras.layers.LayerNormalization(epsilon=1e-12, dtype="float32", name=name)


class ElectraEmbeddings(keras.layers.Layer):
  """Word + token-type + learned position embeddings, LayerNorm and dropout.

  Inputs: ``input_ids`` and ``segment_ids`` int [B, T] with T <= max_position_embeddings.
  Output: [B, T, E] in float32 (LayerNorm output; callers cast to their compute dtype).
  Checkpoint names: ``electra/embeddings/{word,token_type,position}_embeddings``, ``LayerNorm``.
  """

  def __init__(self, vocab_size: int, embedding_size: int, max_position_embeddings: int = 512,
               type_vocab_size: int = 2, dropout_rate: float = 0.1, initializer_range: float = 0.02,
               name: str = "embeddings", **kwargs):
    super().__init__(name=name, **kwargs)
    self.vocab_size = vocab_size
    self.embedding_size = embedding_size
    self.max_position_embeddings = max_position_embeddings
    self.type_vocab_size = type_vocab_size
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.layer_norm = layer_norm("LayerNorm")

  def build(self, input_shape=None):
    init = truncated_normal(self.initializer_range)
    self.word_embeddings = self.add_weight(
        name="word_embeddings", shape=(self.vocab_size, self.embedding_size), initializer=init)
    self.token_type_embeddings = self.add_weight(
        name="token_type_embeddings", shape=(self.type_vocab_size, self.embedding_size), initializer=init)
    self.position_embeddings = self.add_weight(
        name="position_embeddings", shape=(self.max_position_embeddings, self.embedding_size),
        initializer=init)
    self.layer_norm.build((None, None, self.embedding_size))
    self.built = True

  def call(self, input_ids, segment_ids=None, training=False, dropout_seed=None):
    seq_len = tf.shape(input_ids)[1]
    x = tf.gather(tf.cast(self.word_embeddings, self.compute_dtype), input_ids)
    if segment_ids is None:
      segment_ids = tf.zeros_like(input_ids)
    x += tf.gather(tf.cast(self.token_type_embeddings, self.compute_dtype), segment_ids)
    x += tf.cast(self.position_embeddings, self.compute_dtype)[tf.newaxis, :seq_len]
    x = self.layer_norm(tf.cast(x, tf.float32))
    if training and self.dropout_rate > 0:
      seed = fresh_seed() if dropout_seed is None else dropout_seed
      x = stateless_dropout(x, self.dropout_rate, derive_seed(seed, 0))
    return x

  def get_config(self):
    return {**super().get_config(), "vocab_size": self.vocab_size, "embedding_size": self.embedding_size,
            "max_position_embeddings": self.max_position_embeddings,
            "type_vocab_size": self.type_vocab_size, "dropout_rate": self.dropout_rate,
            "initializer_range": self.initializer_range}
