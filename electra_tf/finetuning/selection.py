"""Fine-tuning settings chosen on a validation split: a small grid, the best validation score, dev scored once.

Every model in a comparison (pre-trained, MLM-only, random weights) gets its own best setting from the same
grid (peak LR x epochs, layer-wise LR decay where it applies). ``select`` calls a scoring function per grid
point and seed that reads only the validation split (``splits.write_subset``'s ``validation`` root), and picks
the best median; ties go to the earlier grid point (lower LR, then fewer epochs: the cheaper setting).
A chosen setting counts as *converged* when the grid holds more epochs at the same LR and decay and those
did not raise the validation score; ``epoch_curve`` is that curve. When the best setting is the longest run at
its LR and decay (convergence not shown), ``extension`` names the next run: the same LR and decay with twice
the epochs, up to a cap, until a longer run no longer wins.
"""

import math
import statistics
import typing

from electra_tf.finetuning.run import run_every_trial
from electra_tf.finetuning.trainer_cache import TrainerCache


def learning_rate_label(learning_rate: float) -> str:
  """A learning rate as file and run names spell it: 0.001 -> ``1e-3``, 0.0003 -> ``3e-4``, 0.00015 ->
  ``1.5e-4`` (its significant digits, up to seven: 1.5e-4 and 2e-4 keep apart names)."""
  mantissa, exponent = f"{learning_rate:.6e}".split("e")
  return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


class Setting(typing.NamedTuple):
  """One grid point: peak LR, epochs and layer-wise LR decay (None: the config's default)."""
  learning_rate: float
  epochs: float
  layerwise_lr_decay: typing.Optional[float] = None

  def hparams(self) -> dict:
    hp = {"learning_rate": self.learning_rate, "num_train_epochs": float(self.epochs)}
    if self.layerwise_lr_decay is not None:
      hp["layerwise_lr_decay"] = self.layerwise_lr_decay
    return hp

  def key(self) -> str:
    """E.g. ``lr3e-4_ep20_lwd0.8`` (file and run names)."""
    decay = "" if self.layerwise_lr_decay is None else f"_lwd{self.layerwise_lr_decay:g}"
    return f"lr{learning_rate_label(self.learning_rate)}_ep{self.epochs:g}{decay}"

  def describe(self) -> str:
    decay = "" if self.layerwise_lr_decay is None else f", layer-wise decay {self.layerwise_lr_decay:g}"
    return f"peak LR {self.learning_rate:g}, {self.epochs:g} epochs{decay}"


def grid(learning_rates: typing.Sequence[float], epochs: typing.Sequence[float],
         layerwise_lr_decays: typing.Sequence[typing.Optional[float]] = (None,)) -> typing.List[Setting]:
  """Every combination, in the tie-breaking order: LR ascending, then decay, then epochs ascending."""
  return [Setting(lr, e, d) for lr in sorted(learning_rates) for d in layerwise_lr_decays for e in sorted(epochs)]


def choose(scores: typing.Mapping[Setting, typing.Sequence[float]],
           order: typing.Sequence[Setting]) -> Setting:
  """The setting with the best median score; a tie goes to the earliest in ``order``."""
  ranked = [s for s in order if s in scores and scores[s]]
  if not ranked:
    raise ValueError("no scored setting to choose from")
  return max(ranked, key=lambda s: (statistics.median(scores[s]), -ranked.index(s)))


def epoch_curve(scores: typing.Mapping[Setting, typing.Sequence[float]], setting: Setting) -> list:
  """[(epochs, median score)] of the grid points with ``setting``'s LR and decay, by epochs."""
  same = [s for s in scores if (s.learning_rate, s.layerwise_lr_decay) ==
          (setting.learning_rate, setting.layerwise_lr_decay)]
  return [(s.epochs, statistics.median(scores[s])) for s in sorted(same, key=lambda s: s.epochs)]


def converged(curve: typing.Sequence[typing.Tuple[float, float]], epochs: float) -> typing.Optional[bool]:
  """Whether every point of ``curve`` with more than ``epochs`` epochs scores no higher than ``epochs`` does;
  None when the curve has no point beyond it (convergence not shown)."""
  at = dict(curve)[epochs]
  later = [score for e, score in curve if e > epochs]
  if not later:
    return None
  return all(score <= at for score in later)


def extension(scores: typing.Mapping[Setting, typing.Sequence[float]], order: typing.Sequence[Setting],
              max_epochs: float, factor: float = 2.0) -> typing.Optional[Setting]:
  """The next setting to score when the best one is the longest run at its LR and decay: the same with
  ``factor`` times the epochs (rounded to 0.1), or None when the best is followed by a longer run, or when the
  longer run would exceed ``max_epochs``. ``order`` is the tie-breaking order of ``choose``;
  extensions go after the grid there (a tie keeps the cheaper run)."""
  best = choose(scores, order)
  if converged(epoch_curve(scores, best), best.epochs) is not None:
    return None
  longer = best._replace(epochs=round(best.epochs * factor, 1))
  if longer.epochs <= best.epochs or longer.epochs > max_epochs:
    return None
  return longer


def select(score: typing.Callable[[Setting, int], float], settings: typing.Sequence[Setting],
           seeds: typing.Sequence[int], max_epochs: typing.Optional[float] = None) -> dict:
  """Scores every setting with every seed through ``score(setting, seed)`` (a validation score) and chooses;
  while the best is the longest run at its LR, scores the ``extension`` up to ``max_epochs`` (None: the grid
  alone). Returns ``{"chosen", "scores": {key: [per seed]}, "curve", "converged", "seeds"}``."""
  order = list(settings)
  scores = {s: [float(score(s, seed)) for seed in seeds] for s in order}
  while max_epochs is not None:
    longer = extension(scores, order, max_epochs)
    if longer is None:
      break
    order.append(longer)
    scores[longer] = [float(score(longer, seed)) for seed in seeds]
  best = choose(scores, order)
  curve = epoch_curve(scores, best)
  return {"chosen": best, "scores": {s.key(): v for s, v in scores.items()}, "curve": curve,
          "converged": converged(curve, best.epochs), "seeds": list(seeds)}


def finetune_score(config_factory: typing.Callable[..., typing.Any], setting: Setting, seed: int,
                   raw_data_dir: str, task: str, metric: str, trainers: typing.Optional[TrainerCache] = None) -> float:
  """One fine-tuning trial with ``setting`` and ``seed`` on the task data in ``raw_data_dir``; its "dev" score
  (the validation split on a ``validation`` root, dev on a ``dev`` root). ``config_factory(**overrides)``
  makes the ``FinetuningConfig`` (model, data dir, init checkpoint and the rest); ``trainers``: the process's
  ``TrainerCache`` (grid points and seeds then share compiled steps)."""
  cfg = config_factory(**setting.hparams(), seed=seed, num_trials=1, raw_data_dir=raw_data_dir,
                       keep_all_models=False)
  value = float(run_every_trial(cfg, f"{setting.describe()}, seed {seed}", trainers=trainers)[-1][task][metric])
  if not math.isfinite(value):
    raise ValueError(f"{task} {metric} is {value} for {setting.describe()}, seed {seed}")
  return value
