"""tf-models-official's ELECTRA pre-training step, timed; run by benchmarks/pretrain.py --compare tfm.

It runs in its own interpreter (``--tfm-python``) because tf-models-official pins its own TensorFlow
(2.20 for tf-models-official 2.20) and Keras 2 (tf_keras), which cannot share a process with ours.
Prints one JSON line: {"seq_per_s": ...}.

The step is what tf-models-official's ElectraPretrainTask.train_step does: ElectraPretrainer over two
BertEncoders (generator sharing the discriminator's embedding layer), its loss (MLM mean + weight x
token-mean sigmoid cross-entropy), AdamW with weight decay and global-norm clipping. Its masking comes
with the input (positions and ids precomputed, as its data loader provides them), so the timed step does
slightly less work than ours, which masks in the graph every step; it also runs BERT's pooler and a
generator classification head in the forward pass, as its task does.
"""

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
  p = argparse.ArgumentParser()
  for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "intermediate_size", "embedding_size",
               "generator_hidden_size", "generator_layers", "batch", "seq_len", "max_predictions", "steps",
               "warmup"):
    p.add_argument("--" + name.replace("_", "-"), type=int, required=True)
  p.add_argument("--dtype", default="float32")
  p.add_argument("--xla", action="store_true")
  a = p.parse_args()

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top
  from official.nlp.modeling import models, networks  # pylint: disable=g-import-not-at-top
  from official.modeling import tf_utils  # pylint: disable=g-import-not-at-top
  if a.dtype != "float32":
    tf_keras.mixed_precision.set_global_policy("mixed_bfloat16" if a.dtype == "bfloat16" else "mixed_float16")

  def encoder(hidden, layers, embedding_layer=None):
    return networks.BertEncoder(  # as its encoders.build_encoder builds the default "bert" encoder
        vocab_size=a.vocab_size, hidden_size=hidden, num_layers=layers,
        num_attention_heads=a.num_heads if hidden == a.hidden_size else max(1, hidden // 64),
        inner_dim=a.intermediate_size if hidden == a.hidden_size else 4 * hidden, max_sequence_length=512,
        type_vocab_size=2, dict_outputs=True,
        embedding_width=a.embedding_size, embedding_layer=embedding_layer,
        initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02))

  disc = encoder(a.hidden_size, a.num_layers)
  dummy = [tf.zeros([1, 8], tf.int32)] * 3
  disc(dummy)  # builds the embedding table the generator and the MLM head share
  gen = encoder(a.generator_hidden_size, a.generator_layers, embedding_layer=disc.get_embedding_layer())
  gen(dummy)
  model = models.ElectraPretrainer(
      generator_network=gen, discriminator_network=disc, vocab_size=a.vocab_size, num_classes=2,
      num_token_predictions=a.max_predictions, mlm_activation=tf_utils.get_activation("gelu"),
      mlm_initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02))
  opt = tf_keras.optimizers.AdamW(learning_rate=1e-4, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)

  b, n, k = a.batch, a.seq_len, a.max_predictions
  rng = tf.random.Generator.from_seed(0)

  def batch():
    ids = rng.uniform([b, n], min(1000, a.vocab_size // 2), a.vocab_size, dtype=tf.int32)
    pos = rng.uniform([b, k], 1, n - 1, dtype=tf.int32)
    return dict(input_word_ids=ids, input_mask=tf.ones([b, n], tf.int32), input_type_ids=tf.zeros([b, n], tf.int32),
                masked_lm_positions=pos, masked_lm_ids=tf.gather(ids, pos, batch_dims=1),
                masked_lm_weights=tf.ones([b, k], tf.float32))

  @tf.function(jit_compile=a.xla)
  def step(inputs):
    with tf.GradientTape() as tape:
      out = model(inputs, training=True)
      lm = tf_keras.losses.sparse_categorical_crossentropy(
          inputs["masked_lm_ids"], tf.cast(out["lm_outputs"], tf.float32), from_logits=True)
      mlm = tf.math.divide_no_nan(tf.reduce_sum(lm * inputs["masked_lm_weights"]),
                                  tf.reduce_sum(inputs["masked_lm_weights"]))
      mask = tf.cast(inputs["input_mask"], tf.float32)
      rtd = tf.nn.sigmoid_cross_entropy_with_logits(logits=tf.cast(out["disc_logits"], tf.float32),
                                                    labels=tf.cast(out["disc_label"], tf.float32))
      loss = mlm + 50.0 * tf.math.divide_no_nan(tf.reduce_sum(rtd * mask), tf.reduce_sum(mask))
    grads = tape.gradient(loss, model.trainable_variables)
    # its pooler and generator classification head get no gradient (no next-sentence loss): skip them
    opt.apply_gradients([(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None])
    return loss

  data = [batch() for _ in range(4)]
  for i in range(a.warmup):
    step(data[i % 4]).numpy()
  start = time.perf_counter()
  for i in range(a.steps):
    loss = step(data[i % 4])
  loss.numpy()
  print(json.dumps({"seq_per_s": a.steps * b / (time.perf_counter() - start)}))


if __name__ == "__main__":
  main()
