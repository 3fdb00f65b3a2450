"""What a checkpoint holds, inferred from its reference-named variable shapes alone.

Released ELECTRA checkpoints come without a config (and the released Small has a full-size generator,
google-research/electra issue #39), so every dimension is read off the shapes: E from the word table
[V, E], H from ``layer_0``'s query kernel, L from the number of ``layer_i`` scopes, the FFN width from the
intermediate kernel. Heads (and the activation, dropout and initializer range) are not visible in shapes; the
reference always derives the heads as max(1, H//64). A config that comes with the weights (a transformers
``config.json``, a run's ``pretraining_config.json``) states them, and ``Architecture.with_stated`` takes them
from it.
"""

import dataclasses
import re
import typing

from electra_tf import presets
from electra_tf.configs import ModelConfig, PretrainingConfig, derived_heads, model_config_for_size
from electra_tf.errors import ConversionError, HParamError
from electra_tf.modeling import build_pretraining_networks

_SIZE_NAMES = {dims: name for name, dims in presets.SIZE_DIMS.items()}
_REFERENCE_SCOPES = ("electra/", "generator/", "generator_predictions/", "discriminator_predictions/")
_LAYER = re.compile(r"/encoder/layer_(\d+)/")
# ``ModelConfig`` fields that weights cannot show: only a config beside them can state these.
STATED_FIELDS = ("num_attention_heads", "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
                 "initializer_range")
# The fields the shapes give.
SHAPE_FIELDS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "intermediate_size",
                "max_position_embeddings", "type_vocab_size")


def is_reference_weight(name: str) -> bool:
  """True for the pre-training weights of spec section 4 (not optimizer slots or ``global_step``)."""
  return name.startswith(_REFERENCE_SCOPES) and not name.endswith(("/adam_m", "/adam_v"))


def _shape(shapes, name):
  return list(shapes[name]) if name in shapes else None


def _encoder_config(shapes, scope: str, embeddings_scope: str) -> ModelConfig:
  """One tower's dimensions from ``<scope>/encoder/layer_i`` and ``<embeddings_scope>/embeddings``."""
  vocab, emb = _shape(shapes, f"{embeddings_scope}/embeddings/word_embeddings")
  positions = _shape(shapes, f"{embeddings_scope}/embeddings/position_embeddings") or [512, emb]
  types = _shape(shapes, f"{embeddings_scope}/embeddings/token_type_embeddings") or [2, emb]
  layers = sorted({int(m.group(1)) for n in shapes if n.startswith(scope + "/")
                   for m in [_LAYER.search(n)] if m})
  if layers != list(range(len(layers))):
    raise ConversionError(f"{scope}/encoder has layers {layers}, expected layer_0..layer_{len(layers) - 1}")
  query = _shape(shapes, f"{scope}/encoder/layer_0/attention/self/query/kernel")
  project = _shape(shapes, f"{scope}/embeddings_project/kernel")
  hidden = query[1] if query else (project[1] if project else emb)
  ffn = _shape(shapes, f"{scope}/encoder/layer_0/intermediate/dense/kernel")
  return ModelConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=len(layers),
                     num_attention_heads=derived_heads(hidden), intermediate_size=ffn[1] if ffn else 4 * hidden,
                     max_position_embeddings=positions[0], type_vocab_size=types[0], embedding_size=emb)


@dataclasses.dataclass
class Architecture:
  """The networks a checkpoint describes, and which of their parts it actually holds weights for."""
  discriminator: ModelConfig
  generator: typing.Optional[ModelConfig]  # None: the checkpoint has no generator weights
  has_discriminator_head: bool
  tied_generator: bool = False  # the generator is the ``electra`` encoder itself (untied_generator=false)
  untied_generator_embeddings: bool = False
  # True: the STATED_FIELDS come from a config shipped with the weights; False: from the reference's
  # derivation (heads max(1, H//64), the default activation, dropout and initializer range).
  stated: bool = False

  @property
  def size_name(self) -> str:
    d = self.discriminator
    name = _SIZE_NAMES.get((d.hidden_size, d.num_hidden_layers), "custom")
    if name == "small" and self.generator is not None and self.generator_fraction == 1.0:
      name = "small++"  # the released ELECTRA-Small
    return name

  @property
  def generator_fraction(self) -> typing.Optional[float]:
    return None if self.generator is None else self.generator.hidden_size / self.discriminator.hidden_size

  def describe(self) -> str:
    """One line such as "found ELECTRA small++ discriminator L=12 H=256 E=128, generator L=12 H=256
    (fraction 1.0)"."""
    d, g = self.discriminator, self.generator
    text = (f"found ELECTRA {self.size_name} discriminator L={d.num_hidden_layers} H={d.hidden_size} "
            f"E={d.embedding_size} V={d.vocab_size}")
    if d.num_attention_heads != derived_heads(d.hidden_size):
      text += f" heads={d.num_attention_heads}"
    if d.hidden_act != "gelu":
      text += f" activation={d.hidden_act}"
    if not self.has_discriminator_head:
      text += " (no discriminator head)"
    if g is None:
      text += ", no generator weights"
    elif self.tied_generator:
      text += ", generator = the discriminator's encoder (untied_generator false)"
    else:
      text += (f", generator L={g.num_hidden_layers} H={g.hidden_size} "
               f"(fraction {round(self.generator_fraction, 5)})")
      if self.untied_generator_embeddings:
        text += f" with its own embeddings E={g.embedding_size}"
    return text

  def pretraining_hparams(self) -> dict:
    """``PretrainingConfig.create`` keyword arguments that rebuild exactly these networks."""
    d = self.discriminator
    known = _SIZE_NAMES.get((d.hidden_size, d.num_hidden_layers))
    hparams = dict(model_size=known or "small", vocab_size=d.vocab_size, embedding_size=d.embedding_size)
    overrides = {k: getattr(d, k) for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                           "intermediate_size", "max_position_embeddings", "type_vocab_size")}
    default = ModelConfig(hidden_size=d.hidden_size)  # drop overrides that the size already implies
    if known:
      hparams["model_hparam_overrides"] = {k: v for k, v in overrides.items()
                                           if k in ("max_position_embeddings", "type_vocab_size")
                                           and v != getattr(default, k)}
    else:
      hparams["model_hparam_overrides"] = overrides
    rebuilt = model_config_for_size(hparams["model_size"], d.vocab_size, d.embedding_size,
                                    hparams["model_hparam_overrides"])
    hparams["model_hparam_overrides"].update({k: getattr(d, k) for k in ("intermediate_size",) + STATED_FIELDS
                                              if getattr(d, k) != getattr(rebuilt, k)})
    if self.generator is None:
      return hparams
    if self.tied_generator:
      hparams["untied_generator"] = False
      if not self.has_discriminator_head:
        hparams["electra_objective"] = False  # BERT-style MLM: one encoder, only the LM head
      return hparams
    hparams["generator_hidden_size"] = self.generator.hidden_size / d.hidden_size
    hparams["generator_layers"] = self.generator.num_hidden_layers / d.num_hidden_layers
    hparams["untied_generator_embeddings"] = self.untied_generator_embeddings
    return hparams

  def pretraining_config(self, **overrides) -> PretrainingConfig:
    return PretrainingConfig.create(**{**self.pretraining_hparams(), **overrides})

  def build_networks(self):
    """Fresh networks with these shapes (weights created), ready to receive the checkpoint's values."""
    return build_pretraining_networks(self.pretraining_config())

  def with_stated(self, discriminator: typing.Union[typing.Mapping, ModelConfig, None] = None,
                  generator: typing.Union[typing.Mapping, ModelConfig, None] = None,
                  source: str = "the config") -> "Architecture":
    """This architecture with the ``STATED_FIELDS`` a config gives (``{field: value}`` or a ``ModelConfig`` per
    tower; a tied generator is the discriminator). Shape fields in them must agree with the weights: a
    ConversionError naming ``source`` otherwise (a config of another model)."""
    towers = {}
    for name, mine, given in (("discriminator", self.discriminator, discriminator),
                              ("generator", self.generator, generator)):
      if mine is None or given is None or (name == "generator" and self.tied_generator):
        continue
      given = given.to_dict() if isinstance(given, ModelConfig) else dict(given)
      differ = [f"{k} {given[k]} (the weights: {getattr(mine, k)})" for k in SHAPE_FIELDS
                if k in given and given[k] != getattr(mine, k)]
      if differ:
        raise ConversionError(f"{source} describes another {name} than its weights: {', '.join(differ)}; "
                              "put the model's own config beside the weights, or remove it")
      try:
        towers[name] = dataclasses.replace(mine).update({k: given[k] for k in STATED_FIELDS if k in given})
      except HParamError as e:
        raise ConversionError(f"{source}: {e}") from None
    disc = towers.get("discriminator", self.discriminator)
    gen = disc if self.tied_generator else towers.get("generator", self.generator)
    arch = dataclasses.replace(self, discriminator=disc, generator=gen, stated=True)
    try:
      _check_derivable(arch)
    except ConversionError as e:
      raise ConversionError(f"{source}: {e}") from None
    return arch

  def to_json(self) -> dict:
    return dict(discriminator=self.discriminator.to_dict(),
                generator=None if self.generator is None else self.generator.to_dict(),
                has_discriminator_head=self.has_discriminator_head, tied_generator=self.tied_generator,
                untied_generator_embeddings=self.untied_generator_embeddings, stated=self.stated)

  @classmethod
  def from_json(cls, data: dict) -> "Architecture":
    gen = data.get("generator")
    return cls(discriminator=ModelConfig(**data["discriminator"]),
               generator=None if gen is None else ModelConfig(**gen),
               has_discriminator_head=data["has_discriminator_head"],
               tied_generator=data.get("tied_generator", False),
               untied_generator_embeddings=data.get("untied_generator_embeddings", False),
               stated=data.get("stated", False))


def infer_architecture(shapes: typing.Mapping[str, typing.Sequence[int]], source: str = "checkpoint") -> Architecture:
  """Architecture from ``{reference_name: shape}``; raises ConversionError for anything that is not ELECTRA."""
  if "electra/embeddings/word_embeddings" not in shapes:
    sample = sorted(n for n in shapes if n != "global_step")[:1]
    hint = f" (it has e.g. {sample[0]!r})" if sample else " (it holds no variables)"
    raise ConversionError(f"{source} is not an ELECTRA checkpoint: no 'electra/embeddings/word_embeddings'{hint}")
  disc = _encoder_config(shapes, "electra", "electra")
  has_disc_head = "discriminator_predictions/dense_1/kernel" in shapes
  has_gen_head = "generator_predictions/output_bias" in shapes
  has_gen_encoder = any(n.startswith("generator/encoder/") for n in shapes)
  untied_emb = "generator/embeddings/word_embeddings" in shapes
  if has_gen_encoder:
    gen = _encoder_config(shapes, "generator", "generator" if untied_emb else "electra")
    arch = Architecture(disc, gen, has_disc_head, untied_generator_embeddings=untied_emb)
  elif has_gen_head:  # the LM head sits on the "electra" encoder itself
    arch = Architecture(disc, disc, has_disc_head, tied_generator=True)
  else:
    arch = Architecture(disc, None, has_disc_head)
  if not has_disc_head and arch.generator is None and disc.num_hidden_layers == 0:
    raise ConversionError(f"{source} has ELECTRA embeddings but no encoder layers or heads")
  _check_derivable(arch)
  return arch


def _check_derivable(arch: Architecture):
  """The reference derives a generator's FFN and heads from its width; a checkpoint that breaks that rule
  cannot be rebuilt from pre-training hparams, so say so instead of failing later on a shape."""
  d, g = arch.discriminator, arch.generator
  if g is not None and not arch.tied_generator and g.intermediate_size != 4 * g.hidden_size:
    raise ConversionError(f"generator FFN width {g.intermediate_size} is not 4 x its hidden size "
                          f"{g.hidden_size}; the reference never builds such a generator")
  if g is not None and arch.untied_generator_embeddings and g.embedding_size != g.hidden_size:
    raise ConversionError(f"generator embeddings are {g.embedding_size} wide but its hidden size is "
                          f"{g.hidden_size}; the reference gives untied generator embeddings its hidden width")
  if g is not None and g.hidden_size % g.num_attention_heads:
    raise ConversionError(f"generator hidden size {g.hidden_size} cannot be split into "
                          f"{g.num_attention_heads} heads")
  if g is not None and not arch.tied_generator and g.num_attention_heads != derived_heads(g.hidden_size):
    raise ConversionError(f"the generator has {g.num_attention_heads} attention heads where the reference gives "
                          f"its width {g.hidden_size} {derived_heads(g.hidden_size)}; the reference never builds "
                          "such a generator")
  if g is not None and not arch.tied_generator and g.hidden_act != d.hidden_act:
    raise ConversionError(f"the generator's activation {g.hidden_act} is not the discriminator's {d.hidden_act}; "
                          "the reference never builds such a pair")
  if d.hidden_size % d.num_attention_heads:
    raise ConversionError(f"hidden size {d.hidden_size} cannot be split into {d.num_attention_heads} heads")
