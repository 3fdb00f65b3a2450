"""The discriminator and generator models and the shared-embedding pair used for pre-training."""

import dataclasses
import typing

import keras

from electra_tf.configs import ModelConfig, PretrainingConfig
from electra_tf.modeling.encoder import ElectraEncoder
from electra_tf.modeling.heads import DiscriminatorHead, GeneratorHead


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


@dataclasses.dataclass
class PretrainingNetworks:
  """What pre-training builds: the discriminator, the generator (None for a uniform generator) and how
  they share weights. ``generator_embeddings_scope`` is ``electra`` when the embeddings are shared."""
  discriminator: typing.Optional[ElectraDiscriminator]
  generator: typing.Optional[ElectraGenerator]
  generator_scope: str = "generator"
  generator_embeddings_scope: str = "electra"

  def build(self):
    for net in (self.discriminator, self.generator):
      if net is not None:
        net.encoder.dummy_build()
        net.head.build()
    return self


def build_pretraining_networks(config: PretrainingConfig) -> PretrainingNetworks:
  """The reference's network choice for a pre-training config (weights created, nothing compiled).

  - ELECTRA (default): a small generator in scope ``generator`` sharing ``electra/embeddings``.
  - ``untied_generator_embeddings``: the generator gets its own ``generator/embeddings`` at its width.
  - ``untied_generator=false`` or the MLM objective: one full-size ``electra`` encoder serves both heads.
  - ``uniform_generator``: no generator network.
  """
  disc_cfg, gen_cfg = config.discriminator_config(), config.generator_config()
  discriminator = ElectraDiscriminator(disc_cfg)
  mlm_only = not (config.electra_objective or config.electric_objective)
  if config.uniform_generator:
    nets = PretrainingNetworks(discriminator, None)
  elif mlm_only or not config.untied_generator:
    nets = PretrainingNetworks(None if mlm_only else discriminator,
                               ElectraGenerator(disc_cfg, discriminator.encoder), generator_scope="electra")
  else:
    shared = None if config.untied_generator_embeddings else discriminator.encoder.embeddings
    gen_encoder = ElectraEncoder(gen_cfg, embeddings=shared, name="generator")
    nets = PretrainingNetworks(discriminator, ElectraGenerator(gen_cfg, gen_encoder),
                               generator_embeddings_scope="generator" if shared is None else "electra")
  return nets.build()
