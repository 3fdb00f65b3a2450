"""``Source``: weights read from any format, under reference names (``electra_tf.checkpoint_names`` is the
one place that ties those names to our variables), and the conversions between a ``Source`` and our
networks."""

import dataclasses
import typing

import numpy as np

from electra_tf.checkpoint_names import reference_variables
from electra_tf.convert.architecture import Architecture, infer_architecture
from electra_tf.errors import ConversionError
from electra_tf.modeling.models import ElectraGenerator


@dataclasses.dataclass
class Source:
  """Weights read from any format, under reference names."""
  format: str
  path: str
  arrays: typing.Dict[str, np.ndarray]  # pre-training weights (spec section 4 names)
  architecture: Architecture
  extra: typing.Dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # e.g. task_specific/*
  ignored: typing.List[str] = dataclasses.field(default_factory=list)  # optimizer slots, unknown names
  vocab_file: typing.Optional[str] = None
  do_lower_case: typing.Optional[bool] = None
  global_step: typing.Optional[int] = None


def holds_weight(arch: Architecture, name: str) -> bool:
  """Whether a checkpoint with this architecture holds the weight ``name`` (heads/generator may be absent)."""
  if name.startswith("discriminator_predictions/"):
    return arch.has_discriminator_head
  if name.startswith(("generator/", "generator_predictions/")):
    return arch.generator is not None
  return True


def source_from_networks(nets, vocab_file: typing.Optional[str] = None, do_lower_case: bool = True,
                         global_step: typing.Optional[int] = None) -> Source:
  """Our in-memory ``PretrainingNetworks`` as a ``Source`` (so every writer can export them); the sizes come
  from the weights, the head count and the other fields shapes cannot show from the networks' configs."""
  arrays = {n: v.numpy() for n, v in reference_variables(nets).items()}
  arch = infer_architecture({n: a.shape for n, a in arrays.items()}, source="the networks")
  electra = nets.discriminator if nets.discriminator is not None else nets.generator  # the ``electra`` encoder
  generator = nets.generator if isinstance(nets.generator, ElectraGenerator) else None
  arch = arch.with_stated(electra.config, None if generator is None else generator.config, source="the networks")
  return Source("networks", "<memory>", arrays, arch, vocab_file=vocab_file, do_lower_case=do_lower_case,
                global_step=global_step)


def generator_arrays(source: Source) -> dict:
  """The generator's weights named as a ``generator/*`` tower next to ``electra/embeddings`` (the layout
  ``hf_mapping`` exports): a tied generator's ``electra`` encoder is renamed, and untied embeddings are
  used instead of the discriminator's."""
  arch, out = source.architecture, {}
  for name, value in source.arrays.items():
    if name.startswith("discriminator_predictions/"):
      continue
    if arch.tied_generator and name.startswith(("electra/encoder/", "electra/embeddings_project/")):
      name = "generator/" + name[len("electra/"):]
    elif arch.untied_generator_embeddings and name.startswith("electra/"):
      continue
    out[name] = value
  return out


def assign_arrays(nets_or_variables, arrays: typing.Mapping[str, np.ndarray]) -> typing.List[str]:
  """Assigns ``arrays`` to the matching reference-named variables (shape-checked); returns the names set."""
  variables = (nets_or_variables if isinstance(nets_or_variables, typing.Mapping)
               else reference_variables(nets_or_variables))
  done = []
  for name, var in variables.items():
    if name not in arrays:
      continue
    value = np.asarray(arrays[name])
    if tuple(value.shape) != tuple(var.shape):
      raise ConversionError(f"{name}: checkpoint shape {list(value.shape)} does not match the model's "
                            f"{list(var.shape)}")
    var.assign(value.astype(np.float32))
    done.append(name)
  return done
