"""The discriminator and generator models and the shared-embedding pair used for pre-training."""

import dataclasses
import typing

import keras
import tensorflow as tf

from electra_tf.configs import ModelConfig, PretrainingConfig
from electra_tf.modeling.dropout import derive_seed
from electra_tf.modeling.encoder import ElectraEncoder
from electra_tf.modeling.pretraining_heads import DiscriminatorHead, GeneratorHead


class ElectraDiscriminator(keras.Model):
  """Encoder (scope ``electra``) + replaced-token-detection head.

  Call with int [B, T] ``input_ids``, ``input_mask``, ``segment_ids``; returns a dict with ``logits``
  [B, T] float32, ``sequence_output`` [B, T, H] and, if asked, ``hidden_states``.
  """

  def __init__(self, config: ModelConfig, encoder: ElectraEncoder = None, name: str = "discriminator",
               **kwargs):
    super().__init__(name=name, **kwargs)
    self.config = config
    self.encoder = encoder or ElectraEncoder(config, name="electra")
    self.head = DiscriminatorHead(config.hidden_size, config.hidden_act, config.initializer_range)

  def call(self, input_ids, input_mask=None, segment_ids=None, training=False, dropout_seed=None,
           output_hidden_states=False):
    out = dict(self.encoder(input_ids, input_mask, segment_ids, training=training, dropout_seed=dropout_seed,
                            output_hidden_states=output_hidden_states))
    out["logits"] = self.head(out["sequence_output"])
    return out


class ElectraGenerator(keras.Model):
  """Encoder (scope ``generator``, or the discriminator's own when tied) + tied masked-LM head.

  Call as the discriminator plus optional ``positions`` int [B, P]; returns ``logits`` [B, P, V]
  (or [B, T, V]) float32 and ``sequence_output``.
  """

  def __init__(self, config: ModelConfig, encoder: ElectraEncoder, name: str = "generator", **kwargs):
    super().__init__(name=name, **kwargs)
    self.config = config
    self.encoder = encoder
    self.head = GeneratorHead(encoder.embeddings, config.hidden_size, config.hidden_act,
                              config.initializer_range)

  def call(self, input_ids, input_mask=None, segment_ids=None, positions=None, training=False,
           dropout_seed=None, output_hidden_states=False):
    out = dict(self.encoder(input_ids, input_mask, segment_ids, training=training, dropout_seed=dropout_seed,
                            output_hidden_states=output_hidden_states))
    out["logits"] = self.head(out["sequence_output"], positions)
    return out


def _roll(x, shift: int):
  """The reference's ``roll``: shift -1 puts x[t-1] at t, shift 1 puts x[t+1] at t (wrapping)."""
  return tf.concat([x[:, shift:], x[:, :shift]], axis=1)


class TwoTowerGenerator(keras.Model):
  """ELECTRIC's cloze generator: causal encoders ``generator_ltr`` and ``generator_rtl`` on the
  *unmasked* input; position t reads [ltr(t-1); rtl(t+1)], so it never sees its own token.

  Call as ``ElectraGenerator`` (``positions`` optional); ``logits`` are [B, T, V] (or [B, P, V])
  float32 from the head ``cloze_predictions`` (dense 2Hg -> E, LayerNorm, tied to the ltr tower's word
  embeddings, as the reference's ``TwoTowerClozeTransformer``).
  """

  def __init__(self, config: ModelConfig, embeddings=None, untied_embeddings: bool = False,
               name: str = "generator", **kwargs):
    super().__init__(name=name, **kwargs)
    self.config = config
    # Untied: each tower its own tables (the reference's scope/embeddings); else both share ``embeddings``.
    self.ltr = ElectraEncoder(config, embeddings=None if untied_embeddings else embeddings,
                              name="generator_ltr", direction="ltr")
    self.rtl = ElectraEncoder(config, embeddings=None if untied_embeddings else embeddings,
                              name="generator_rtl", direction="rtl")
    self.encoder = self.ltr  # whose embeddings the head is tied to
    self.head = GeneratorHead(self.ltr.embeddings, 2 * config.hidden_size, config.hidden_act,
                              config.initializer_range, name="cloze_predictions")

  def dummy_build(self):
    self.ltr.dummy_build()
    self.rtl.dummy_build()
    return self

  def call(self, input_ids, input_mask=None, segment_ids=None, positions=None, training=False,
           dropout_seed=None):
    seeds = [None, None] if dropout_seed is None else [derive_seed(dropout_seed, i) for i in (0, 1)]
    ltr = self.ltr(input_ids, input_mask, segment_ids, training=training, dropout_seed=seeds[0])
    rtl = self.rtl(input_ids, input_mask, segment_ids, training=training, dropout_seed=seeds[1])
    sequence = tf.concat([_roll(ltr["sequence_output"], -1), _roll(rtl["sequence_output"], 1)], -1)
    return {"sequence_output": sequence, "logits": self.head(sequence, positions)}


@dataclasses.dataclass
class PretrainingNetworks:
  """What pre-training builds: the discriminator, the generator (None for a uniform generator) and how
  they share weights. ``generator_embeddings_scope`` is ``electra`` when the embeddings are shared."""
  discriminator: typing.Optional[ElectraDiscriminator]
  generator: typing.Optional[ElectraGenerator]
  generator_scope: str = "generator"
  generator_embeddings_scope: str = "electra"

  def checkpoint_objects(self) -> dict:
    """The ``tf.train.Checkpoint`` children pre-training saves them under (absent networks left out)."""
    return {k: v for k, v in (("discriminator", self.discriminator), ("generator", self.generator))
            if v is not None}

  def build(self):
    for net in (self.discriminator, self.generator):
      if net is not None:
        (net if isinstance(net, TwoTowerGenerator) else net.encoder).dummy_build()
        net.head.build()
    return self


def build_pretraining_networks(config: PretrainingConfig) -> PretrainingNetworks:
  """The reference's network choice for a pre-training config (weights created, nothing compiled).

  - ELECTRA (default): a small generator in scope ``generator`` sharing ``electra/embeddings``.
  - ``untied_generator_embeddings``: the generator gets its own ``generator/embeddings`` at its width.
  - ``untied_generator=false`` or the MLM objective: one full-size ``electra`` encoder serves both heads.
  - ``uniform_generator``: no generator network.
  - ``two_tower_generator`` (forced by ELECTRIC): ``TwoTowerGenerator``, scopes ``generator_ltr``/``_rtl``.
  """
  disc_cfg, gen_cfg = config.discriminator_config(), config.generator_config()
  discriminator = ElectraDiscriminator(disc_cfg)
  mlm_only = not (config.electra_objective or config.electric_objective)
  if config.uniform_generator:
    nets = PretrainingNetworks(discriminator, None)
  elif mlm_only or not config.untied_generator:
    nets = PretrainingNetworks(None if mlm_only else discriminator,
                               ElectraGenerator(disc_cfg, discriminator.encoder), generator_scope="electra")
  elif config.two_tower_generator:
    generator = TwoTowerGenerator(gen_cfg, discriminator.encoder.embeddings, config.untied_generator_embeddings)
    nets = PretrainingNetworks(discriminator, generator, generator_scope="generator_two_tower",
                               generator_embeddings_scope=("generator_ltr" if config.untied_generator_embeddings
                                                           else "electra"))
  else:
    shared = None if config.untied_generator_embeddings else discriminator.encoder.embeddings
    gen_encoder = ElectraEncoder(gen_cfg, embeddings=shared, name="generator")
    nets = PretrainingNetworks(discriminator, ElectraGenerator(gen_cfg, gen_encoder),
                               generator_embeddings_scope="generator" if shared is None else "electra")
  return nets.build()
