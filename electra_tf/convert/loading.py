"""``load_pretrained_weights``: one entry point that initialises our networks from any supported format.

Pre-training's ``init_checkpoint`` and fine-tuning's ``--init-checkpoint`` call it. It restores weights
only (never optimizer slots or the step), so continuing from Google's released checkpoints, which ship
without Adam slots (google-research/electra issue #25), works with a fresh optimizer.
"""

import dataclasses
import json
import typing

import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from electra_tf.runtime.restore import restore_checkpoint
from electra_tf.checkpoint_names import discriminator_head_variables, encoder_variables, reference_variables
from electra_tf.configs import ModelConfig
from electra_tf.convert.architecture import SHAPE_FIELDS, Architecture, ConversionError
from electra_tf.convert.formats import detect_format, read_detected
from electra_tf.convert.layout import TF2
from electra_tf.convert.source import assign_arrays
from electra_tf.modeling import ElectraDiscriminator, ElectraEncoder, PretrainingNetworks
from electra_tf.modeling.models import ElectraGenerator


@dataclasses.dataclass
class LoadReport:
  """What ``load_pretrained_weights`` did."""
  format: str
  path: str
  architecture: typing.Optional[Architecture]
  loaded: typing.List[str]
  missing: typing.List[str]  # the target's weights the checkpoint does not have (left as initialised)
  unused: typing.List[str]  # checkpoint weights the target has no place for (e.g. the generator)
  global_step: typing.Optional[int] = None

  def summary(self) -> str:
    text = f"loaded {len(self.loaded)} weights from {self.format} checkpoint {self.path}"
    if self.architecture is not None:
      text += f" ({self.architecture.describe()})"
    if self.global_step is not None:
      text += f"; it was saved at step {self.global_step} (the optimizer and step start fresh)"
    if self.missing:
      text += f"; {len(self.missing)} not in the checkpoint keep their initialisation: {_abbrev(self.missing)}"
    if self.unused:
      text += f"; {len(self.unused)} unused: {_abbrev(self.unused)}"
    return text


def _abbrev(names, n=3):
  names = sorted(names)
  return ", ".join(names[:n]) + (f", ... (+{len(names) - n})" if len(names) > n else "")


def target_variables(target) -> dict:
  """``{reference_name: variable}`` for whatever we are loading into.

  Accepts ``PretrainingNetworks``, an ``ElectraDiscriminator``, an ``ElectraEncoder`` (scope ``electra``),
  any object with a ``reference_variables()`` method (fine-tuning models: encoder plus
  ``task_specific/<task>/...`` heads), any object with an ``encoder`` attribute, or such a dict itself."""
  if isinstance(target, typing.Mapping):
    return dict(target)
  if isinstance(target, PretrainingNetworks):
    return reference_variables(target)
  if callable(getattr(target, "reference_variables", None)):
    return dict(target.reference_variables())
  if isinstance(target, ElectraDiscriminator):
    return {**encoder_variables(target.encoder, "electra", embeddings_scope="electra"),
            **discriminator_head_variables(target.head)}
  encoder = target if isinstance(target, ElectraEncoder) else getattr(target, "encoder", None)
  if isinstance(encoder, ElectraEncoder):
    return encoder_variables(encoder, "electra", embeddings_scope="electra")
  raise TypeError(f"cannot load ELECTRA weights into a {type(target).__name__}")


def load_pretrained_weights(path: str, target, require_all: bool = False,
                            generator_path: typing.Optional[str] = None) -> LoadReport:
  """Initialises ``target``'s weights from ``path`` and returns a ``LoadReport``.

  ``path`` may be a reference TF1 checkpoint (prefix, ``.index`` or directory; recognised by its variable
  names, Adam slots ignored), this project's model directory, a Hugging Face directory (plus an optional
  ``generator_path``), a keras-hub ``ElectraBackbone`` preset directory, or a TF2 object checkpoint of
  ``PretrainingNetworks`` saved by pre-training.
  Weights are matched by reference name and shape-checked; with ``require_all`` a target weight absent
  from the checkpoint is an error, otherwise it keeps its initialisation and is listed in the report.
  Raises ``ConversionError`` (one line) for a missing file, another architecture, a shape mismatch, or a
  head count or activation other than the one the checkpoint's config states (``check_unseen_fields``)."""
  fmt, resolved = detect_format(path)
  if fmt == TF2:
    return _load_object_checkpoint(resolved, target)
  source = read_detected(fmt, resolved, generator_path)
  check_unseen_fields(path, source.architecture, target)
  variables = target_variables(target)
  available = {**source.arrays, **source.extra}
  loaded = assign_arrays(variables, available)
  missing = sorted(set(variables) - set(loaded))
  if require_all and missing:
    raise ConversionError(f"{path} lacks {len(missing)} weights the model needs: {_abbrev(missing)}")
  unused = sorted(set(available) - set(loaded))
  return LoadReport(source.format, source.path, source.architecture, loaded, missing, unused, source.global_step)


def _encoder_config(target) -> typing.Optional[ModelConfig]:
  """The config of the ``electra`` encoder in ``target``; None for a dict of variables, which does not tell."""
  if isinstance(target, PretrainingNetworks):
    return (target.discriminator if target.discriminator is not None else target.generator).config
  encoder = target if isinstance(target, ElectraEncoder) else getattr(target, "encoder", None)
  return encoder.config if isinstance(encoder, ElectraEncoder) else None


def check_unseen_fields(path: str, architecture: typing.Optional[Architecture], target):
  """Weights have the same shapes for any head count or activation, so a model built with others would take
  them without a shape error and compute something else. Where the checkpoint's config states them and
  ``target``'s differ (its sizes the same): a ConversionError naming both and the ``model_hparam_overrides``
  that match."""
  ours = _encoder_config(target)
  if ours is None or architecture is None or not architecture.stated:
    return
  theirs = architecture.discriminator
  if theirs.num_hidden_layers == 0:  # no layers (a transformers generator alone): nothing the heads would change
    return
  if any(getattr(theirs, k) != getattr(ours, k) for k in SHAPE_FIELDS):
    return  # another size: the shape check (or the caller's size check) says so first
  differ, overrides = [], {}
  if theirs.num_attention_heads != ours.num_attention_heads:
    differ.append(f"{theirs.num_attention_heads} attention heads, this run's {ours.num_attention_heads}")
    overrides["num_attention_heads"] = theirs.num_attention_heads
  if theirs.hidden_act != ours.hidden_act:
    differ.append(f"activation {theirs.hidden_act}, this run's {ours.hidden_act}")
    overrides["hidden_act"] = theirs.hidden_act
  if differ:
    raise ConversionError(f"{path}: the checkpoint's model has {' and '.join(differ)}; set "
                          f"\"model_hparam_overrides\": {json.dumps(overrides)}")


def _load_object_checkpoint(prefix: str, target) -> LoadReport:
  """Pre-training's own TF2 checkpoints restore by object structure, not by name."""
  if isinstance(target, PretrainingNetworks):
    parts = target.checkpoint_objects()
  elif isinstance(target, ElectraDiscriminator):
    parts = {"discriminator": target}
  else:
    return _load_object_checkpoint_by_name(prefix, target)
  variables = target_variables(target)
  before = {n: v.numpy().copy() for n, v in variables.items()}
  problem = restore_checkpoint(prefix, parts, require_match=False)  # what matched is counted below
  if problem is not None:
    raise ConversionError(f"{prefix} does not fit networks of this shape; pass the pre-training run's model "
                          f"hparams: {problem}")
  # The object graph does not say which of our weights it covered; a restored weight has changed.
  loaded = [n for n, v in variables.items() if not (v.numpy() == before[n]).all()]
  if not loaded:
    raise ConversionError(f"{prefix}: no weight of this TF2 checkpoint matched the model's structure")
  missing = sorted(set(variables) - set(loaded))
  return LoadReport(TF2, prefix, None, loaded, missing, [])


def _load_object_checkpoint_by_name(prefix: str, target) -> LoadReport:
  """A pre-training checkpoint into anything else (a fine-tuning model, a bare encoder).

  The checkpoint's structure is that of pre-training's networks, so it is restored into a shell of the
  same structure built from the target encoder's config, and copied across by reference name. The
  discriminator is the encoder to keep; an MLM-only run has none, and its (full-size, ``electra``)
  generator encoder is used instead.
  """
  encoder = target if isinstance(target, ElectraEncoder) else getattr(target, "encoder", None)
  if not isinstance(encoder, ElectraEncoder):
    raise ConversionError(f"{prefix} is a TF2 pre-training checkpoint; it loads into models with an ELECTRA "
                          f"encoder, not a {type(target).__name__}")
  keys = _root_objects(prefix)
  if "discriminator" in keys:
    shell = ElectraDiscriminator(encoder.config)
    shell_encoder, root = shell.encoder, {"discriminator": shell}
  elif "generator" in keys:
    shell_encoder = ElectraEncoder(encoder.config, name="electra")
    shell = ElectraGenerator(encoder.config, shell_encoder)
    root = {"generator": shell}
  else:
    raise ConversionError(f"{prefix}: a TF2 checkpoint without discriminator or generator weights")
  shell_encoder.dummy_build()
  shell.head.build()
  problem = restore_checkpoint(prefix, root)
  if problem is not None:
    raise ConversionError(f"{prefix} does not fit a model of this shape (L={encoder.config.num_hidden_layers} "
                          f"H={encoder.config.hidden_size} vocab={encoder.config.vocab_size}); pass the "
                          f"pre-training run's model hparams: {problem}")
  arrays = {n: v.numpy() for n, v in encoder_variables(shell_encoder, "electra", embeddings_scope="electra").items()}
  variables = target_variables(target)
  loaded = assign_arrays(variables, arrays)
  missing = sorted(set(variables) - set(loaded))
  return LoadReport(TF2, prefix, None, loaded, missing, sorted(set(arrays) - set(loaded)))


def _root_objects(prefix: str) -> set:
  """Names of the checkpoint root's children. Variable keys cannot tell: TF stores each variable under its
  first path, which is often the optimizer's (``optimizer/_trainable_variables/N``)."""
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(tf.compat.v1.train.NewCheckpointReader(prefix).get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
  return {child.local_name for child in graph.nodes[0].children}
