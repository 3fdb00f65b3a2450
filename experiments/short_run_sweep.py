"""A measured sweep for short pre-training runs: peak LR, warmup and Adam bias correction on the sample model.

Why: with a few hundred steps, the reference recipe (AdamW without bias correction, multiplicative warmup,
LR 1e-3, 10% warmup) can collapse the discriminator to "everything is original", and fine-tuning from it is
worse than from random weights. This script measures, per point, whether pre-training collapses and whether
the pre-trained model fine-tunes better than random init, so that a short-run recipe can be chosen by rule.

Each point pre-trains the sample model (``electra_tf.presets.sample_pretraining_hparams``: the tiny preset, with
``learning_rate``, ``num_warmup_steps``, ``adam_bias_correction`` and ``num_train_steps`` overridden), evaluates
it on the held-out split (20 batches), fine-tunes it on the sample ``sst`` task (one trial, seed 0) and appends
one JSON row to ``--out``. Points whose row already exists are skipped, and an interrupted pre-training resumes
from its last checkpoint, so rerunning the same command continues the sweep.

    PY=.venv/bin/python; D=sweep_run     # from the checkout's root
    $PY -m experiments.short_run_sweep --data-dir D --out D/sweep.jsonl --baseline        # random init, seeds 0-2
    $PY -m experiments.short_run_sweep --data-dir D --out D/sweep.jsonl --points A        # 600 steps, 4 LRs x BC
    $PY -m experiments.short_run_sweep --data-dir D --out D/sweep.jsonl --points B        # 2 best of A, warmup 30/50%
    $PY -m experiments.short_run_sweep --data-dir D --out D/sweep.jsonl --points C --steps 200,1500
    $PY -m experiments.short_run_sweep --data-dir D --out D/sweep.jsonl \\
        --points "lr=3e-4,wu=0.3,bc=1,steps=600;lr=1e-3,wu=0.1,bc=0,steps=600"          # explicit points
    $PY -m experiments.short_run_sweep --data-dir D --out D/sweep.jsonl \
        --points "lr=3e-4,bc=1,steps=600,temp=2;lr=3e-4,bc=1,steps=600,gen=0.25"      # generator levers
    $PY -m experiments.short_run_sweep --out D/sweep.jsonl --table                        # markdown table

Stages: ``A`` = learning_rate {1e-4, 3e-4, 1e-3, 2e-3} x adam_bias_correction {off, on}, 600 steps, warmup 10%.
``B`` = the two best Stage A settings (ranked by held-out ``disc_auc_real`` rounded to 0.01, then sst accuracy)
with warmup {30%, 50%}. ``C`` = the best setting of A and B, as a rule (peak LR, warmup fraction, bias
correction), at the run lengths of ``--steps``. ``--dry-run`` lists the points a command would run.

A point is reported as collapsed when held-out ``disc_recall < 0.05`` and ``disc_auc_real < 0.6``.
The data directory must hold the sample setup (``sample_data.ensure_sample_setup(data_dir)``; built on first use).
"""

import argparse
import collections
import json
import logging
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if not __package__:  # run as a file: the package's modules are not importable
  sys.exit("run it as a module, from the checkout's root: python -m experiments.short_run_sweep [options]")

# pylint: disable=wrong-import-position
import tensorflow as tf

from electra_tf.cli.common import run_cli
from electra_tf import presets, reporting, sample_data
from electra_tf.configs import FinetuningConfig, PretrainingConfig
from electra_tf.finetuning import selection
from electra_tf.finetuning.run import run_every_trial
from electra_tf.finetuning.trainer_cache import TrainerCache
from electra_tf.pretraining import trainer
from electra_tf.runtime.atomic_files import atomic_write
from experiments.units import log

STAGE_A_LRS = (1e-4, 3e-4, 1e-3, 2e-3)
# Stage A's 8 (learning_rate, bias correction) points, most informative first, so that a sweep cut short by
# a slow machine still has the main answers: the previously safe LR, then whether bias correction alone
# rescues the reference LR, the middle LR with it, the reference recipe itself (already known to collapse at
# 800 steps), and the extremes last.
STAGE_A_ORDER = ((1e-4, False), (1e-3, True), (3e-4, True), (1e-3, False), (3e-4, False), (2e-3, True),
                 (1e-4, True), (2e-3, False))
assert sorted(STAGE_A_ORDER) == sorted((lr, bc) for lr in STAGE_A_LRS for bc in (False, True))
STAGE_STEPS = 600
STAGE_A_WARMUP = 0.1
STAGE_B_WARMUPS = (0.3, 0.5)
BASELINE_SEEDS = (0, 1, 2)
FINETUNE_SEED = 0
FINETUNE_EPOCHS = 2.0  # the sample fine-tuning of the measured table (the main job now uses 1 epoch)
HELDOUT_KEYS = ("disc_auc", "disc_auc_real", "disc_recall", "disc_precision", "disc_accuracy",
                "masked_lm_accuracy", "disc_loss", "masked_lm_loss")
COLLAPSE_RECALL, COLLAPSE_AUC_REAL = 0.05, 0.6
TRAINERS = TrainerCache()  # the sweep's fine-tunes share one compiled trainer (the results of new ones)


# ---- points ------------------------------------------------------------------------------------------------

def make_point(lr: float, warmup: float, bc: bool, steps: int, stage: str) -> dict:
  """A sweep point; ``warmup`` is a fraction of ``steps``."""
  return {"stage": stage, "learning_rate": float(lr), "warmup_frac": float(warmup),
          "num_warmup_steps": max(1, int(round(warmup * steps))), "adam_bias_correction": bool(bc),
          "num_train_steps": int(steps)}


# Generator levers a point may also set (short key -> pre-training hparam); the name shows them when set.
GENERATOR_KEYS = {"temp": "temperature", "gen": "generator_hidden_size", "genw": "gen_weight"}


def point_name(p: dict) -> str:
  """Unique model name, e.g. ``sw_lr3e-4_wu10_bc1_s600`` (``_temp2`` etc. for generator levers)."""
  extra = "".join(f"_{k}{p[h]:g}" for k, h in GENERATOR_KEYS.items() if h in p)
  return (f"sw_lr{selection.learning_rate_label(p['learning_rate'])}_wu{round(100 * p['warmup_frac'])}"
          f"_bc{int(p['adam_bias_correction'])}_s{p['num_train_steps']}{extra}")


def parse_point(spec: str) -> dict:
  """``lr=3e-4,wu=0.3,bc=1,steps=600[,temp=2,gen=0.25,genw=1]`` -> a point (stage "custom")."""
  kv = dict(item.split("=", 1) for item in spec.split(",") if item.strip())
  unknown = set(kv) - {"lr", "wu", "bc", "steps"} - set(GENERATOR_KEYS)
  if unknown:
    raise SystemExit(f"unknown keys {sorted(unknown)} in point {spec!r} (use lr, wu, bc, steps, "
                     f"{', '.join(GENERATOR_KEYS)})")
  point = make_point(float(kv["lr"]), float(kv.get("wu", STAGE_A_WARMUP)), kv.get("bc", "0") in ("1", "true"),
                     int(kv.get("steps", STAGE_STEPS)), "custom")
  point.update({h: float(kv[k]) for k, h in GENERATOR_KEYS.items() if k in kv})
  return point


def ranking_key(row: dict):
  """Best first: held-out disc_auc_real (rounded to 0.01, so noise does not decide), then sst accuracy."""
  return (-round(row["disc_auc_real"], 2), -row["sst_accuracy"])


def best_settings(rows, stages, n: int):
  """The ``n`` best (learning_rate, warmup_frac, bias correction) among 600-step rows of ``stages``."""
  candidates = sorted((r for r in rows if r.get("stage") in stages and r["num_train_steps"] == STAGE_STEPS),
                      key=ranking_key)
  if not candidates:
    raise SystemExit(f"no rows of stage(s) {', '.join(stages)} yet: run them first")
  return [(r["learning_rate"], r["warmup_frac"], r["adam_bias_correction"]) for r in candidates[:n]]


def stage_points(stage: str, rows, steps_c) -> list:
  if stage == "A":
    return [make_point(lr, STAGE_A_WARMUP, bc, STAGE_STEPS, "A") for lr, bc in STAGE_A_ORDER]
  if stage == "B":
    return [make_point(lr, wu, bc, STAGE_STEPS, "B") for lr, _, bc in best_settings(rows, ("A",), 2)
            for wu in STAGE_B_WARMUPS]
  if stage == "C":
    (lr, wu, bc), = best_settings(rows, ("A", "B"), 1)
    return [make_point(lr, wu, bc, s, "C") for s in steps_c]
  raise SystemExit(f"unknown stage {stage!r} (A, B, C, or explicit points lr=..,wu=..,bc=..,steps=..)")


# ---- the work of one point ---------------------------------------------------------------------------------

def steady_rate(curve):
  """Median sequences/s over the logged loops, without the first (it includes tracing and compilation)."""
  values = [v for _, v in curve[1:]] or [v for _, v in curve]
  return statistics.median(values) if values else float("nan")


def pretrain_and_eval(data_dir: str, name: str, p: dict) -> dict:
  vocab_size = sample_data.vocab_size_of(os.path.join(data_dir, "vocab.txt"))
  hparams = presets.sample_pretraining_hparams(vocab_size, p["num_train_steps"])
  # A point without temp= samples at temperature 1, as every point did before the recipe took temperature 2.
  hparams.update({"temperature": 1.0, **{h: p[h] for h in GENERATOR_KEYS.values() if h in p}})
  hparams.update(learning_rate=p["learning_rate"], num_warmup_steps=p["num_warmup_steps"],
                 adam_bias_correction=p["adam_bias_correction"], iterations_per_loop=25, num_eval_steps=20,
                 eval_every_steps=0)
  cfg = PretrainingConfig.create(name, data_dir, **hparams)
  resumed = tf_checkpoint_exists(cfg.model_dir)
  start = time.time()
  result = trainer.run(cfg, progress=False)
  pretrain_seconds = time.time() - start
  if result.status != "finished":
    raise SystemExit(f"pre-training of {name} stopped ({result.status}); rerun to resume")
  start = time.time()
  metrics = trainer.run(PretrainingConfig.create(name, data_dir, **hparams, do_train=False, do_eval=True),
                        progress=False)
  eval_seconds = time.time() - start
  train_curves = reporting.read_scalars(os.path.join(cfg.model_dir, "train"))
  last = {k: train_curves[k][-1][1] for k in ("disc_auc_real", "disc_recall", "disc_accuracy", "mlm_accuracy")
          if train_curves.get(k)}
  steps = p["num_train_steps"]
  rates = train_curves.get("sequences_per_sec", [])
  # Sum of the trainer's per-loop times (what the loops took, tracing included, start-up and checkpoint
  # writes excluded); unlike pretrain_seconds it covers the whole run when a run was resumed.
  loop_seconds = sum((s1 - s0) * cfg.train_batch_size / r
                     for (s0, _), (s1, r) in zip([(0, None)] + rates[:-1], rates))
  return {**{k: float(metrics[k]) for k in HELDOUT_KEYS if k in metrics},
          "pretrain_seconds": round(pretrain_seconds, 1), "resumed": resumed,
          "pretrain_seq_per_sec": round(steady_rate(train_curves.get("sequences_per_sec", [])), 2),
          "pretrain_loop_seconds": round(loop_seconds, 1),
          "pretrain_seq_per_sec_wall": round(steps * cfg.train_batch_size / pretrain_seconds, 2),
          "eval_seconds": round(eval_seconds, 1),
          **{f"train_last_{k}": round(v, 4) for k, v in last.items()}}


def tf_checkpoint_exists(model_dir: str) -> bool:
  return os.path.isdir(model_dir) and tf.train.latest_checkpoint(model_dir) is not None


def finetune(data_dir: str, name: str, init_checkpoint=None, seed: int = FINETUNE_SEED) -> dict:
  """One sst trial; ``init_checkpoint`` None = the pre-trained ``models/<name>``, "none" = random weights."""
  vocab_size = sample_data.vocab_size_of(os.path.join(data_dir, "vocab.txt"))
  overrides = {"init_checkpoint": init_checkpoint} if init_checkpoint else {}
  hparams = {**presets.sample_finetuning_hparams(vocab_size), "num_train_epochs": FINETUNE_EPOCHS}
  cfg = FinetuningConfig.create(name, data_dir, **hparams, **overrides, seed=seed, num_trials=1)
  start = time.time()
  results = run_every_trial(cfg, name, trainers=TRAINERS)
  return {"sst_accuracy": float(results[-1][presets.SAMPLE_TASK]["accuracy"]), "finetune_seed": seed,
          "finetune_seconds": round(time.time() - start, 1)}


def collapsed(row: dict) -> bool:
  return row["disc_recall"] < COLLAPSE_RECALL and row["disc_auc_real"] < COLLAPSE_AUC_REAL


# ---- the JSONL ---------------------------------------------------------------------------------------------

def read_rows(path: str) -> list:
  if not os.path.exists(path):
    return []
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]


def append_row(path: str, row: dict):
  """Adds ``row`` to the JSONL: the file is rewritten whole (a few dozen rows), so it never holds half a row."""
  rows = read_rows(path) + [row]
  atomic_write(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def seed_accuracies(rows) -> dict:
  """point name -> {fine-tuning seed: sst accuracy}, from the points' own rows and their extra-seed rows."""
  out = collections.defaultdict(dict)
  for r in rows:
    if r.get("stage") == "seed":
      out[r["point"]][r["finetune_seed"]] = r["sst_accuracy"]
    elif "sst_accuracy" in r and r.get("stage") != "baseline":
      out[r["name"]][r.get("finetune_seed", FINETUNE_SEED)] = r["sst_accuracy"]
  return out


def run_extra_seeds(args, points, seeds):
  """Fine-tunes each finished point's model with the ``seeds`` it has no result for (one row per seed)."""
  have = seed_accuracies(read_rows(args.out))
  for p in points:
    name = point_name(p)
    if name not in have:
      continue
    for seed in seeds:
      if seed in have[name]:
        continue
      log(f"todo: {name} fine-tuning seed {seed}")
      if args.dry_run:
        continue
      row = {"name": f"{name}_ft{seed}", "stage": "seed", "point": name,
             **finetune(args.data_dir, name, seed=seed), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
      append_row(args.out, row)
      log(f"{name}: sst dev accuracy {row['sst_accuracy']:.2f} with seed {seed} ({row['finetune_seconds']:.0f}s)")


def run_points(args, points):
  done = {r["name"] for r in read_rows(args.out)}
  todo = [p for p in points if point_name(p) not in done]
  for p in points:
    log(f"{'skip (done)' if point_name(p) in done else 'todo'}: {point_name(p)}")
  if args.dry_run:
    run_extra_seeds(args, points, args.finetune_seeds)
    return
  for i, p in enumerate(todo, 1):
    name = point_name(p)
    log(f"== point {i}/{len(todo)}: {name}")
    row = {"name": name, **p, **pretrain_and_eval(args.data_dir, name, p)}
    log(f"{name}: held-out disc_auc_real {row['disc_auc_real']:.4f}  disc_recall {row['disc_recall']:.4f}  "
        f"disc_auc {row['disc_auc']:.4f}  mlm_acc {row['masked_lm_accuracy']:.4f}  "
        f"({row['pretrain_seconds']:.0f}s, {row['pretrain_seq_per_sec']:.1f} seq/s)")
    row.update(finetune(args.data_dir, name))
    row["collapsed"] = collapsed(row)
    row["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    append_row(args.out, row)
    log(f"{name}: sst dev accuracy {row['sst_accuracy']:.2f} ({row['finetune_seconds']:.0f}s)")
  run_extra_seeds(args, points, args.finetune_seeds)


def run_baseline(args):
  done = {r["name"] for r in read_rows(args.out)}
  for seed in args.finetune_seeds or BASELINE_SEEDS:
    name = f"sw_random_init_seed{seed}"
    if name in done:
      log(f"skip (done): {name}")
      continue
    if args.dry_run:
      log(f"todo: {name}")
      continue
    log(f"== baseline: {name}")
    row = {"name": name, "stage": "baseline", **finetune(args.data_dir, name, "none", seed),
           "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    append_row(args.out, row)
    log(f"{name}: sst dev accuracy {row['sst_accuracy']:.2f} ({row['finetune_seconds']:.0f}s)")


# ---- the table ---------------------------------------------------------------------------------------------

def seeds_cell(accs: dict) -> str:
  """``median m (lo-hi, n=k)`` over the fine-tuning seeds; ``n=1`` when there is one (its value is the sst dev column)."""
  values = [accs[k] for k in sorted(accs)]
  if len(values) < 2:
    return "n=1"
  return f"median {statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f}, n={len(values)})"


def markdown_table(rows) -> str:
  base = [r for r in rows if r.get("stage") == "baseline"]
  points = [r for r in rows if r.get("stage") not in ("baseline", "seed")]
  by_seed = seed_accuracies(rows)
  cols = [("stage", "{}"), ("learning_rate", "{:g}"), ("warmup", "{}"), ("BC", "{}"), ("steps", "{}"),
          ("disc_auc", "{:.4f}"), ("disc_auc_real", "{:.4f}"), ("disc_recall", "{:.4f}"),
          ("disc_acc", "{:.4f}"), ("mlm_acc", "{:.4f}"), ("sst dev", "{:.2f}"), ("sst dev, seeds", "{}"), ("collapsed", "{}"),
          ("pretrain loop s", "{:.0f}"), ("pretrain wall s", "{}"), ("seq/s", "{:.1f}"), ("finetune s", "{:.0f}")]
  lines = ["| " + " | ".join(c for c, _ in cols) + " |", "|" + "---|" * len(cols)]
  for r in points:
    levers = ", ".join(f"{h} {r[h]:g}" for h in GENERATOR_KEYS.values() if h in r)
    values = [r["stage"] + (f" ({levers})" if levers else ""), r["learning_rate"],
              f"{100 * r['warmup_frac']:.0f}% ({r['num_warmup_steps']})", "on" if r["adam_bias_correction"] else "off",
              r["num_train_steps"], r["disc_auc"], r["disc_auc_real"], r["disc_recall"], r["disc_accuracy"],
              r["masked_lm_accuracy"], r["sst_accuracy"], seeds_cell(by_seed[r["name"]]), "**yes**" if collapsed(r) else "no", r["pretrain_loop_seconds"],
              f"{r['pretrain_seconds']:.0f}" + (" (resumed)" if r.get("resumed") else ""),
              r["pretrain_seq_per_sec"], r["finetune_seconds"]]
    lines.append("| " + " | ".join(fmt.format(v) for (_, fmt), v in zip(cols, values)) + " |")
  out = "\n".join(lines) + "\n"
  if points:
    out += ("\npretrain loop s: sum of the trainer's per-loop times over the whole run (tracing included); wall s: "
            "this process's pre-training call (only the remainder for a resumed run); seq/s: median per-loop "
            "rate without the first loop.\n")
  if base:
    accs = [r["sst_accuracy"] for r in base]
    mean = statistics.mean(accs)
    std = statistics.stdev(accs) if len(accs) > 1 else float("nan")
    out += ("\nRandom-init baseline (sst dev accuracy): " +
            ", ".join(f"seed {r['finetune_seed']}: {r['sst_accuracy']:.2f}" for r in base) +
            f"; mean {mean:.2f}, std {std:.2f}, min {min(accs):.2f}, max {max(accs):.2f} "
            f"(fine-tune {statistics.mean(r['finetune_seconds'] for r in base):.0f}s each)\n")
  return out


def parse_args(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                              formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
  p.add_argument("--data-dir", default="sweep_run", help="the sample data directory (built if missing)")
  p.add_argument("--out", required=True, help="JSONL of result rows (appended; existing points are skipped)")
  mode = p.add_mutually_exclusive_group(required=True)
  mode.add_argument("--points", help="a stage (A, B, C) or explicit points 'lr=..,wu=..,bc=0|1,steps=..;...'")
  mode.add_argument("--baseline", action="store_true", help="fine-tune from random init, seeds 0, 1, 2")
  mode.add_argument("--table", action="store_true", help="print a markdown table of every row")
  p.add_argument("--steps", default="200,1500", help="Stage C run lengths (comma-separated)")
  p.add_argument("--finetune-seeds", default="",
                 help="fine-tuning seeds for each point, e.g. 0,1,2 (seed 0 is the point's own row; others "
                      "are added to finished points too); with --baseline the random-init seeds")
  p.add_argument("--dry-run", action="store_true", help="list the points, run nothing")
  return p.parse_args(argv)


def _main(args):
  args.finetune_seeds = [int(s) for s in args.finetune_seeds.split(",") if s.strip()]
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  if args.table:
    print(markdown_table(read_rows(args.out)), end="")
    return
  if not args.dry_run:
    sample_data.ensure_sample_setup(args.data_dir)
  if args.baseline:
    run_baseline(args)
    return
  if "=" in args.points:
    points = [parse_point(s) for s in args.points.split(";") if s.strip()]
  else:
    steps_c = [int(s) for s in args.steps.split(",") if s.strip()]
    points = stage_points(args.points.strip().upper(), read_rows(args.out), steps_c)
  run_points(args, points)


def main(argv=None) -> int:
  """Runs the experiment; a user-fixable error (``ElectraError``) is one ``error:`` line and exit status 2."""
  args = parse_args(argv)
  return run_cli(lambda: _main(args))


if __name__ == "__main__":
  sys.exit(main())
