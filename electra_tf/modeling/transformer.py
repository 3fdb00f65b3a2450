"""A post-LayerNorm BERT transformer layer, as ``transformer_model`` of the reference."""

import math

import keras
import tensorflow as tf

from electra_tf.modeling.activations import get_activation
from electra_tf.modeling.dropout import derive_seed, fresh_seed, stateless_dropout
from electra_tf.modeling.embeddings import layer_norm, truncated_normal

# The reference adds (1 - mask) * -10000 to the scores of padded keys.
MASK_ADDER = -10000.0


def attention_bias(input_mask):
  """0/1 mask -> float32 additive bias for the [B, heads, T, T] scores.

  A [B, T] mask says which keys are real; a [B, T, T] mask says which keys each query may see (the
  causal towers of the ELECTRIC generator).
  """
  mask = tf.cast(input_mask, tf.float32)
  mask = mask[:, tf.newaxis, tf.newaxis, :] if mask.shape.rank == 2 else mask[:, tf.newaxis]
  return (1.0 - mask) * MASK_ADDER


class SelfAttention(keras.layers.Layer):
  """Multi-head self-attention: q/k/v projections, scaled scores, mask, softmax (float32), dropout.

  Input [B, T, H] and the int [B, T] input mask (ints, not a float bias: Keras would autocast a float
  argument to bfloat16); output the concatenated heads [B, T, H] (before the output dense).
  Checkpoint names: ``attention/self/{query,key,value}/{kernel,bias}``.
  """

  def __init__(self, hidden_size: int, num_heads: int, dropout_rate: float, initializer_range: float,
               name: str = "self", **kwargs):
    super().__init__(name=name, **kwargs)
    if hidden_size % num_heads:
      raise ValueError(f"hidden size {hidden_size} is not a multiple of {num_heads} attention heads")
    self.hidden_size, self.num_heads = hidden_size, num_heads
    self.head_size = hidden_size // num_heads
    self.dropout_rate = dropout_rate
    dense = lambda n: keras.layers.Dense(hidden_size, kernel_initializer=truncated_normal(initializer_range),
                                         name=n)
    self.query, self.key, self.value = dense("query"), dense("key"), dense("value")

  def build(self, input_shape):
    for d in (self.query, self.key, self.value):
      d.build(input_shape)
    self.built = True

  def _heads(self, x):
    b, t = tf.shape(x)[0], tf.shape(x)[1]
    return tf.transpose(tf.reshape(x, [b, t, self.num_heads, self.head_size]), [0, 2, 1, 3])

  def call(self, x, input_mask, training=False, dropout_seed=None, query_rows=None):
    """``query_rows``: attend from the first this many positions only (every position is still a key and
    value); the output is then [B, query_rows, H], equal to those rows of the whole output."""
    bias = attention_bias(input_mask)
    queries = x if query_rows is None else x[:, :query_rows]
    q, k, v = self._heads(self.query(queries)), self._heads(self.key(x)), self._heads(self.value(x))
    scores = tf.matmul(q, k, transpose_b=True) * tf.cast(1.0 / math.sqrt(self.head_size), q.dtype)
    if query_rows is not None and input_mask.shape.rank == 3:
      bias = bias[:, :, :query_rows]  # a [B, T, T] mask: the kept queries' rows
    probs = tf.nn.softmax(tf.cast(scores, tf.float32) + bias, axis=-1)
    probs = tf.cast(probs, v.dtype)
    if training and self.dropout_rate > 0:
      t = tf.shape(x)[1]
      full = None if query_rows is None else tf.stack([tf.shape(x)[0], self.num_heads, t, t])
      probs = stateless_dropout(probs, self.dropout_rate, dropout_seed, draw_shape=full)
    context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
    return tf.reshape(context, [tf.shape(x)[0], tf.shape(queries)[1], self.hidden_size])


class TransformerLayer(keras.layers.Layer):
  """One encoder layer: attention -> dense -> dropout -> residual -> LN; FFN -> dropout -> residual -> LN.

  Input [B, T, H] (any float dtype) and the int input mask [B, T]; output [B, T, H] float32 (the LayerNorm
  output, so the residual stream stays float32 under mixed precision).
  Checkpoint names (under ``encoder/layer_i/``): ``attention/self/...``, ``attention/output/dense``,
  ``attention/output/LayerNorm``, ``intermediate/dense``, ``output/dense``, ``output/LayerNorm``.
  """

  def __init__(self, hidden_size: int, num_heads: int, intermediate_size: int, hidden_act: str = "gelu",
               hidden_dropout_rate: float = 0.1, attention_dropout_rate: float = 0.1,
               initializer_range: float = 0.02, name: str = "layer", **kwargs):
    super().__init__(name=name, **kwargs)
    self.config = dict(hidden_size=hidden_size, num_heads=num_heads, intermediate_size=intermediate_size,
                       hidden_act=hidden_act, hidden_dropout_rate=hidden_dropout_rate,
                       attention_dropout_rate=attention_dropout_rate, initializer_range=initializer_range)
    self.hidden_dropout_rate = hidden_dropout_rate
    init = lambda: truncated_normal(initializer_range)
    self.attention = SelfAttention(hidden_size, num_heads, attention_dropout_rate, initializer_range)
    self.attention_output_dense = keras.layers.Dense(hidden_size, kernel_initializer=init(), name="dense")
    self.attention_layer_norm = layer_norm("LayerNorm")
    self.intermediate_dense = keras.layers.Dense(intermediate_size, activation=get_activation(hidden_act),
                                                 kernel_initializer=init(), name="dense")
    self.output_dense = keras.layers.Dense(hidden_size, kernel_initializer=init(), name="dense")
    self.output_layer_norm = layer_norm("LayerNorm")

  def build(self, input_shape):
    h, i = self.config["hidden_size"], self.config["intermediate_size"]
    self.attention.build((None, None, h))
    self.attention_output_dense.build((None, None, h))
    self.attention_layer_norm.build((None, None, h))
    self.intermediate_dense.build((None, None, h))
    self.output_dense.build((None, None, i))
    self.output_layer_norm.build((None, None, h))
    self.built = True

  def _dropout(self, x, training, seed, draw_shape=None):
    if training and self.hidden_dropout_rate > 0:
      return stateless_dropout(x, self.hidden_dropout_rate, seed, draw_shape)
    return x

  def call(self, x, input_mask, training=False, dropout_seed=None, query_rows=None):
    """``query_rows``: compute the output at the first this many positions only ([B, query_rows, H], equal
    to those rows of the whole output): a last layer whose only reader is the [CLS] vector."""
    if training and dropout_seed is None:
      dropout_seed = fresh_seed()
    seeds = [derive_seed(dropout_seed, i) for i in range(3)] if training else [None] * 3
    context = self.attention(x, input_mask, training=training, dropout_seed=seeds[0], query_rows=query_rows)
    full = None  # the masks of the whole [B, T, H] output, so the kept rows drop what the whole layer would
    if query_rows is not None:
      full = tf.shape(x)
      x = x[:, :query_rows]
    attn = self._dropout(self.attention_output_dense(context), training, seeds[1], full)
    attn = self.attention_layer_norm(tf.cast(attn, tf.float32) + tf.cast(x, tf.float32))
    out = self._dropout(self.output_dense(self.intermediate_dense(attn)), training, seeds[2], full)
    return self.output_layer_norm(tf.cast(out, tf.float32) + attn)

  def get_config(self):
    return {**super().get_config(), **self.config}
