"""``--hparams`` over arbitrary JSON objects (hypothesis): through the same code the command lines run, every
object gives a valid config or one ElectraError line; never a traceback, never a non-finite number accepted.

Objects mix the real hparam names (pre-training, fine-tuning and model fields) with made-up ones, and
values of every JSON type, NaN, Infinity and numbers at and beyond the fields' ranges.
"""

import dataclasses
import json
import math
import typing

import hypothesis
import pytest
from hypothesis import strategies as st

from electra_tf.cli import finetune as finetune_cli
from electra_tf.cli import pretrain as pretrain_cli
from electra_tf.configs import FinetuningConfig, ModelConfig, PretrainingConfig
from electra_tf.errors import ElectraError
from electra_tf.hparams import HParams

SCALARS = (st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
NON_FINITE = st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e999, -1e999])


def _typed(annotation, meta):
  """Values of a field's own type: in and around its range, non-finite ones, and now and then any JSON."""
  args = [a for a in typing.get_args(annotation) if a is not type(None)]
  annotation = args[0] if typing.get_origin(annotation) is typing.Union else annotation
  lo, hi = meta.get("min"), meta.get("max")
  edges = [x for x in (lo, hi) if x is not None]
  if typing.get_origin(annotation) in (list, tuple):
    own = st.lists(st.text(max_size=6), max_size=3) | st.text(max_size=8)
  elif meta.get("choices"):
    own = st.sampled_from(meta["choices"])
  elif annotation is bool:
    own = st.booleans()
  elif annotation is int:
    own = (st.integers(min_value=-3, max_value=600) | st.integers(min_value=-2**70, max_value=2**70)
           | st.sampled_from([*edges, 2**63 - 1, 2**63, 1e6]))
  elif annotation is float:
    own = st.one_of(st.floats(min_value=lo if lo is not None else -10.0, max_value=hi if hi is not None else 10.0),
                    st.floats(allow_nan=False), NON_FINITE, NON_FINITE, st.sampled_from(edges or [0.0]))
  elif annotation is dict:
    own = st.dictionaries(st.sampled_from(sorted(MODEL_FIELDS)) | st.text(max_size=6),
                          st.deferred(lambda: st.one_of(*MODEL_VALUES.values())), max_size=3)
  else:
    own = st.text(max_size=8)
  return st.one_of(own, own, own, JSON)


def _field_values(cls):
  hints = typing.get_type_hints(cls)
  return {f.name: _typed(hints[f.name], f.metadata) for f in dataclasses.fields(cls)}


MODEL_FIELDS = {f.name for f in dataclasses.fields(ModelConfig)}
MODEL_VALUES = _field_values(ModelConfig)


def _objects(cls):
  """A few of ``cls``'s hparams with typed values, sometimes an unknown or flag-only key; or any JSON object."""
  values = {**_field_values(cls), **{k: JSON for k in ("model_name", "data_dir", "preset", "learning_rat")}}
  chosen = st.lists(st.sampled_from(sorted(values)), max_size=4, unique=True)
  typed = chosen.flatmap(lambda keys: st.fixed_dictionaries({k: values[k] for k in keys}))
  return typed | typed | typed | st.dictionaries(st.text(max_size=10), JSON, max_size=4)


SETTINGS = hypothesis.settings(max_examples=300, deadline=None, derandomize=True,
                               suppress_health_check=[hypothesis.HealthCheck.too_slow])


def _numbers(value):
  if isinstance(value, HParams):
    value = value.to_dict()
  if isinstance(value, float):
    yield value
  elif isinstance(value, dict):
    for v in value.values():
      yield from _numbers(v)
  elif isinstance(value, (list, tuple)):
    for v in value:
      yield from _numbers(v)


def _check(build, obj):
  """``build(text)`` gives a config with finite numbers only, or raises an ElectraError with a one-line message."""
  text = json.dumps(obj)  # writes NaN and Infinity as Python's json reads them back
  try:
    configs = build(text)
  except ElectraError as e:
    message = str(e).strip()
    assert message and "\n" not in message, message
    return None
  for config in configs:
    assert all(math.isfinite(x) for x in _numbers(config)), (obj, config)
  return configs


def _pretraining(tmp_path):
  def build(text):
    args = pretrain_cli.parse_args(["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", text])
    config = pretrain_cli.config_from_flags(args, str(tmp_path))
    return config, config.discriminator_config(), config.generator_config()
  return build


def _finetuning(tmp_path):
  def build(text):
    args = finetune_cli.parse_args(["--data-dir", str(tmp_path), "--model-name", "m", "--task", "sst",
                                    "--hparams", text])
    config = finetune_cli.config_from_flags(args, str(tmp_path))
    return config, config.model_config()
  return build


@hypothesis.given(obj=_objects(PretrainingConfig))
@SETTINGS
def test_any_json_object_gives_a_pretraining_config_or_one_error_line(obj, tmp_path_factory):
  _check(_pretraining(tmp_path_factory.getbasetemp()), obj)


@hypothesis.given(obj=_objects(FinetuningConfig))
@SETTINGS
def test_any_json_object_gives_a_finetuning_config_or_one_error_line(obj, tmp_path_factory):
  _check(_finetuning(tmp_path_factory.getbasetemp()), obj)


@pytest.mark.parametrize("build", [_pretraining, _finetuning])
def test_the_generated_objects_reach_both_outcomes(build, tmp_path):
  """The property is not vacuous: valid overrides give a config, and each non-finite value is refused."""
  build = build(tmp_path)
  assert _check(build, {"learning_rate": 3e-4, "model_hparam_overrides": {"hidden_size": 128}}) is not None
  for obj in ({"learning_rate": float("nan")}, {"learning_rate": float("inf")},
              {"model_hparam_overrides": {"initializer_range": float("-inf")}}):
    assert _check(build, obj) is None, obj
