"""A validation split dealt from training units: a seeded permutation, never a unit whose text is in dev or
repeated in training (``splits`` writes such deals as task data dirs; ``Task.carved`` deals examples in memory)."""

import collections
import random
import typing

from electra_tf.errors import HParamError


class Units(typing.NamedTuple):
  """A split file cut into units: ``header`` (TSV header line or ""), ``units`` (one row, or one sentence block
  of CoNLL lines, each without its trailing newline) and ``texts`` (what decides overlap with dev)."""
  header: str
  units: typing.List[str]
  texts: typing.List[str]


class Carving(typing.NamedTuple):
  """Indexes into the training units: the validation part and the pool (in the seeded order)."""
  validation: typing.List[int]
  pool: typing.List[int]
  seed: int


def carve(train: Units, validation_size: int, seed: int, dev: typing.Optional[Units] = None) -> Carving:
  """A seeded permutation of the training units dealt into ``validation_size`` validation units and the pool.
  Units whose text occurs in ``dev``, or in another training unit, are kept out of the validation part."""
  n = len(train.units)
  dev_texts = set(dev.texts) if dev is not None else set()
  counts = collections.Counter(train.texts)
  order = list(range(n))
  random.Random(seed).shuffle(order)
  validation, pool = [], []
  for i in order:
    text = train.texts[i]
    if len(validation) < validation_size and text not in dev_texts and counts[text] == 1:
      validation.append(i)
    else:
      pool.append(i)
  if len(validation) < validation_size or not pool:
    raise HParamError(f"{n} training units cannot give {validation_size} validation units and a "
                    "non-empty training pool; pass a smaller validation size")
  return Carving(validation, pool, seed)


