"""The fine-tuning heads as Keras layers, one per head family (``head_families`` describes each family): the
reference's heads and losses, per example, on the encoder's sequence output.

Head variables take the names ``tf.layers.dense`` gives them in the reference (``dense``, ``dense_1``,
... in creation order, plus ``qa_hidden``), so checkpoints and the layer-wise learning rates line up.
"""

import keras
import tensorflow as tf

from electra_tf.modeling.activations import gelu
from electra_tf.modeling.dropout import stateless_dropout
from electra_tf.modeling.pretraining_heads import gather_positions

HEAD_DROPOUT = 0.1  # the reference's keep_prob 0.9 on the [CLS] vector


def _dense(units, name, activation=None):
  # tf.layers.dense defaults: glorot-uniform kernel, zero bias. Heads compute in float32.
  return keras.layers.Dense(units, activation=activation, name=name, dtype="float32")


class TaskHead(keras.layers.Layer):
  """Base: ``call(sequence_output [B,T,H] f32, features, training, seed)`` -> (losses [B], outputs).
  ``dropout_rate``: on the [CLS] vector of the sentence heads (the reference's fixed 0.1).
  ``reads_first_token_only``: the head reads ``sequence_output[:, 0]`` and nothing else."""

  reads_first_token_only = False

  def __init__(self, task, hidden_size: int, dropout_rate: float = HEAD_DROPOUT, **kwargs):
    super().__init__(name=f"head_{task.name}", dtype="float32", **kwargs)
    self.task_name = task.name
    self.hidden_size = hidden_size
    self.dropout_rate = dropout_rate
    self.denses = []  # (reference name, layer, input width), in the reference's creation order

  def add_dense(self, units, in_width, ref_name, activation=None):
    layer = _dense(units, ref_name, activation)
    self.denses.append((ref_name, layer, in_width))
    return layer

  def build(self, input_shape=None):
    for _, layer, width in self.denses:
      layer.build((None, width))
    self.built = True

  def reference_variables(self) -> dict:
    scope = f"task_specific/{self.task_name}"
    out = {}
    for ref_name, layer, _ in self.denses:
      out[f"{scope}/{ref_name}/kernel"] = layer.kernel
      out[f"{scope}/{ref_name}/bias"] = layer.bias
    return out

  def feature(self, features, key):
    return features[f"{self.task_name}_{key}"]


class ClassificationHead(TaskHead):
  """[CLS] -> dropout 0.1 (training) -> dense(n_labels); softmax cross-entropy."""

  reads_first_token_only = True

  def __init__(self, task, hidden_size, dropout_rate=HEAD_DROPOUT):
    super().__init__(task, hidden_size, dropout_rate)
    self.num_labels = task.num_outputs
    self.dense = self.add_dense(self.num_labels, hidden_size, "dense")

  def call(self, sequence_output, features, training=False, seed=None):
    reprs = sequence_output[:, 0]
    if training:
      reprs = stateless_dropout(reprs, self.dropout_rate, seed)
    logits = self.dense(reprs)
    labels = tf.cast(self.feature(features, "label_ids"), tf.int32)
    losses = -tf.reduce_sum(tf.one_hot(labels, self.num_labels) * tf.nn.log_softmax(logits), -1)
    return losses, dict(loss=losses, logits=logits, predictions=tf.argmax(logits, -1, output_type=tf.int32),
                        targets=labels, eid=self.feature(features, "eid"))


class RegressionHead(TaskHead):
  """[CLS] -> dropout -> dense(1); squared error against label / 5."""

  reads_first_token_only = True

  def __init__(self, task, hidden_size, dropout_rate=HEAD_DROPOUT):
    super().__init__(task, hidden_size, dropout_rate)
    self.dense = self.add_dense(1, hidden_size, "dense")

  def call(self, sequence_output, features, training=False, seed=None):
    reprs = sequence_output[:, 0]
    if training:
      reprs = stateless_dropout(reprs, self.dropout_rate, seed)
    predictions = tf.squeeze(self.dense(reprs), -1)
    targets = tf.cast(self.feature(features, "targets"), tf.float32)
    losses = tf.square(predictions - targets)
    return losses, dict(loss=losses, predictions=predictions, targets=targets, eid=self.feature(features, "eid"))


class MultiLabelHead(TaskHead):
  """[CLS] -> dropout -> dense(n_labels); a sigmoid cross-entropy per label, summed over the labels. A label is
  predicted when its logit is above 0 (probability above 0.5)."""

  reads_first_token_only = True

  def __init__(self, task, hidden_size, dropout_rate=HEAD_DROPOUT):
    super().__init__(task, hidden_size, dropout_rate)
    self.dense = self.add_dense(task.num_outputs, hidden_size, "dense")

  def call(self, sequence_output, features, training=False, seed=None):
    reprs = sequence_output[:, 0]
    if training:
      reprs = stateless_dropout(reprs, self.dropout_rate, seed)
    logits = self.dense(reprs)
    targets = tf.cast(self.feature(features, "label_ids"), tf.float32)
    losses = tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(labels=targets, logits=logits), -1)
    return losses, dict(loss=losses, logits=logits, predictions=tf.cast(logits > 0.0, tf.int32), targets=targets,
                        eid=self.feature(features, "eid"))


class TaggingHead(TaskHead):
  """Sequence output gathered at each word's first piece -> dense(n_tags); CE summed over words."""

  def __init__(self, task, hidden_size, dropout_rate=HEAD_DROPOUT):
    super().__init__(task, hidden_size, dropout_rate)
    self.num_tags = task.num_outputs
    self.dense = self.add_dense(self.num_tags, hidden_size, "dense")

  def call(self, sequence_output, features, training=False, seed=None):
    reprs = gather_positions(sequence_output, self.feature(features, "labeled_positions"))
    logits = self.dense(reprs)
    labels = tf.cast(self.feature(features, "labels"), tf.int32)
    mask = tf.cast(self.feature(features, "labels_mask"), tf.float32)
    losses = tf.nn.softmax_cross_entropy_with_logits(tf.one_hot(labels, self.num_tags), logits)
    losses = tf.reduce_sum(losses * mask, -1)
    return losses, dict(loss=losses, predictions=tf.argmax(logits, -1, output_type=tf.int32), labels=labels,
                        labels_mask=mask, eid=self.feature(features, "eid"))


# The QA head's per-feature outputs that answer decoding (the scorers, the SavedModel) reads.
QA_OUTPUTS = ("start_logits", "end_logits", "answerable_logit", "start_top_log_probs", "start_top_index",
              "end_top_log_probs", "end_top_index")


class QAHead(TaskHead):
  """The reference's span head with joint end prediction and the answerable classifier.

  answer_mask = context tokens (segment 1) + position 0. Start logits = dense(1), masked by
  1000 * (mask - 1). Joint end: [h_start; h_t] -> dense(512, gelu, ``qa_hidden``) -> dense(1); training
  uses the gold start, prediction the top ``beam_size`` starts and the top ``beam_size`` ends of each.
  Answerable: [h_CLS; sum softmax(start) * h] -> dense(512, gelu) -> dense(1), sigmoid CE on
  is_impossible weighted by ``answerable_weight``. Loss = (CE_start + CE_end) / 2 + that.
  Outputs (prediction): start_top_log_probs [B, k], start_top_index [B, k], end_top_log_probs [B, k, k],
  end_top_index [B, k, k], start_logits [B, T], answerable_logit [B].
  """

  def __init__(self, task, hidden_size, dropout_rate=HEAD_DROPOUT):
    super().__init__(task, hidden_size, dropout_rate)
    cfg = task.config
    self.cfg = cfg
    self.start_dense = self.add_dense(1, hidden_size, "dense")
    if cfg.joint_prediction:
      self.qa_hidden = self.add_dense(512, 2 * hidden_size, "qa_hidden", gelu)
      self.end_dense = self.add_dense(1, 512, "dense_1")
    else:
      self.end_dense = self.add_dense(1, hidden_size, "dense_1")
    if cfg.answerable_classifier:
      n = len([d for d in self.denses if d[0].startswith("dense")])
      if cfg.answerable_uses_start_logits:
        self.answer_hidden = self.add_dense(512, 2 * hidden_size, f"dense_{n}", gelu)
        self.answer_dense = self.add_dense(1, 512, f"dense_{n + 1}")
      else:
        self.answer_hidden = None
        self.answer_dense = self.add_dense(1, hidden_size, f"dense_{n}")

  def call(self, sequence_output, features, training=False, seed=None):
    cfg = self.cfg
    h = sequence_output
    batch, seq_len = tf.shape(h)[0], tf.shape(h)[1]
    answer_mask = tf.cast(features["input_mask"], tf.float32) * tf.cast(features["segment_ids"], tf.float32)
    answer_mask += tf.one_hot(0, seq_len)
    start_logits = tf.squeeze(self.start_dense(h), -1)
    k = cfg.beam_size
    outputs = {}
    start_positions = tf.cast(self.feature(features, "start_positions"), tf.int32)
    end_positions = tf.cast(self.feature(features, "end_positions"), tf.int32)
    if cfg.joint_prediction:
      start_logits += 1000.0 * (answer_mask - 1)
      start_log_probs = tf.nn.log_softmax(start_logits)
      start_top_log_probs, start_top_index = tf.nn.top_k(start_log_probs, k=k)
      if training:
        start_features = tf.gather(h, start_positions, batch_dims=1)                 # [B, H]
        start_features = tf.tile(start_features[:, None], [1, seq_len, 1])          # [B, T, H]
        end_logits = tf.squeeze(self.end_dense(self.qa_hidden(tf.concat([start_features, h], -1))), -1)
        end_logits += 1000.0 * (answer_mask - 1)
      else:
        start_features = tf.gather(h, start_top_index, batch_dims=1)                # [B, k, H]
        start_features = tf.tile(start_features[:, :, None], [1, 1, seq_len, 1])    # [B, k, T, H]
        end_features = tf.tile(h[:, None], [1, k, 1, 1])                            # [B, k, T, H]
        end_logits = tf.squeeze(self.end_dense(self.qa_hidden(
            tf.concat([start_features, end_features], -1))), -1)                    # [B, k, T]
        end_logits += (1000.0 * (answer_mask - 1))[:, None]
        end_top_log_probs, end_top_index = tf.nn.top_k(tf.nn.log_softmax(end_logits), k=k)
        outputs.update(end_top_log_probs=end_top_log_probs, end_top_index=end_top_index)
        end_logits = tf.zeros([batch, seq_len])
      outputs.update(start_top_log_probs=start_top_log_probs, start_top_index=start_top_index)
    else:
      end_logits = tf.squeeze(self.end_dense(h), -1)
      start_logits += 1000.0 * (answer_mask - 1)
      end_logits += 1000.0 * (answer_mask - 1)
    if "end_top_index" not in outputs:
      outputs.update(end_top_log_probs=tf.zeros([batch, k, k]), end_top_index=tf.zeros([batch, k, k], tf.int32))
    if "start_top_index" not in outputs:
      outputs.update(start_top_log_probs=tf.zeros([batch, k]), start_top_index=tf.zeros([batch, k], tf.int32))

    def ce(logits, positions):
      return -tf.reduce_sum(tf.one_hot(positions, seq_len) * tf.nn.log_softmax(logits), -1)

    losses = (ce(start_logits, start_positions) + ce(end_logits, end_positions)) / 2.0
    answerable_logit = tf.zeros([batch])
    if cfg.answerable_classifier:
      reprs = h[:, 0]
      if cfg.answerable_uses_start_logits:
        start_p = tf.nn.softmax(start_logits)
        reprs = self.answer_hidden(tf.concat([reprs, tf.reduce_sum(start_p[:, :, None] * h, 1)], -1))
      answerable_logit = tf.squeeze(self.answer_dense(reprs), -1)
      labels = tf.cast(self.feature(features, "is_impossible"), tf.float32)
      losses += cfg.answerable_weight * tf.nn.sigmoid_cross_entropy_with_logits(labels, answerable_logit)
    outputs.update(loss=losses, start_logits=start_logits, end_logits=end_logits,
                   answerable_logit=answerable_logit, eid=self.feature(features, "eid"))
    return losses, outputs
