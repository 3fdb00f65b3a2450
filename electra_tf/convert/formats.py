"""The format registry: every on-disk format with its detector, reader and writer, ``detect_format`` that
walks it, and ``read_source``, which reads any of them into a ``Source`` (reference-named arrays and the
detected architecture).

Formats, in the order they are recognised:

* ``keras-hub-preset``: a keras-hub ``ElectraBackbone`` preset directory (``keras_hub_preset``). Recognised
  by its ``config.json`` alone; keras-hub (an optional extra) is imported only by the reader and the writer.
* ``electra-tf``: this project's model directory (``electra_config.json``; its layout is in ``layout``).
* ``huggingface``: a transformers directory (``config.json`` + ``model.safetensors`` or
  ``pytorch_model.bin``) of ``ElectraForPreTraining`` / ``ElectraForMaskedLM`` / ``ElectraModel``.
* ``tf1``: a TF1 checkpoint in the reference's layout (spec section 4), e.g. Google's released
  ``electra_small``, given as a prefix, an ``.index`` file or a directory. Adam slots and ``global_step``
  are ignored on import; the released zips have no slots.
* ``pretraining-run``: a ``run_pretraining.py`` model directory (its latest checkpoint) or one of its
  checkpoint prefixes (``<dir>/ckpt-<step>``): TF2 object checkpoints next to ``pretraining_config.json``,
  the run's hparams, from which the networks are rebuilt and restored, then read by reference name.
* ``tf2``: a bare TF2 object checkpoint of ``PretrainingNetworks`` without that file; it cannot be read by
  name, only restored into networks of the same structure (``load_pretrained_weights`` does that).

A new format is one more ``Format`` in ``FORMATS``: a detector over the path, a reader to ``Source`` and,
where the project writes it, a writer.
"""

import dataclasses
import functools
import os
import typing

import tensorflow as tf

from electra_tf import fileio
from electra_tf.convert import keras_hub_preset
from electra_tf.convert.hf_reader import read_hf
from electra_tf.convert.layout import (CONFIG_FILE, HF, HF_WEIGHT_FILES, KERAS_HUB, MODEL_DIR, PRETRAINING_RUN,
                                       TF1, TF2, find_checkpoint_prefix, read_json, run_config_path)
from electra_tf.convert.readers import read_model_dir, read_pretraining_run, read_tf1, read_tf2
from electra_tf.convert.source import Source
from electra_tf.convert.writers import write_hf, write_model_dir, write_tf1
from electra_tf.errors import ConversionError


class Probe:
  """A path as the detectors see it: the files in it, and the checkpoint it holds, opened once for all of
  the checkpoint formats."""

  def __init__(self, path: str):
    self.path = os.fspath(path)
    self.is_dir = fileio.isdir(self.path)

  def file(self, name: str) -> typing.Optional[str]:
    """``<path>/<name>`` when the path is a directory holding that file."""
    candidate = os.path.join(self.path, name)
    return candidate if self.is_dir and fileio.isfile(candidate) else None

  @functools.cached_property
  def checkpoint(self) -> typing.Optional[typing.Tuple[str, bool]]:
    """(prefix, whether it is a TF2 object graph) of the checkpoint at the path; None when there is none."""
    prefix = find_checkpoint_prefix(self.path)
    if prefix is None:
      return None
    try:
      names = tf.compat.v1.train.NewCheckpointReader(prefix).get_variable_to_shape_map()
    except Exception as e:  # pylint: disable=broad-except
      raise ConversionError(f"{prefix}: not a readable TF checkpoint ({str(e).splitlines()[0]})") from None
    return prefix, "_CHECKPOINTABLE_OBJECT_GRAPH" in names


def _keras_hub_preset(probe: Probe) -> typing.Optional[str]:
  """A directory whose ``config.json`` is a keras-hub (Keras-serialised) object, of any model family (the
  reader names the family when it is not ELECTRA)."""
  config_file = probe.file(keras_hub_preset.CONFIG_FILE)
  config = (read_json(config_file) if config_file else None) or {}
  if (str(config.get("module", "")).startswith("keras_hub")
      or str(config.get("registered_name", "")).startswith("keras_hub>")):
    return probe.path
  return None


def _model_dir(probe: Probe) -> typing.Optional[str]:
  return probe.path if probe.file(CONFIG_FILE) else None


def _hugging_face(probe: Probe) -> typing.Optional[str]:
  if not probe.file("config.json"):
    return None
  if not any(probe.file(f) for f in HF_WEIGHT_FILES):
    raise ConversionError(f"{probe.path} has a Hugging Face config.json but no {' or '.join(HF_WEIGHT_FILES)}")
  return probe.path


def _tf1(probe: Probe) -> typing.Optional[str]:
  found = probe.checkpoint
  return found[0] if found and not found[1] else None


def _pretraining_run(probe: Probe) -> typing.Optional[str]:
  found = probe.checkpoint
  return found[0] if found and found[1] and fileio.isfile(run_config_path(found[0])) else None


def _tf2(probe: Probe) -> typing.Optional[str]:
  found = probe.checkpoint
  return found[0] if found and found[1] else None


@dataclasses.dataclass(frozen=True)
class Format:
  """One on-disk format."""
  name: str
  detect: typing.Callable[[Probe], typing.Optional[str]]  # the path to read (a checkpoint prefix or the
  #                                                         directory), None if it is not this format
  read: typing.Callable[[str], Source]  # that path -> Source
  write: typing.Optional[typing.Callable] = None  # the writer (arguments of its own); None: written elsewhere


# Detection order: a keras-hub preset and a Hugging Face directory both have a config.json; the three
# checkpoint formats share one probe of the checkpoint.
FORMATS: typing.Dict[str, Format] = {f.name: f for f in (
    Format(KERAS_HUB, _keras_hub_preset, keras_hub_preset.read_preset, keras_hub_preset.write_preset),
    Format(MODEL_DIR, _model_dir, read_model_dir, write_model_dir),
    Format(HF, _hugging_face, read_hf, write_hf),
    Format(TF1, _tf1, read_tf1, write_tf1),
    Format(PRETRAINING_RUN, _pretraining_run, read_pretraining_run),  # pre-training writes it
    Format(TF2, _tf2, read_tf2),
)}


def detect_format(path: str) -> typing.Tuple[str, str]:
  """(format, resolved path): the checkpoint prefix for the checkpoint formats, the directory otherwise."""
  path = os.fspath(path)
  if not fileio.exists(path) and not fileio.exists(path + ".index"):
    raise ConversionError(f"{path}: no such file or directory")
  probe = Probe(path)
  for fmt in FORMATS.values():
    resolved = fmt.detect(probe)
    if resolved is not None:
      return fmt.name, resolved
  raise ConversionError(f"{path} holds no checkpoint ({CONFIG_FILE}, a Hugging Face config.json, "
                        "or a TF checkpoint .index file)")


def holds(path: str, name: str) -> bool:
  """Whether ``path`` is in the format ``name`` by that format's detector alone."""
  return FORMATS[name].detect(Probe(path)) is not None


def read_source(path: str, generator_path: typing.Optional[str] = None) -> Source:
  """Any supported format -> ``Source``; ``generator_path``: the Hugging Face generator that goes with a
  Hugging Face discriminator."""
  return read_detected(*detect_format(path), generator_path)


def read_detected(name: str, resolved: str, generator_path: typing.Optional[str] = None) -> Source:
  """``read_source`` for a path ``detect_format`` has already recognised."""
  if generator_path is None:
    return FORMATS[name].read(resolved)
  if name != HF:
    raise ConversionError("a separate generator directory is only read with a Hugging Face discriminator")
  return read_hf(resolved, generator_path)
