"""Typed, validated hyperparameter containers shared by every config.

The reference parses ``--hparams`` as JSON (or a ``.json`` file) and sets attributes blindly, raising only
for unknown keys. Here every field declares its type and allowed range, so a typo or a wrong value fails at
start-up with one line that names the key and what is allowed, instead of hours into a run.
"""

import dataclasses
import difflib
import json
import math
import os
import typing


from electra_tf.errors import HParamError  # re-exported: every config raises it from here


def field(default, help: str = "", *, min=None, max=None, choices=None, min_exclusive=False,
          default_factory=None, per_run=False):
  """A dataclass field carrying validation metadata. ``per_run``: the field does not shape the compiled
  trainer (a seed, a path, the peak LR, what is written), so runs that differ only in such fields can share
  one (``finetuning.trainer_cache``)."""
  meta = dict(help=help, min=min, max=max, choices=choices, min_exclusive=min_exclusive, per_run=per_run)
  if default_factory is not None:
    return dataclasses.field(default_factory=default_factory, metadata=meta)
  return dataclasses.field(default=default, metadata=meta)


def _describe(annotation, meta) -> str:
  base = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
          dict: "a JSON object"}
  origin = typing.get_origin(annotation)
  args = typing.get_args(annotation)
  optional = origin is typing.Union and type(None) in args
  if optional:
    annotation = next(a for a in args if a is not type(None))
    origin = typing.get_origin(annotation)
  if origin in (list, tuple):
    text = "a list of strings (or one comma-separated string)"
  elif meta.get("choices"):
    text = "one of " + ", ".join(repr(c) for c in meta["choices"])
  else:
    text = base.get(annotation, str(annotation))
    lo, hi = meta.get("min"), meta.get("max")
    if lo is not None and hi is not None:
      text += f" in {'(' if meta.get('min_exclusive') else '['}{lo}, {hi}]"
    elif lo is not None:
      text += f" {'>' if meta.get('min_exclusive') else '>='} {lo}"
    elif hi is not None:
      text += f" <= {hi}"
  return text + (" or null" if optional else "")


def coerce_value(name: str, value, annotation, meta):
  """Returns ``value`` converted to the field's type, or raises HParamError naming the key."""
  def fail():
    raise HParamError(f"hparam '{name}': expected {_describe(annotation, meta)}, got {value!r}")

  origin = typing.get_origin(annotation)
  args = typing.get_args(annotation)
  if origin is typing.Union and type(None) in args:
    if value is None:
      return None
    annotation = next(a for a in args if a is not type(None))
    origin = typing.get_origin(annotation)

  if origin in (list, tuple):
    if isinstance(value, str):
      value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
      fail()
    value = list(value)
  elif annotation is bool:
    if not isinstance(value, bool):
      fail()
  elif annotation is int:
    if isinstance(value, bool):
      fail()
    if isinstance(value, float) and value.is_integer():  # JSON writes 1e6 as a float
      value = int(value)
    if not isinstance(value, int):
      fail()
    if not -2**63 <= value < 2**63:  # TensorFlow counts in int64
      raise HParamError(f"hparam '{name}': {value:.3g} does not fit in a 64-bit integer; give a smaller value")
  elif annotation is float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
      fail()
    value = float(value)
    if not math.isfinite(value):  # NaN passes every range comparison
      raise HParamError(non_finite_message(name, value))
  elif annotation is str:
    if not isinstance(value, str):
      fail()
  elif annotation is dict:
    if not isinstance(value, dict):
      fail()

  if meta.get("choices") and value not in meta["choices"]:
    fail()
  if isinstance(value, (int, float)) and not isinstance(value, bool):
    lo, hi = meta.get("min"), meta.get("max")
    if lo is not None and (value < lo or (meta.get("min_exclusive") and value == lo)):
      fail()
    if hi is not None and value > hi:
      fail()
  return value


class HParams:
  """Mixin for dataclass configs: validated ``update`` and JSON round trips."""

  def field_map(self):
    hints = typing.get_type_hints(type(self))
    return {f.name: (hints[f.name], f.metadata) for f in dataclasses.fields(self)}

  def update(self, overrides: dict):
    fields = self.field_map()
    for key, value in overrides.items():
      if key not in fields:
        close = difflib.get_close_matches(key, fields, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise HParamError(f"unknown hparam {key!r}{hint} (see docs/hparams.md for the full list)")
      annotation, meta = fields[key]
      setattr(self, key, coerce_value(key, value, annotation, meta))
    return self

  def to_dict(self) -> dict:
    return dataclasses.asdict(self)

  def to_json(self) -> str:
    return json.dumps(self.to_dict(), indent=2, sort_keys=True)


def non_finite_message(name: str, value) -> str:
  return (f"hparam {name!r}: {value} is not a finite number; give a finite value (JSON has no NaN or Infinity, "
          "and a number such as 1e999 overflows)")


def _reject_non_finite(value, name: str):
  """Raises HParamError naming the first NaN or infinite number anywhere in ``value`` (the hparam ``name``)."""
  if isinstance(value, float) and not math.isfinite(value):
    raise HParamError(non_finite_message(name, value))
  if isinstance(value, dict):
    for key, item in value.items():
      _reject_non_finite(item, f"{name}.{key}")
  elif isinstance(value, list):
    for i, item in enumerate(value):
      _reject_non_finite(item, f"{name}[{i}]")


def parse_hparams(text: typing.Optional[str]) -> dict:
  """Parses ``--hparams``: a JSON object, or a path ending in ``.json`` (as in the reference). Numbers must be
  finite: Python's json accepts NaN and Infinity, which would pass every range check."""
  if text is None or not text.strip():
    return {}
  text = text.strip()
  if text.endswith(".json"):
    if not os.path.exists(text):
      raise HParamError(f"--hparams file {text} does not exist; pass a JSON string or an existing .json file")
    try:
      with open(text, encoding="utf-8") as f:
        source, body = text, f.read()
    except UnicodeDecodeError as e:
      raise HParamError(f"--hparams file {text} is not UTF-8 text (byte {e.start}: {e.reason}); save it as "
                        "UTF-8 JSON") from None
    except OSError as e:
      raise HParamError(f"--hparams file {text} cannot be read ({e.strerror or e}); pass a readable .json "
                        "file") from None
  else:
    source, body = "--hparams", text
  try:
    value = json.loads(body)
  except json.JSONDecodeError as e:
    raise HParamError(f"{source} is not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); "
                      "example: --hparams '{\"learning_rate\": 3e-4}'") from None
  if not isinstance(value, dict):
    raise HParamError(f"{source} must be a JSON object of hparam names to values, got {type(value).__name__}")
  for key, item in value.items():
    _reject_non_finite(item, key)
  return value


def markdown_table(config_cls, exclude=()) -> str:
  """A Markdown table of a config's fields (less those of the ``exclude`` classes it inherits): name,
  type and range, default, meaning."""
  hints = typing.get_type_hints(config_cls)
  inherited = {f.name for cls in exclude for f in dataclasses.fields(cls)}
  rows = ["| hparam | allowed | default | meaning |", "|---|---|---|---|"]
  for f in dataclasses.fields(config_cls):
    if f.name in inherited:
      continue
    default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    rows.append(f"| `{f.name}` | {_describe(hints[f.name], f.metadata)} | `{json.dumps(default)}` | "
                f"{f.metadata.get('help', '')} |")
  return "\n".join(rows)
