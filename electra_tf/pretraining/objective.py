"""The pre-training objective (the reference's ``run_pretraining.PretrainingModel``), one batch at a time.

``PretrainingModel.forward`` maps a batch of int [B, T] ``input_ids``/``input_mask``/``segment_ids`` and a
step's random key to the losses and the tensors the evaluation metrics need:
  mask -> generator (MLM head on the masked input, or ELECTRIC's cloze towers on the unmasked input) ->
  Gumbel sample (float32, stop-gradient) -> fake input -> discriminator -> sigmoid loss on all real tokens.
  total = gen_weight * (MLM loss, or cloze loss for two towers) + disc_weight * discriminator loss.

Loss denominators can be given from outside (``denominators``): under ``tf.distribute`` the trainer passes
the *global* sums so each replica's loss is its share of the global-batch mean, and the summed gradients
are exactly the one-device gradients of the same global batch.
"""

import math
import typing

import tensorflow as tf

from electra_tf.checkpoint_names import reference_variables
from electra_tf.configs import PretrainingConfig
from electra_tf.modeling import build_pretraining_networks, derive_seed
from electra_tf.pretraining import evaluation, masking, sampling

# The reference's 1e-6 added to every loss denominator.
EPS = 1e-6


def _softmax_ce(logits, labels):
  """-log softmax(logits)[label]: float32 [...], logits [..., V], int labels [...]."""
  return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=tf.cast(logits, tf.float32))


class PretrainingModel:
  """Networks plus the reference's pre-training objective.

  ``special``: the vocabulary's [PAD]/[CLS]/[SEP]/[MASK] ids (``masking.SpecialIds``).
  """

  def __init__(self, config: PretrainingConfig, special: masking.SpecialIds = masking.SpecialIds(),
               networks=None):
    self.config = config
    self.special = special
    self.networks = networks or build_pretraining_networks(config)
    self.vocab_size = config.discriminator_config().vocab_size
    self.two_tower = bool(config.two_tower_generator and self.networks.generator is not None
                          and config.untied_generator and (config.electra_objective or config.electric_objective))
    self.has_discriminator = config.electra_objective or config.electric_objective

  @property
  def trainable_variables(self) -> list:
    seen, out = set(), []
    for net in (self.networks.discriminator, self.networks.generator):
      if net is None:
        continue
      for v in net.trainable_variables:
        if id(v) not in seen:
          seen.add(id(v))
          out.append(v)
    return out

  def variable_names(self) -> dict:
    """``{id(variable): reference name}`` (weight-decay exclusion and layer keys of the optimizer)."""
    return {id(v): name for name, v in reference_variables(self.networks).items()}

  def local_denominators(self, features) -> dict:
    """Loss normalisers of this batch, known before masking: float32 scalars.

    mlm: the number of masked slots (deterministic from input_mask); disc: real tokens; cloze: candidates.
    """
    cfg = self.config
    mask = tf.cast(features["input_mask"], tf.int32)
    out = {"mlm": tf.reduce_sum(tf.cast(masking.num_to_predict(mask, cfg.mask_prob,
                                                               cfg.max_predictions_per_seq), tf.float32)),
           "disc": tf.reduce_sum(tf.cast(mask, tf.float32))}
    if self.two_tower:
      ids = tf.cast(features["input_ids"], tf.int32)
      out["cloze"] = tf.reduce_sum(tf.cast(masking.candidates_mask(ids, mask, self.special), tf.float32))
    return out

  def forward(self, features, seed, step, training: bool, row_offset=0, denominators=None,
              dropout_seed=None) -> dict:
    """Losses (float32 scalars) and per-token tensors of one batch.

    seed/step: ints or int tensors keying masking and sampling (``random_ops``); row_offset: index of
    this batch's first row in the global batch; dropout_seed: [2] int32 (derived from seed/step if None).
    """
    cfg, special = self.config, self.special
    ids = tf.cast(features["input_ids"], tf.int32)
    input_mask = tf.cast(features["input_mask"], tf.int32)
    segment_ids = tf.cast(features["segment_ids"], tf.int32)
    denominators = denominators or self.local_denominators(features)
    if dropout_seed is None:
      dropout_seed = derive_seed(tf.stack([tf.cast(seed, tf.int32), tf.cast(step, tf.int32)]), 0)
    gen_seed, disc_seed = derive_seed(dropout_seed, 1), derive_seed(dropout_seed, 2)

    masked = masking.mask(ids, input_mask, segment_ids, cfg.mask_prob, cfg.max_predictions_per_seq, special,
                          seed, step, row_offset)
    out = {"masked_lm_ids": masked.masked_lm_ids, "masked_lm_weights": masked.masked_lm_weights,
           "input_mask": input_mask}
    gen = self.networks.generator
    if self.two_tower:  # cloze over every position of the unmasked input
      cloze_logits = gen(ids, input_mask, segment_ids, training=training, dropout_seed=gen_seed)["logits"]
      cloze_weights = tf.cast(masking.candidates_mask(ids, input_mask, special), tf.float32)
      cloze_slot_loss = _softmax_ce(cloze_logits, ids)
      out["cloze_loss"] = tf.reduce_sum(cloze_weights * cloze_slot_loss) / (denominators["cloze"] + EPS)
      mlm_logits = masking.gather_positions(cloze_logits, masked.masked_lm_positions)
    elif gen is None:  # uniform generator
      mlm_logits = tf.zeros(tf.concat([tf.shape(masked.masked_lm_ids), [self.vocab_size]], 0), tf.float32)
    else:
      mlm_logits = gen(masked.input_ids, input_mask, segment_ids, positions=masked.masked_lm_positions,
                       training=training, dropout_seed=gen_seed)["logits"]
    mlm_logits = tf.cast(mlm_logits, tf.float32)
    weights = masked.masked_lm_weights
    mlm_slot_loss = _softmax_ce(mlm_logits, masked.masked_lm_ids)
    out["mlm_slot_loss"] = mlm_slot_loss
    out["mlm_loss"] = tf.reduce_sum(weights * mlm_slot_loss) / (denominators["mlm"] + EPS)
    out["masked_lm_preds"] = tf.argmax(mlm_logits, -1, output_type=tf.int32)
    total = cfg.gen_weight * (out["cloze_loss"] if self.two_tower else out["mlm_loss"])

    if self.has_discriminator:
      sampled = sampling.sample_tokens(mlm_logits, seed, step, row_offset, cfg.temperature,
                                       masked.masked_lm_ids if cfg.disallow_correct else None)
      original = masking.unmask(masked)
      fake_ids, updated = masking.scatter_update(original, sampled, masked.masked_lm_positions)
      labels = updated if cfg.electric_objective else updated * tf.cast(tf.not_equal(fake_ids, original), tf.int32)
      logits = self.networks.discriminator(fake_ids, input_mask, segment_ids, training=training,
                                           dropout_seed=disc_seed)["logits"]
      logits = tf.cast(logits, tf.float32)
      if cfg.electric_objective:  # energy-based: add the cloze log-probability of the token seen
        log_q = tf.gather(tf.nn.log_softmax(tf.cast(cloze_logits, tf.float32)), fake_ids, batch_dims=2)
        logits += tf.stop_gradient(log_q) + math.log(cfg.mask_prob / (1.0 - cfg.mask_prob))
      token_weights = tf.cast(input_mask, tf.float32)
      losses = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.cast(labels, tf.float32), logits=logits)
      losses *= token_weights
      out["disc_loss"] = tf.reduce_sum(losses) / (denominators["disc"] + EPS)
      out["disc_example_loss"] = tf.reduce_sum(losses, -1) / (EPS + tf.reduce_sum(token_weights, -1))
      out["disc_labels"] = labels
      out["disc_probs"] = tf.sigmoid(logits)
      out["disc_preds"] = tf.cast(logits > 0, tf.int32)  # round((sign + 1) / 2), 0 at a logit of exactly 0
      out["sampled_tokids"] = sampled
      out["fake_ids"] = fake_ids
      total += cfg.disc_weight * out["disc_loss"]
    out["total_loss"] = total
    return out


def train_metric_sums(out: dict) -> dict:
  """Cheap accuracy numerators/denominators logged during training (summed over replicas and steps)."""
  w = out["masked_lm_weights"]
  sums = {"mlm_correct": tf.reduce_sum(w * tf.cast(tf.equal(out["masked_lm_ids"], out["masked_lm_preds"]),
                                                   tf.float32)),
          "mlm_count": tf.reduce_sum(w)}
  if "disc_labels" in out:
    m = tf.cast(out["input_mask"], tf.float32)
    sums["disc_correct"] = tf.reduce_sum(m * tf.cast(tf.equal(out["disc_labels"], out["disc_preds"]),
                                                     tf.float32))
    sums["disc_count"] = tf.reduce_sum(m)
    labels = tf.cast(out["disc_labels"], tf.float32)
    sums["recall_correct"] = tf.reduce_sum(m * labels * tf.cast(out["disc_preds"], tf.float32))
    sums["recall_count"] = tf.reduce_sum(m * labels)
    sums.update(evaluation.auc_histograms(out["disc_probs"], labels, m, "auc_real"))
  return sums


def train_log_keys(model: PretrainingModel) -> typing.List[str]:
  """The per-step values the training loop sums: losses, ``train_metric_sums`` and the gradient norm."""
  keys = loss_names(model) + ["mlm_correct", "mlm_count", "grad_norm"]
  if model.has_discriminator:
    keys += ["disc_correct", "disc_count", "recall_correct", "recall_count", "auc_real_pos", "auc_real_neg"]
  return keys


def train_log_values(totals: typing.Mapping[str, typing.Any], steps: int, model: PretrainingModel) -> dict:
  """Logged values (Python floats) from ``steps`` steps of summed ``train_log_keys``: mean losses and
  gradient norm, MLM accuracy, and the discriminator's accuracy, recall and real-token AUC."""
  ratio = lambda a, b: float(totals[a]) / max(float(totals[b]), 1.0)
  values = {k: float(totals[k]) / steps for k in loss_names(model) + ["grad_norm"]}
  values["mlm_accuracy"] = ratio("mlm_correct", "mlm_count")
  if model.has_discriminator:
    values["disc_accuracy"] = ratio("disc_correct", "disc_count")
    values["disc_recall"] = ratio("recall_correct", "recall_count")
    values["disc_auc_real"] = evaluation.auc_from_histograms(totals["auc_real_pos"], totals["auc_real_neg"])
  return values


def loss_names(model: PretrainingModel) -> typing.List[str]:
  names = ["total_loss", "mlm_loss"]
  if model.two_tower:
    names.append("cloze_loss")
  if model.has_discriminator:
    names.append("disc_loss")
  return names
