"""The fine-tuning network: one ELECTRA encoder (scope ``electra``) and a head per task under
``task_specific/<task>/``, with the reference's losses (per example; the model sums them over the batch,
each masked by the example's task id, so a multi-task batch trains every task it contains).

The heads are the layers of each task's head family (``head_families``, ``head_layers``).
"""

import keras
import tensorflow as tf

from electra_tf.checkpoint_names import encoder_variables
from electra_tf.finetuning import head_families
from electra_tf.modeling.dropout import derive_seed
from electra_tf.modeling.encoder import ElectraEncoder

HEAD_DROPOUT = 0.1  # the reference's keep_prob 0.9 on the [CLS] vector; read when a model is built


class FinetuningModel(keras.Model):
  """Encoder + one head per task. ``call(features, training, dropout_seed)`` -> (loss, outputs):
  loss = sum over the batch of each example's loss on its own task (dummy rows, task_id = n_tasks,
  count for nothing); outputs = {task: head outputs for every row}."""

  def __init__(self, model_config, tasks, name="finetuning_model"):
    super().__init__(name=name)
    self.model_config = model_config
    self.task_names = [t.name for t in tasks]
    self.encoder = ElectraEncoder(model_config, name="electra")
    self.heads = [head_families.family(t.head_type).layer(t, model_config.hidden_size, HEAD_DROPOUT)
                  for t in tasks]
    # Sentence heads read [CLS] alone: the last layer then computes that position only (values within the
    # tolerances of docs/finetuning.md#training; timed in benchmarks/README.md, "Whole fine-tuning trials");
    # tagging and QA heads need every position.
    self.first_token_only = all(head.reads_first_token_only for head in self.heads)

  def build(self, input_shape=None):
    self.encoder.build(None)
    for head in self.heads:
      head.build(None)
    self.built = True

  def call(self, features, training=False, dropout_seed=None):
    seed = (lambda i: derive_seed(dropout_seed, i)) if (training and dropout_seed is not None) else (lambda i: None)
    if training and dropout_seed is None:
      raise ValueError("training needs a dropout_seed")
    sequence_output = self.encoder(features["input_ids"], features["input_mask"], features["segment_ids"],
                                   training=training, dropout_seed=seed(0),
                                   first_token_only=self.first_token_only)["sequence_output"]
    task_id = tf.cast(features["task_id"], tf.int32)
    total = tf.constant(0.0)
    outputs = {}
    for i, head in enumerate(self.heads):
      losses, out = head(sequence_output, features, training=training, seed=seed(i + 1))
      total += tf.reduce_sum(losses * tf.cast(tf.equal(task_id, i), tf.float32))
      outputs[head.task_name] = out
    return total, outputs

  def reference_variables(self) -> dict:
    """{reference TF1 name: variable} for the encoder (``electra/...``) and heads (``task_specific/...``):
    the names checkpoints are read (``convert.load_pretrained_weights``) and written by, and that the
    layer-wise learning rates key on."""
    names = encoder_variables(self.encoder, "electra", embeddings_scope="electra")
    for head in self.heads:
      names.update(head.reference_variables())
    return names
