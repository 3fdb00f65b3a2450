"""Pre-training heads: replaced-token detection and the tied masked-LM head."""

import keras
import tensorflow as tf

from electra_tf.modeling.activations import get_activation
from electra_tf.modeling.embeddings import ElectraEmbeddings, layer_norm, truncated_normal


def gather_positions(sequence, positions):
  """[B, T, D] gathered at int [B, P] positions -> [B, P, D]."""
  return tf.gather(sequence, tf.cast(positions, tf.int32), batch_dims=1)


class DiscriminatorHead(keras.layers.Layer):
  """dense(H, act) -> dense(1): one replaced-or-original logit per token.

  Input [B, T, H]; output float32 logits [B, T].
  Checkpoint names: ``discriminator_predictions/dense`` (truncated normal) and ``dense_1`` (glorot
  uniform, the reference's tf.layers.dense default).
  """

  def __init__(self, hidden_size: int, hidden_act: str = "gelu", initializer_range: float = 0.02,
               name: str = "discriminator_predictions", **kwargs):
    super().__init__(name=name, **kwargs)
    self.hidden_size = hidden_size
    self.dense = keras.layers.Dense(hidden_size, activation=get_activation(hidden_act),
                                    kernel_initializer=truncated_normal(initializer_range), name="dense")
    self.dense_1 = keras.layers.Dense(1, dtype="float32", name="dense_1")

  def build(self, input_shape=None):
    self.dense.build((None, None, self.hidden_size))
    self.dense_1.build((None, None, self.hidden_size))
    self.built = True

  def call(self, sequence_output):
    return tf.squeeze(self.dense_1(self.dense(sequence_output)), -1)


class GeneratorHead(keras.layers.Layer):
  """Masked-LM head: dense(E, act) -> LayerNorm -> logits tied to the word embeddings + ``output_bias``.

  Inputs: sequence output [B, T, Hg] and optional positions int [B, P]. Output: float32 logits
  [B, P, V] (or [B, T, V] without positions). The output matrix is the embeddings' word table, so it
  is not a weight of this head.
  Checkpoint names: ``generator_predictions/{dense, LayerNorm, output_bias}``.
  """

  def __init__(self, embeddings: ElectraEmbeddings, input_size: int, hidden_act: str = "gelu",
               initializer_range: float = 0.02, name: str = "generator_predictions", **kwargs):
    super().__init__(name=name, **kwargs)
    # A closure, not an attribute: the table belongs to the embeddings layer, and tracking it here
    # would make the head own (and a checkpoint save) it twice.
    self._word_embeddings = lambda: embeddings.word_embeddings
    self.input_size = input_size
    self.embedding_size = embeddings.embedding_size
    self.vocab_size = embeddings.vocab_size
    self.dense = keras.layers.Dense(self.embedding_size, activation=get_activation(hidden_act),
                                    kernel_initializer=truncated_normal(initializer_range), name="dense")
    self.layer_norm = layer_norm("LayerNorm")

  def build(self, input_shape=None):
    self.dense.build((None, None, self.input_size))
    self.layer_norm.build((None, None, self.embedding_size))
    self.output_bias = self.add_weight(name="output_bias", shape=(self.vocab_size,), initializer="zeros",
                                       dtype="float32")
    self.built = True

  def call(self, sequence_output, positions=None):
    if positions is not None:
      sequence_output = gather_positions(sequence_output, positions)
    hidden = self.layer_norm(tf.cast(self.dense(sequence_output), tf.float32))
    table = tf.convert_to_tensor(self._word_embeddings())
    logits = tf.einsum("bpe,ve->bpv", hidden, tf.cast(table, tf.float32))
    return logits + tf.cast(self.output_bias, tf.float32)
