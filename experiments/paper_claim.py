"""The paper's claim at small scale: ELECTRA vs MLM-only vs no pre-training, same network, equal compute, each
model fine-tuned with its own setting chosen on a validation split, beside the classical baselines, at several
pre-training lengths.

    PY=".venv/bin/python"   # from the checkout's root
    for k in 0 1; do nice -n 10 $PY -m experiments.paper_claim --work-dir runs/paper_claim --shard $k/2 & done
    $PY -m experiments.paper_claim --work-dir /tmp/paper_claim_quick --quick       # smoke version (CI)

Every unit of work (a pre-training run, a held-out evaluation, one fine-tuning trial) writes one JSON file under
``<work>/stages/`` (fine-tuning: ``<work>/finetune/stages/``) when it finishes and is skipped when that file
exists; an interrupted pre-training resumes from its last checkpoint. Rerunning the same command therefore
continues the experiment (a longer ``--steps`` list adds runs and reuses the finished ones), and ``--until STAGE``
stops after a stage. Stages:

  1. data      the sample setup (``sample_data.ensure_sample_setup``: IMDB corpus, 8k WordPiece vocab,
               TFRecords with a 2% held-out split, Rotten Tomatoes polarity as ``sst``), plus POS tagging:
               ``oanc_pos`` (``$ELECTRA_TEST_DATA/tagging/oanc_pos``, default ``../shared/data``) cut to
               ``--pos-train-sentences`` (a seeded random subset) and ``--pos-dev-sentences`` (0 = all 2,000),
               written as the ``chunk``-layout task and counted back through ``tagging.read_conll``; the
               held-out unigram baseline (share of the most frequent maskable token in the held-out split).
  2. sweep     per method, the same rule: peak LR in ``--sweep-lrs`` at a short length (ELECTRA
               ``--sweep-steps``, MLM the FLOP-equal count), warmup and bias correction from the tiny
               preset's short-run recipe; each point fine-tuned on sst (seed ``--sweep-seed``, not one of the
               main seeds, and each of ``--extra-selection-seeds``; ``--sweep-ft-epochs`` at the preset's LR)
               and scored on the validation split carved from sst's training data, never on dev; the best (the
               median over the seeds) picks the method's LR (ties: the lower LR).
  3. pretrain  for every length in ``--steps``: ELECTRA for that many steps and MLM for the steps of equal
               training FLOPs (the reference's flops_computation.py count, ``electra_tf.flops``), each at its
               chosen LR; final held-out evaluation (``--final-eval-batches``). The train-loop seconds of both
               (from the trainer's sequences/s log) give the wall-clock-equal MLM step count, reported beside the
               FLOP-equal one.
  4. finetune  ``experiments.label_efficiency``'s protocol on every pre-trained model (named
               ``electra_s<steps>``, ``mlm_s<steps>``) and on random weights (``none``, shared by all lengths):
               baselines (majority, TF-IDF + LR, most-frequent tag) on the same subsets; per model, task and
               size its own setting from the grid (``--grid-lrs`` x ``--grid-examples``, random weights also
               x ``--random-weights-decays``, extended while the longest run wins, up to
               ``--extend-examples``), chosen on the validation split (one fine-tune
               per grid point, seed ``--sweep-seed``; the median of more with ``--extra-selection-seeds``); then seeds
               ``--first-seed`` .. + ``--seeds`` scored on dev once each. Sizes: ``--sst-sizes``, ``--pos-sizes``.
  5. summary   per task, size and length: medians, ranges, exact two-sided Mann-Whitney U of every pair, the
               classical baselines and the targets; summary.json, summary.md and plots/paper_claim.png under
               ``<work>`` (and label_efficiency's own summary under ``<work>/finetune``).

``--shard K/N`` splits the units between N processes started on the same ``--work-dir`` (round-robin per stage;
each runs its own units of a stage first, then waits for those it does not own; shard 0 writes the summary),
one thread pool per process: on a 2-core machine two shards finish the tiny model's work sooner than one
process using both cores.

The model is the tiny preset (``presets.sample_pretraining_hparams``), recipe included, read at run time, so the
experiment follows the preset; ``--temperature`` and ``--generator-size`` override ELECTRA's sampling
temperature and generator width.
"""

import argparse
import logging
import math
import os
import random
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if not __package__:  # run as a file: the package's modules are not importable
  sys.exit("run it as a module, from the checkout's root: python -m experiments.paper_claim [options]")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# pylint: disable=wrong-import-position
import numpy as np
import tensorflow as tf

from electra_tf.cli.common import run_cli
from electra_tf import presets, reporting, sample_data, seed_comparison
from electra_tf.configs import PretrainingConfig
from electra_tf.finetuning import selection, tagging
from electra_tf.flops import flops_per_step
from electra_tf.pretrain_data import pretraining_dataset
from electra_tf.pretraining import evaluation, trainer
from electra_tf.runtime.atomic_files import atomic_write
from experiments import label_efficiency as le
from experiments.units import POLL_SECONDS, log, read_json, stage_path, unit, write_json

PRETRAINED = ("electra", "mlm")
# The held-out split build_pretraining_dataset.py writes beside the training files (docs/data.md).
HELDOUT_GLOB = "pretrain_eval.tfrecord*"
TASKS = ("sst", "pos")  # label_efficiency.TASKS: sst accuracy, POS span F1 (per-word accuracy)
# "Left the unigram stage": held-out masked-LM accuracy at least this multiple of the unigram baseline.
LEFT_UNIGRAM = 2.0
HELDOUT_KEYS = ("masked_lm_accuracy", "masked_lm_loss", "disc_auc", "disc_auc_real", "disc_recall",
                "disc_precision", "disc_accuracy", "disc_loss")


# ---- small helpers -----------------------------------------------------------------------------------------

def owns(args, index: int) -> bool:
  """Whether this process (``--shard K/N``) runs the ``index``-th unit of a stage: units are dealt round-robin."""
  return index % args.num_shards == args.shard


def run_dealt(args, units, while_waiting=None) -> dict:
  """Runs the ``(name, work, work_args)`` units this shard owns, then waits for the others'; results by name.
  ``while_waiting()`` runs once, before the first wait for a unit another shard has not finished."""
  results = {}
  for owned_pass in (True, False):
    for i, (name, work, work_args) in enumerate(units):
      if owns(args, i) == owned_pass:
        if not owned_pass and while_waiting is not None and read_json(stage_path(args.work_dir, name)) is None:
          while_waiting()
          while_waiting = None
        results[name] = unit(args, name, work, *work_args, owner=owned_pass)
  return results


def loop_seconds(rates, batch_size: int) -> float:
  """Train-loop seconds from the trainer's per-loop ``sequences_per_sec`` [(step, rate)]: each loop took
  (its steps x batch) / rate. Tracing is included; start-up, checkpoint writes and evaluations are not."""
  total, prev = 0.0, 0
  for step, rate in rates:
    if rate > 0:
      total += (step - prev) * batch_size / rate
    prev = step
  return total


def steady_rate(rates) -> float:
  """Median sequences/s over the loops after the first (which includes tracing and compilation)."""
  values = [r for _, r in rates[1:]] or [r for _, r in rates]
  return statistics.median(values) if values else float("nan")


# ---- stage 1: data -----------------------------------------------------------------------------------------

def default_pos_dir() -> str:
  root = os.environ.get("ELECTRA_TEST_DATA") or os.path.join(REPO, "..", "shared", "data")
  return os.path.join(root, "tagging", "oanc_pos")


def write_pos_task(args, data_dir) -> dict:
  """oanc_pos as the ``chunk`` task: a seeded random ``--pos-train-sentences`` of train, dev cut to
  ``--pos-dev-sentences`` (0 = all); counted back through the library's reader."""
  src = args.pos_dir
  if not os.path.isfile(os.path.join(src, "train.txt")):
    raise SystemExit(f"error: no POS data at {src}/train.txt; pass --pos-dir or set ELECTRA_TEST_DATA")
  out = os.path.join(data_dir, "finetuning_data", "chunk")
  counts = {}
  for split, n in (("train", args.pos_train_sentences), ("dev", args.pos_dev_sentences)):
    with open(os.path.join(src, f"{split}.txt"), encoding="utf-8") as f:
      blocks = [b.strip("\n") for b in f.read().split("\n\n") if b.strip()]
    if n and n < len(blocks):
      keep = sorted(random.Random(0).sample(range(len(blocks)), n))  # the file runs by document: sample
      blocks = [blocks[i] for i in keep]
    atomic_write(os.path.join(out, f"{split}.txt"), "\n\n".join(blocks) + "\n")
    sentences = tagging.read_conll(os.path.join(out, f"{split}.txt"))
    counts[split] = {"sentences": len(sentences), "words": sum(len(w) for w, _ in sentences),
                     "source_sentences": len(tagging.read_conll(os.path.join(src, f"{split}.txt")))}
  return counts


def heldout_unigram_baseline(data_dir, max_seq_length) -> dict:
  """Accuracy of the best context-free guess at a masked position: always the most frequent maskable token
  (not [CLS], [SEP], [MASK] or padding, as masking.candidates_mask) of the held-out split itself, so the
  figure is an upper bound for any unigram predictor there."""
  vocab = [l.rstrip("\n") for l in open(os.path.join(data_dir, "vocab.txt"), encoding="utf-8")]
  ids = {t: i for i, t in enumerate(vocab)}
  files = os.path.join(data_dir, "pretrain_tfrecords", HELDOUT_GLOB)
  counts = np.zeros(len(vocab), np.int64)
  # one pass over every record (batches of one drop none), counted 256 at a time
  records = pretraining_dataset(files, max_seq_length, 1, is_training=False, repeat=False).unbatch().batch(256)
  for batch in records:
    tokens = batch["input_ids"].numpy()[batch["input_mask"].numpy() > 0]
    counts += np.bincount(tokens, minlength=len(vocab))[:len(vocab)]
  for special in ("[CLS]", "[SEP]", "[MASK]"):
    counts[ids[special]] = 0
  top = int(np.argmax(counts))
  return {"accuracy": float(counts[top] / counts.sum()), "token": vocab[top], "maskable_tokens": int(counts.sum())}


def stage_data(args) -> dict:
  data_dir = args.data_dir

  def work():
    if args.reuse_sample:
      for name in ("corpus", "vocab.txt", "pretrain_tfrecords", "sample_ready.json",
                   os.path.join("finetuning_data", "sst")):
        dst = os.path.join(data_dir, name)
        if not os.path.lexists(dst):
          os.makedirs(os.path.dirname(dst), exist_ok=True)
          os.symlink(os.path.abspath(os.path.join(args.reuse_sample, name)), dst)
    else:
      sample_data.ensure_sample_setup(data_dir, log=log, **args.sample_kwargs)
    pos = write_pos_task(args, data_dir)
    vocab_size = sample_data.vocab_size_of(os.path.join(data_dir, "vocab.txt"))
    baseline = heldout_unigram_baseline(data_dir, sample_data.SAMPLE_MAX_SEQ_LENGTH)
    sst = {split: sum(1 for _ in open(os.path.join(data_dir, "finetuning_data", "sst", f"{split}.tsv"),
                                      encoding="utf-8")) - 1 for split in ("train", "dev")}
    return {"vocab_size": vocab_size, "pos": pos, "sst": sst, "heldout_unigram_baseline": baseline}

  return unit(args, "data", work, owner=owns(args, 0))


# ---- pre-training ------------------------------------------------------------------------------------------

def pretrain_hparams(args, vocab_size: int, method: str, steps: int, lr: float) -> dict:
  """The tiny preset's sample run with this method's objective and peak LR; the preset's short-run recipe
  supplies warmup and bias correction from ``steps`` (read at run time)."""
  hp = presets.sample_pretraining_hparams(vocab_size, steps)
  every = max(1, steps // args.evals_per_run)
  hp.update(electra_objective=method == "electra", learning_rate=lr, num_eval_steps=args.eval_batches,
            eval_every_steps=every, save_checkpoints_steps=every,
            iterations_per_loop=max(1, min(hp["iterations_per_loop"], every)))
  if method == "electra" and args.generator_size is not None:
    hp["generator_hidden_size"] = args.generator_size
  if method == "electra" and args.temperature is not None:
    hp["temperature"] = args.temperature
  hp.update(args.model_overrides)
  return hp


def pretrain_config(args, vocab_size, method, steps, lr, name, **extra) -> PretrainingConfig:
  return PretrainingConfig.create(name, args.data_dir, **{**pretrain_hparams(args, vocab_size, method, steps, lr),
                                                          **extra})


def pretrain(args, vocab_size, method, steps, lr, name) -> dict:
  """Trains (resuming) and evaluates on the held-out split; the record of one pre-training run."""
  cfg = pretrain_config(args, vocab_size, method, steps, lr, name)
  pretrainer = trainer.Trainer(cfg, progress=False)
  result = pretrainer.train()
  if result.status != "finished":
    raise SystemExit(f"pre-training {name} stopped ({result.status}); rerun the same command to resume")
  # the final held-out evaluation on the trained model in memory (the last checkpoint's weights): a do_eval
  # run would build the networks and trace the evaluation again
  metrics = pretrainer.evaluate(num_steps=args.final_eval_batches)
  rates = reporting.read_scalars(os.path.join(cfg.model_dir, "train")).get("sequences_per_sec", [])
  return {"method": method, "name": name, "model_dir": cfg.model_dir, "steps": steps,
          "learning_rate": cfg.learning_rate, "num_warmup_steps": cfg.num_warmup_steps,
          "adam_bias_correction": cfg.adam_bias_correction, "temperature": cfg.temperature,
          "generator_hidden_size": cfg.generator_hidden_size,
          "train_batch_size": cfg.train_batch_size, "flops_per_step": flops_per_step(cfg),
          "total_flops": flops_per_step(cfg) * steps,
          "heldout": {k: float(metrics[k]) for k in HELDOUT_KEYS if k in metrics},
          "loop_seconds": round(loop_seconds(rates, cfg.train_batch_size), 1),
          "steady_seq_per_sec": round(steady_rate(rates), 2),
          "heldout_history": read_json(evaluation.results_json_path(cfg.results_txt), [])}


def equal_flop_steps(args, vocab_size, electra_steps: int) -> int:
  """MLM steps whose training FLOPs equal ``electra_steps`` of ELECTRA's (rounded to the nearest step)."""
  per_step = {m: flops_per_step(pretrain_config(args, vocab_size, m, electra_steps, 1e-4, "flops"))
              for m in PRETRAINED}
  return max(1, int(round(electra_steps * per_step["electra"] / per_step["mlm"])))


# ---- fine-tuning: label_efficiency's protocol ---------------------------------------------------------------

def model_name(run: dict) -> str:
  """A pre-trained run's name in the fine-tuning stage files: ``electra_s1200``, ``mlm_s1997``; with
  --generator-size or --temperature as in its run name, ``electra_s1200_temp1``. Another LR at the same steps is
  another model under the same name, which label_efficiency refuses in one work dir (it records each model's
  directory name)."""
  return f"{run['method']}_s{run['steps']}" + le.variant_suffix(le.parse_model_name(run["name"])[2])


def finetuning_args(args, pretrained: dict):
  """label_efficiency's arguments for ``pretrained`` ({name: model dir}): its grid, sizes, seeds and shard."""
  la = le.parse_args(["--data-dir", args.data_dir, "--work-dir", os.path.join(args.work_dir, "finetune"),
                      "--pos-dir", os.path.join(args.data_dir, "finetuning_data", "chunk"),
                      "--tasks", ",".join(args.tasks), "--neural-tasks", ",".join(args.tasks),
                      "--sizes", args.sst_sizes, "--pos-sizes", args.pos_sizes,
                      "--validation-size", str(args.validation_size), "--split-seed", str(args.split_seed),
                      "--pos-bucket-width", str(args.pos_bucket_width),
                      "--grid-lrs", args.grid_lrs, "--grid-examples", args.grid_examples,
                      "--random-weights-decays", args.random_weights_decays,
                      "--extend-examples", str(args.extend_examples), "--selection-seed", str(args.sweep_seed),
                      "--extra-selection-seeds", args.extra_selection_seeds,
                      "--seeds", str(args.seeds), "--first-seed", str(args.first_seed),
                      "--shard", f"{args.shard}/{args.num_shards}", "--until", "final"]
                     + [f"--pretrained={name}={path}" for name, path in pretrained.items()])
  la.model_overrides_ft = dict(args.model_overrides_ft)
  return la


def sweep_setting(args) -> selection.Setting:
  return selection.Setting(presets.TINY_FINETUNING_LR, args.sweep_ft_epochs)


def sweep_finetune(args, name: str, model_dir: str, seed: int) -> dict:
  """One fine-tune of a sweep point on all of sst's training data but the validation split, scored on it."""
  la = finetuning_args(args, {name: model_dir})  # the subsets and carving of the fine-tuning stage
  return le.trial(la, "sst", name, None, sweep_setting(args), seed, "validation")


def stage_finetune(args, lengths) -> tuple:
  """Runs label_efficiency's units dealt to this shard, again whenever another shard finished units (extensions
  and final seeds wait for their selection), until none is pending; its arguments and summary."""
  la = finetuning_args(args, {model_name(run): run["model_dir"]
                              for length in lengths for run in length["runs"].values()})
  stages = os.path.join(la.work_dir, "stages")
  count = lambda: len(os.listdir(stages)) if os.path.isdir(stages) else 0
  seen = -1
  while True:
    if count() != seen:
      seen = count()  # before the pass: a unit another shard finishes meanwhile brings another pass
      le.run(la)
      summary = le.summarize(la, le.plan(la), le.load_stages(la))
      if not summary["pending"]:
        return la, summary
      log(f"fine-tuning: waiting for {len(summary['pending'])} unit group(s) another shard runs")
    time.sleep(POLL_SECONDS)


# ---- stages 2-3 --------------------------------------------------------------------------------------------

def run_name(args, prefix: str, method: str, lr: float, steps: int) -> str:
  """E.g. ``pt_electra_lr3e-4_s3000`` (``_gen1`` with --generator-size 1, ``_temp2`` with --temperature 2): a
  finished unit is reused only for the same settings. A change of the preset itself between invocations is not
  detected: use a new --work-dir."""
  given = {"gen": args.generator_size, "temp": args.temperature} if method == "electra" else {}
  suffix = le.variant_suffix({k: f"{v:g}" for k, v in given.items() if v is not None})
  return f"{prefix}_{method}_lr{selection.learning_rate_label(lr)}_s{steps}{suffix}"


def stage_sweep(args, vocab_size) -> dict:
  """The same LR rule for both methods: the best sst validation accuracy of one fine-tune after a short run."""
  steps = {"electra": args.sweep_steps, "mlm": equal_flop_steps(args, vocab_size, args.sweep_steps)}
  chosen = {m: {"learning_rate": getattr(args, f"{m}_lr"), "rule": "given on the command line"}
            for m in PRETRAINED if getattr(args, f"{m}_lr") is not None}
  swept = [(m, lr) for m in PRETRAINED if m not in chosen for lr in args.sweep_lrs]
  # A sweep point (pre-training + its fine-tune) is one shard's. Each shard runs its own points first, then
  # collects the others' (waiting where one is not finished), so the shards work side by side.
  mine = [owns(args, PRETRAINED.index(m) * len(args.sweep_lrs) + args.sweep_lrs.index(lr)) for m, lr in swept]
  results = {}
  for k in sorted(range(len(swept)), key=lambda k: not mine[k]):
    method, lr = swept[k]
    name = run_name(args, "sweep", method, lr, steps[method])
    pre = unit(args, f"pretrain_{name}", pretrain, args, vocab_size, method, steps[method], lr, name,
               owner=mine[k])
    results[k] = pre, {seed: unit(args, f"validation_sst_{name}_{sweep_setting(args).key()}_seed{seed}",
                                  sweep_finetune, args, name, pre["model_dir"], seed, owner=mine[k])["value"]
                       for seed in args.sweep_selection_seeds}
  points = [{"method": method, "learning_rate": lr, "steps": steps[method],
             "sst_validation_accuracy": statistics.median(results[k][1].values()),
             "sst_validation_by_seed": {str(seed): v for seed, v in results[k][1].items()},
             "heldout": results[k][0]["heldout"], "loop_seconds": results[k][0]["loop_seconds"],
             "total_flops": results[k][0]["total_flops"]} for k, (method, lr) in enumerate(swept)]
  seeds = args.sweep_selection_seeds
  by = f"seed {seeds[0]}" if len(seeds) == 1 else f"the median of seeds {', '.join(map(str, seeds))}"
  for method in PRETRAINED:
    rows = [p for p in points if p["method"] == method]
    if method not in chosen:
      best = max(rows, key=lambda r: (r["sst_validation_accuracy"], -r["learning_rate"]))
      chosen[method] = {"learning_rate": best["learning_rate"],
                        "rule": f"best sst validation accuracy ({by}, {sweep_setting(args).describe()}) after "
                                f"{steps[method]} steps"}
  return {"steps": steps, "points": points, "chosen": {m: chosen[m] for m in PRETRAINED},
          "finetuning": sweep_setting(args)._asdict()}


PRIMARY_REASON = ("the reference's FLOP count is the paper's own convention and does not depend on the machine, "
                  "its load or implementation choices (e.g. sparse embedding gathers); measured wall-clock on a "
                  "shared CPU varies with other jobs, so it is reported beside it")


def finished_sweep_run(args, method: str, lr: float, steps: int):
  """The record of a finished sweep run of ``method`` at ``lr`` and ``steps`` in this work dir, or None. Its
  settings are a length's (the same ``pretrain_hparams``), so it is that length's model, not trained twice."""
  return read_json(stage_path(args.work_dir, f"pretrain_{run_name(args, 'sweep', method, lr, steps)}"))


def finetune_ready(args, vocab_size, chosen, plan, swept):
  """While another shard still pre-trains: this shard's fine-tuning units of the models that need no more
  pre-training (random weights and finished runs), dealt from the full list as the fine-tuning stage deals it,
  so no unit is dealt to two shards."""
  runs, ready = {}, {"none"}
  for p in plan:
    for m, (n, name) in p.items():
      record = swept.get(name) or read_json(stage_path(args.work_dir, f"pretrain_{name}"))
      run = record or {"name": name, "method": m, "steps": n, "model_dir": pretrain_config(
          args, vocab_size, m, n, chosen[m]["learning_rate"], name).model_dir}
      runs[model_name(run)] = run["model_dir"]
      if record is not None:
        ready.add(model_name(run))
  log(f"fine-tuning while another shard pre-trains: {', '.join(sorted(ready))}")
  le.run(finetuning_args(args, runs), ready=ready)


def stage_pretrain(args, vocab_size, chosen) -> list:
  """Both methods at every length of ``--steps``; per length its runs and how the equal-compute counts compare."""
  plan, swept = [], {}
  for steps in args.steps:
    per = {"electra": steps, "mlm": equal_flop_steps(args, vocab_size, steps)}
    plan.append({m: (per[m], run_name(args, "pt", m, chosen[m]["learning_rate"], per[m])) for m in PRETRAINED})
    for m, (n, name) in plan[-1].items():
      record = finished_sweep_run(args, m, chosen[m]["learning_rate"], n)
      if record is not None:
        swept[name] = record
        log(f"reuse the sweep's run {record['name']} as {name}")
  # ELECTRA and MLM alternate, so with two shards each takes one method: equal FLOPs, equal shares of the work
  early = (lambda: finetune_ready(args, vocab_size, chosen, plan, swept)) \
      if STAGES.index(args.until) >= STAGES.index("finetune") else None
  done = run_dealt(args, [(f"pretrain_{name}", pretrain, (args, vocab_size, m, n, chosen[m]["learning_rate"], name))
                          for p in plan for m, (n, name) in p.items() if name not in swept], while_waiting=early)
  lengths = []
  for p in plan:
    runs = {m: swept.get(name) or done[f"pretrain_{name}"] for m, (_, name) in p.items()}
    e, m = runs["electra"], runs["mlm"]
    # Seconds per step from the steady rates (tracing excluded): the MLM steps that take ELECTRA's loop time.
    wall_steps = max(1, int(round(e["steps"] * m["steady_seq_per_sec"] / e["steady_seq_per_sec"])))
    lengths.append({"steps": e["steps"], "runs": runs, "compute": {
        "primary": "flops", "why_primary": PRIMARY_REASON, "flops_equal_mlm_steps": m["steps"],
        "wallclock_equal_mlm_steps": wall_steps, "wallclock_over_flops_steps": wall_steps / m["steps"],
        "flops_ratio_electra_over_mlm_per_step": e["flops_per_step"] / m["flops_per_step"],
        "time_ratio_electra_over_mlm_per_step": m["steady_seq_per_sec"] / e["steady_seq_per_sec"]}})
  return lengths


# ---- stage 5: summary --------------------------------------------------------------------------------------

def _scores(method: dict) -> dict:
  keep = ("median", "min", "max", "dev", "chosen", "converged", "curve")
  return {k: method[k] for k in keep if k in method}


def compare(scores: dict) -> dict:
  """Exact two-sided Mann-Whitney U of every pair of methods in ``scores`` ({method: dev values})."""
  out, names = {}, list(scores)
  for i, a in enumerate(names):
    for b in names[i + 1:]:
      x, y = scores[a], scores[b]
      out[f"{a}_vs_{b}"] = {**seed_comparison.mann_whitney(x, y),
                            "median_difference": statistics.median(x) - statistics.median(y)}
  return out


def summarize(args, data, sweep, lengths, finetuning) -> dict:
  """One cell per task, size and pre-training length: the three models' dev scores (random weights are the same
  at every length), the classical baselines of that size, every pair's test; and the targets."""
  cells = []
  for row in finetuning["rows"]:
    for length in lengths:
      names = {m: model_name(run) for m, run in length["runs"].items()}
      methods = {m: _scores(row["methods"][name]) for m, name in {**names, "none": "none"}.items()}
      cells.append({"task": row["task"], "size": row["size"], "size_name": row["size_name"],
                    "steps": {m: run["steps"] for m, run in length["runs"].items()},
                    "flops": length["runs"]["electra"]["total_flops"], "baselines": row["baselines"],
                    "methods": methods, "tests": compare({m: v["dev"] for m, v in methods.items()})})
  target = {}
  for task in args.tasks:
    mine = [c for c in cells if c["task"] == task]
    longest = [c for c in mine if c["flops"] == max(x["flops"] for x in mine)]
    med = lambda c, m: c["methods"][m]["median"]
    target[task] = {"electra_gt_mlm_gt_none_at_longest": {c["size_name"]: med(c, "electra") > med(c, "mlm") >
                                                           med(c, "none") for c in longest}}
    if task == "sst":
      target[task]["electra_above_tfidf"] = {f"{c['size_name']}@{c['steps']['electra']}":
                                             med(c, "electra") > c["baselines"]["tfidf"] for c in mine}
    else:
      target[task]["every_tagger_seed_above_lookup"] = {
          f"{c['size_name']}@{c['steps']['electra']}": all(v > c["baselines"]["lookup"] for m in c["methods"].values()
                                                          for v in m["dev"]) for c in mine}
  baseline = data["heldout_unigram_baseline"]["accuracy"]
  return {"data": data, "sweep": sweep, "lengths": lengths, "cells": cells, "target": target,
          "unigram_stage": {model_name(r): {
              "heldout_masked_lm_accuracy": r["heldout"].get("masked_lm_accuracy"), "unigram_baseline": baseline,
              "ratio": r["heldout"].get("masked_lm_accuracy", 0.0) / baseline,
              "left": r["heldout"].get("masked_lm_accuracy", 0.0) >= LEFT_UNIGRAM * baseline}
              for length in lengths for m, r in length["runs"].items()},
          "args": {k: v for k, v in vars(args).items() if k not in ("sample_kwargs",)}}


def plot(summary, path):
  """Per task and size, the dev score against pre-training FLOPs (ELECTRA and MLM medians; random weights and the
  classical baseline as flat lines); and every run's held-out masked-LM accuracy against its FLOPs."""
  panels = []
  for task, size in dict.fromkeys((c["task"], c["size"]) for c in summary["cells"]):
    cells = sorted((c for c in summary["cells"] if (c["task"], c["size"]) == (task, size)), key=lambda c: c["flops"])
    xs = [c["flops"] for c in cells]
    classical = [c for c in (("tfidf",) if task == "sst" else ("lookup", "lookup_lowercase"))
                 if c in cells[0]["baselines"]]
    series = [(le.label(m), [(x, c["methods"][m]["median"]) for x, c in zip(xs, cells)])
              for m in ("electra", "mlm", "none")]
    series += [(le.label(b), [(x, cells[0]["baselines"][b]) for x in xs]) for b in classical]
    panels.append((f"{task}, {size:,} labelled: dev (medians)", "%", series,
                   {"xlabel": "pre-training FLOPs (reference count)", "logx": True,
                    "colors": {le.label(k): le.color(k) for k in ("electra", "mlm", "none", *classical)}}))
  held = []
  for length in summary["lengths"]:
    for m, run in length["runs"].items():
      hist = [h for h in run["heldout_history"] if "masked_lm_accuracy" in h]
      held.append((f"{le.label(m)} {run['steps']:,}", [(max(1, h["step"]) * run["flops_per_step"],
                                                         h["masked_lm_accuracy"]) for h in hist]))
  panels.append(("held-out masked-LM accuracy (ELECTRA: its generator)", "accuracy", held,
                 {"xlabel": "pre-training FLOPs", "logx": True,
                  "hline": (summary["data"]["heldout_unigram_baseline"]["accuracy"], "unigram baseline")}))
  reporting.plot_panels(panels, path, title="ELECTRA vs MLM-only vs random weights at equal pre-training FLOPs")


def _median_range(m: dict) -> str:
  return f"{m['median']:.1f} ({m['min']:.1f}-{m['max']:.1f})"


def markdown(summary) -> str:
  base = summary["data"]["heldout_unigram_baseline"]
  lines = [] if not summary["sweep"]["points"] else [
      f"LR sweep (sst fine-tunes per point, {selection.Setting(**summary['sweep']['finetuning']).describe()}"
      ", scored on the validation split; with several seeds the median, the seeds' values after it):", "",
      "| method | peak LR | steps | held-out MLM acc. | disc_auc_real | sst validation |", "|---|---|---|---|---|---|"]
  for p in summary["sweep"]["points"]:
    auc = p["heldout"].get("disc_auc_real")
    by_seed = list(p.get("sst_validation_by_seed", {}).values())
    seeds = f" ({' / '.join(f'{v:.1f}' for v in by_seed)})" if len(by_seed) > 1 else ""
    lines.append(f"| {p['method']} | {p['learning_rate']:g} | {p['steps']} | "
                 f"{p['heldout'].get('masked_lm_accuracy', float('nan')):.3f} | "
                 f"{'-' if auc is None else f'{auc:.3f}'} | {p['sst_validation_accuracy']:.1f}{seeds} |")
  lines += ["" if lines else "LR sweep: none run", "chosen: " + ", ".join(f"{m} {c['learning_rate']:g} ({c['rule']})"
                                       for m, c in summary["sweep"]["chosen"].items()), ""]
  lines += ["| pre-training | peak LR | steps | FLOPs (reference count) | train-loop s | seq/s | held-out MLM acc. "
            f"(unigram baseline {base['accuracy']:.3f}, '{base['token']}') | disc_auc_real | disc_recall |",
            "|---|---|---|---|---|---|---|---|---|"]
  for length in summary["lengths"]:
    for m, r in length["runs"].items():
      h = r["heldout"]
      fmt = lambda k: f"{h[k]:.3f}" if k in h else "-"  # pylint: disable=cell-var-from-loop
      u = summary["unigram_stage"][model_name(r)]
      lines.append(f"| {le.label(m)} | {r['learning_rate']:g} | {r['steps']} | {r['total_flops']:.3e} | "
                   f"{r['loop_seconds']:.0f} | {r['steady_seq_per_sec']:.1f} | {fmt('masked_lm_accuracy')} "
                   f"({u['ratio']:.1f}x) | {fmt('disc_auc_real')} | {fmt('disc_recall')} |")
  lines.append("")
  for length in summary["lengths"]:
    c = length["compute"]
    lines.append(f"- ELECTRA {length['steps']} steps: MLM {c['flops_equal_mlm_steps']} steps by FLOPs (primary), "
                 f"{c['wallclock_equal_mlm_steps']} by measured wall-clock "
                 f"({100 * (c['wallclock_over_flops_steps'] - 1):+.0f}%)")
  for task, size in dict.fromkeys((c["task"], c["size"]) for c in summary["cells"]):
    cells = [c for c in summary["cells"] if (c["task"], c["size"]) == (task, size)]
    b = cells[0]["baselines"]
    classical = (f"majority {b['majority']:.1f}, TF-IDF + LR {b['tfidf']:.1f} (C {b['tfidf_C']:g})" if task == "sst"
                 else f"most-frequent tag {b['lookup']:.1f}, on lowercased words "
                      f"{b.get('lookup_lowercase', float('nan')):.1f}")
    lines += ["", f"{task}, {size:,} labelled examples, dev {'accuracy' if task == 'sst' else 'F1 (per-word accuracy)'}"
              f" (median (range) of {len(cells[0]['methods']['none']['dev'])} seeds; {classical}):", "",
              "| ELECTRA / MLM steps | FLOPs | ELECTRA | MLM only | random weights | E vs M p | E vs R p | M vs R p |",
              "|---|---|---|---|---|---|---|---|"]
    cells.sort(key=lambda c: c["flops"])
    for c in cells:
      t = c["tests"]
      lines.append(f"| {c['steps']['electra']} / {c['steps']['mlm']} | {c['flops']:.2e} | "
                   + " | ".join(_median_range(c["methods"][m]) for m in ("electra", "mlm", "none"))
                   + f" | {t['electra_vs_mlm']['p']:.3f} | {t['electra_vs_none']['p']:.3f} | "
                     f"{t['mlm_vs_none']['p']:.3f} |")
    lines.append("")
    for i, c in enumerate(cells):
      for m in ("electra", "mlm") + (("none",) if i == 0 else ()):  # random weights: the same at every length
        v = c["methods"][m]
        conv = {True: "converged", False: "not converged", None: "convergence not shown"}[v["converged"]]
        who = le.label(m) + ("" if m == "none" else f", {c['steps'][m]:,} steps")
        lines.append(f"- {who}: {selection.Setting(**v['chosen']).describe()} ({conv}; validation "
                     f"{', '.join(f'{e:g} ep {x:.1f}' for e, x in v['curve'])})")
  lines.append("")
  for task, t in summary["target"].items():
    lines.append(f"{task}: " + "; ".join(f"{k.replace('_', ' ')}: " + ", ".join(
        f"{where} {'yes' if ok else 'no'}" for where, ok in v.items()) for k, v in t.items()))
  return "\n".join(lines) + "\n"


# ---- main --------------------------------------------------------------------------------------------------

STAGES = ("data", "sweep", "pretrain", "finetune", "summary")


def parse_args(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--work-dir", default=os.path.join(REPO, "runs", "paper_claim"))
  p.add_argument("--quick", action="store_true", help="smoke version: tiny data, model, steps; 2 seeds")
  p.add_argument("--until", choices=STAGES, default="summary", help="stop after this stage")
  p.add_argument("--reuse-sample", help="an existing sample data directory to link in (read only) instead of "
                                        "building one")
  p.add_argument("--pos-dir", default=default_pos_dir(), help="oanc_pos (train.txt, dev.txt)")
  p.add_argument("--pos-train-sentences", type=int, default=3000)
  p.add_argument("--pos-dev-sentences", type=int, default=0, help="0 = all (2,000)")
  p.add_argument("--steps", default="600,1200,2400",
                 help="ELECTRA pre-training lengths (comma-separated); MLM gets equal FLOPs at each")
  p.add_argument("--sweep-steps", type=int, default=600)
  p.add_argument("--sweep-lrs", default="1e-4,3e-4,1e-3")
  p.add_argument("--sweep-seed", type=int, default=0, help="seed of the sweep's and the grid's fine-tunes")
  p.add_argument("--sweep-ft-epochs", type=float, default=2.0, help="the sweep's fine-tuning epochs")
  p.add_argument("--electra-lr", type=float, help="skip ELECTRA's sweep and use this peak LR")
  p.add_argument("--mlm-lr", type=float, help="skip MLM's sweep and use this peak LR")
  p.add_argument("--temperature", type=float, help="ELECTRA's sampling temperature (default: the preset's)")
  p.add_argument("--generator-size", type=float,
                 help="ELECTRA's generator width as a fraction of the discriminator's (generator_hidden_size; "
                      "default: the preset's). MLM-only's equal-FLOP step count follows")
  p.add_argument("--evals-per-run", type=int, default=6, help="held-out evaluations during each pre-training")
  p.add_argument("--eval-batches", type=int, default=20)
  p.add_argument("--final-eval-batches", type=int, default=40)
  p.add_argument("--tasks", default="sst,pos")
  p.add_argument("--sst-sizes", default="1000,all", help="labelled sst sentences per cell")
  p.add_argument("--pos-sizes", default="all", help="labelled POS sentences per cell")
  p.add_argument("--pos-bucket-width", type=int, default=16,
                 help="POS fine-tunes batch sentences of similar length, cut to multiples of this many tokens "
                      "(length_bucket_width; 0: every batch 128 tokens wide)")
  p.add_argument("--validation-size", type=int, default=500, help="training examples carved off for selection")
  p.add_argument("--split-seed", type=int, default=0)
  p.add_argument("--grid-lrs", default="3e-4,1e-3")
  p.add_argument("--grid-examples", default="5000,10000,20000", help="fine-tuning budgets (examples seen)")
  p.add_argument("--random-weights-decays", default="1",
                 help="layer-wise decays random weights try besides the preset's 0.8 (1: none; empty: 0.8 only)")
  p.add_argument("--extend-examples", type=int, default=80000)
  p.add_argument("--extra-selection-seeds", default="",
                 help="more fine-tunes per sweep point and grid point with these seeds (e.g. 6,7); the median "
                      "chooses")
  p.add_argument("--seeds", type=int, default=5)
  p.add_argument("--first-seed", type=int, default=1)
  p.add_argument("--shard", default="0/1", help="K/N: this process runs every N-th unit of each stage, starting "
                                                 "at K, waits for the others', and (K = 0) writes the summary; start "
                                                 "N processes on one --work-dir to use N cores for small models")
  args = p.parse_args(argv)
  try:
    args.shard, args.num_shards = (int(x) for x in args.shard.split("/"))
    if not 0 <= args.shard < args.num_shards:
      raise ValueError
  except ValueError:
    p.error(f"--shard {args.shard!r}: give K/N with 0 <= K < N, e.g. 1/2")
  try:
    args.steps = sorted({int(x) for x in args.steps.split(",") if x.strip()})
    if not args.steps or min(args.steps) < 1:
      raise ValueError
  except ValueError:
    p.error(f"--steps {args.steps!r}: give positive step counts, e.g. 600,1200,2400")
  if args.generator_size is not None and not 0 < args.generator_size < math.inf:
    p.error(f"--generator-size {args.generator_size:g}: give the generator's width as a fraction of the "
            "discriminator's, e.g. 0.5 or 1")
  args.sweep_lrs = [float(x) for x in args.sweep_lrs.split(",") if x.strip()]
  args.tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
  if not args.tasks or set(args.tasks) - set(TASKS):
    p.error(f"--tasks: choose from {', '.join(TASKS)}")
  args.sample_kwargs, args.model_overrides, args.model_overrides_ft = {}, {}, {}
  if args.quick:  # every stage on a model and data small enough for CI
    args.sample_kwargs = dict(max_reviews=200, max_task_train=200, vocab_sentences=2000)
    small = {"model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 1,
                                        "intermediate_size": 64}, "embedding_size": 32, "use_xla": False}
    args.model_overrides = {**small, "train_batch_size": 8, "eval_batch_size": 8}
    args.model_overrides_ft = {**small, "iterations_per_loop": 10, "max_seq_length": 32}
    args.pos_train_sentences, args.pos_dev_sentences = 120, 60
    args.steps, args.sweep_steps, args.sweep_lrs = [6, 12], 6, [3e-4, 1e-3]
    args.evals_per_run, args.eval_batches, args.final_eval_batches = 2, 2, 3
    args.seeds, args.sweep_ft_epochs, args.validation_size = 2, 1.0, 40
    args.sst_sizes, args.pos_sizes, args.grid_lrs, args.grid_examples = "all", "all", "1e-3", "80,160"
    args.extend_examples = 0
  args.work_dir = os.path.abspath(args.work_dir)
  args.data_dir = os.path.join(args.work_dir, "data")
  # checked here, not hours later when the fine-tuning stage parses the seeds it is passed
  args.sweep_selection_seeds = [args.sweep_seed] + le.parse_extra_selection_seeds(
      p, args.extra_selection_seeds, args.sweep_seed, "--sweep-seed", args.first_seed, args.seeds)
  return args


def _main(args):
  logging.basicConfig(level=logging.INFO, format="%(message)s")  # the library's notes, e.g. weights loaded
  last = STAGES.index(args.until)
  started = time.time()
  if args.num_shards > 1:  # N processes share the cores; one thread pool each (tiny models scale poorly in one)
    threads = max(1, (os.cpu_count() or 1) // args.num_shards)
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
  data = stage_data(args)
  vocab_size = data["vocab_size"]
  log(f"vocab {vocab_size}; POS train/dev sentences {data['pos']['train']['sentences']}/"
      f"{data['pos']['dev']['sentences']}; held-out unigram baseline "
      f"{data['heldout_unigram_baseline']['accuracy']:.3f}")
  if last < 1:
    return
  sweep = stage_sweep(args, vocab_size)
  log("chosen peak LRs: " + ", ".join(f"{m} {c['learning_rate']:g}" for m, c in sweep["chosen"].items()))
  if last < 2:
    return
  lengths = stage_pretrain(args, vocab_size, sweep["chosen"])
  for length in lengths:
    c = length["compute"]
    log(f"equal compute at {length['steps']} ELECTRA steps: MLM {c['flops_equal_mlm_steps']} steps by FLOPs "
        f"(primary), {c['wallclock_equal_mlm_steps']} by measured wall-clock")
  if last < 3:
    return
  la, finetuning = stage_finetune(args, lengths)
  if last < 4 or args.shard != 0:
    return
  le.report(la)
  summary = summarize(args, data, sweep, lengths, finetuning)
  summary["plot"] = os.path.join(args.work_dir, "plots", "paper_claim.png")
  plot(summary, summary["plot"])
  summary["script_seconds_this_invocation"] = round(time.time() - started, 1)
  write_json(os.path.join(args.work_dir, "summary.json"), summary)
  table = markdown(summary)
  atomic_write(os.path.join(args.work_dir, "summary.md"), table)
  print(table, end="", flush=True)
  log(f"summary: {os.path.join(args.work_dir, 'summary.json')}, {summary['plot']}")


def main(argv=None) -> int:
  """Runs the experiment; a user-fixable error (``ElectraError``) is one ``error:`` line and exit status 2."""
  args = parse_args(argv)
  return run_cli(lambda: _main(args))


if __name__ == "__main__":
  sys.exit(main())
