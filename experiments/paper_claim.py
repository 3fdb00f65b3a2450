"""The paper's claim at small scale: ELECTRA vs MLM-only vs no pre-training, same network, equal compute.

    PY=".venv/bin/python"
    nice -n 10 $PY experiments/paper_claim.py --work-dir runs/paper_claim          # the full experiment
    $PY experiments/paper_claim.py --work-dir /tmp/paper_claim_quick --quick       # smoke version (CI)

Every unit of work (a pre-training run, a held-out evaluation, one fine-tuning seed) writes one JSON file
under ``<work>/stages/`` when it finishes and is skipped when that file exists; an interrupted pre-training
resumes from its last checkpoint. Rerunning the same command therefore continues the experiment, and
``--until STAGE`` stops after a stage. Stages:

  1. data      the sample setup (``sample_data.ensure_sample_setup``: IMDB corpus, 8k WordPiece vocab,
               TFRecords with a 2% held-out split, Rotten Tomatoes polarity as ``sst``), plus POS tagging:
               ``oanc_pos`` (``$ELECTRA_TEST_DATA/tagging/oanc_pos``, default ``../shared/data``) cut to
               ``--pos-train-sentences`` (a seeded random subset) and ``--pos-dev-sentences`` (0 = all 2,000),
               written as the ``chunk``-layout task and counted back through ``tagging.read_conll``; the
               held-out unigram baseline (share of the most frequent maskable token in the held-out split).
  2. sweep     per method, the same rule: peak LR in ``--sweep-lrs`` at a short length (ELECTRA
               ``--sweep-steps``, MLM the FLOP-equal count), warmup and bias correction from the tiny
               preset's short-run recipe; each point fine-tuned once on sst (seed ``--sweep-seed``, not one
               of the main seeds); the best sst dev accuracy picks the method's LR (ties: the lower LR).
  3. pretrain  ELECTRA for ``--steps``, MLM for the steps of equal training FLOPs (the reference's
               flops_computation.py count: primary), each at its chosen LR; final held-out evaluation
               (``--final-eval-batches``). The train-loop seconds of both (from the trainer's sequences/s log)
               give the wall-clock-equal MLM step count; ``--wallclock-mlm`` also trains that MLM run.
  4. finetune  sst and POS, seeds ``--first-seed`` .. + ``--seeds``, from each pre-trained model and from random
               weights (``none``), identical fine-tuning hparams per task for every method.
  5. summary   medians, ranges, exact two-sided Mann-Whitney U per task and pair; summary.json, summary.md
               and plots/paper_claim.png under ``<work>``.

``--shard K/N`` splits the units between N processes started on the same ``--work-dir`` (round-robin per stage;
each waits for the units it does not own, shard 0 writes the summary), one thread pool per process: on a
2-core machine two shards finish the tiny model's work sooner than one process using both cores. Concurrent
shards share the machine, so their wall-clock figures are those of a loaded machine, for both methods alike.

``--reinit-embeddings`` reruns stages 4-5 with the pre-trained models' embedding layer left fresh (the main
job's fine-tuning; the same pre-trained models, random-weights trials shared), written as ``summary_reinit.*``.

The model is the tiny preset (``presets.sample_pretraining_hparams``), recipe included, read at run time, so the
experiment follows the preset; ``--temperature`` overrides ELECTRA's sampling temperature.
"""

import argparse
import json
import logging
import os
import random
import shutil
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run from a checkout

# pylint: disable=wrong-import-position
import numpy as np
import tensorflow as tf

from electra_tf import presets, reporting, sample_data
from electra_tf.configs import FinetuningConfig, PretrainingConfig
from electra_tf.finetuning import run_finetuning
from electra_tf.finetuning import tagging
from electra_tf.pretrain_data import dataset as pretrain_dataset
from electra_tf.pretrain_data import inputs as pretrain_inputs
from electra_tf.pretraining import evaluation, trainer

PRETRAINED = ("electra", "mlm")
# Downstream tasks: our name -> (the library's task, the metric reported, fine-tuning max_seq_length)
TASKS = {"sst": ("sst", "accuracy", 64), "pos": ("chunk", "f1", 128)}
LABELS = {"electra": "ELECTRA", "mlm": "MLM only (FLOP-equal)", "mlm_wall": "MLM only (wall-clock-equal)",
          "none": "no pre-training"}
COLORS = {"electra": "tab:blue", "mlm": "tab:orange", "mlm_wall": "tab:red", "none": "tab:gray"}
# "Left the unigram stage": held-out masked-LM accuracy at least this multiple of the unigram baseline.
LEFT_UNIGRAM = 2.0
HELDOUT_KEYS = ("masked_lm_accuracy", "masked_lm_loss", "disc_auc", "disc_auc_real", "disc_recall",
                "disc_precision", "disc_accuracy", "disc_loss")


def log(msg: str):
  print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- FLOPs as google-research/electra's flops_computation.py counts them ------------------------------------
# A matmul is 2mn, backward = forward, embedding lookups are dense (one-hot matmuls), the MLM softmax is paid
# on 15.625% of the positions, and the small per-activation ops use the script's constants. Written from its
# description against our ModelConfig; tests check it against the script's published totals.
DROPOUT, LAYER_NORM, ACTIVATION, SOFTMAX, OUTPUT_FRAC = 4, 5, 8, 5, 0.15625


def _block_flops(h, i, heads, s):
  attention = (6 * h * h + 3 * h + 2 * h * s + (SOFTMAX + DROPOUT + 1) * s * heads + 2 * h * s + 2 * h * h + h
               + DROPOUT * h + h + LAYER_NORM)  # the script counts this LayerNorm once, not per unit
  ffn = 2 * h * i + ACTIVATION * i + i + 2 * h * i + h + DROPOUT * h + h + LAYER_NORM * h
  return (attention + ffn) * s


def _input_embedding_flops(h, e, v, s):
  f = 2 * e * v + 2 * e * (s + 2) + 2 * e + LAYER_NORM * e + DROPOUT * e
  if e != h:
    f += 2 * h * e + h
  return f * s


def _mlm_head_flops(h, e, v, s):
  return OUTPUT_FRAC * (2 * e * v + 2 * h * e + e + ACTIVATION * e + LAYER_NORM * e + SOFTMAX * v + 2 * v) * s


def _rtd_head_flops(h, s):
  return (2 * h * h + h + ACTIVATION * h + 2 * h) * s


def train_flops_per_sequence(c, s: int, discriminator: bool) -> float:
  """Forward + backward FLOPs of one sequence of length ``s`` for a ``ModelConfig``-like ``c``."""
  h, e, v = c.hidden_size, c.embedding_size or c.hidden_size, c.vocab_size
  head = _rtd_head_flops(h, s) if discriminator else _mlm_head_flops(h, e, v, s)
  return 2 * (c.num_hidden_layers * _block_flops(h, c.intermediate_size, c.num_attention_heads, s)
              + _input_embedding_flops(h, e, v, s) + head)


def flops_per_step(cfg: PretrainingConfig) -> float:
  """Training FLOPs of one step of ``cfg``: discriminator + generator for ELECTRA, the one model for MLM."""
  s, disc = cfg.max_seq_length, cfg.discriminator_config()
  if not cfg.electra_objective:
    return cfg.train_batch_size * train_flops_per_sequence(disc, s, False)
  return cfg.train_batch_size * (train_flops_per_sequence(disc, s, True) +
                                 train_flops_per_sequence(cfg.generator_config(), s, False))


# ---- small helpers -----------------------------------------------------------------------------------------

def read_json(path, default=None):
  try:
    with open(path, encoding="utf-8") as f:
      return json.load(f)
  except (OSError, ValueError):
    return default


def write_json(path, obj):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  tmp = f"{path}.tmp"
  with open(tmp, "w", encoding="utf-8") as f:
    json.dump(obj, f, indent=2, sort_keys=True)
    f.write("\n")
  os.replace(tmp, path)


def owns(args, index: int) -> bool:
  """Whether this process (``--shard K/N``) runs the ``index``-th unit of a stage: units are dealt round-robin."""
  return index % args.num_shards == args.shard


def run_dealt(args, units) -> dict:
  """Runs the ``(name, work, work_args)`` units this shard owns, then waits for the others'; results by name."""
  results = {}
  for owned_pass in (True, False):
    for i, (name, work, work_args) in enumerate(units):
      if owns(args, i) == owned_pass:
        results[name] = unit(args, name, work, *work_args, owner=owned_pass)
  return results


def unit(args, name: str, work, *work_args, owner: bool = True):
  """Runs ``work(*work_args)`` once: its result is kept in ``<work>/stages/<name>.json`` and reused afterwards.
  A unit another shard owns is waited for (its file polled) instead."""
  path = os.path.join(args.work_dir, "stages", f"{name}.json")
  done = read_json(path)
  if done is not None:
    log(f"skip (done): {name}")
    return done
  if not owner:
    log(f"wait (another shard runs it): {name}")
    while (done := read_json(path)) is None:
      time.sleep(10)
    return done
  log(f"run: {name}")
  start = time.time()
  result = work(*work_args)
  result["unit_seconds"] = round(time.time() - start, 1)
  write_json(path, result)
  tf.keras.backend.clear_session()  # many models are built in this one process
  return result


def describe(values) -> dict:
  values = [float(v) for v in values]
  return {"n": len(values), "values": values, "median": statistics.median(values), "min": min(values),
          "max": max(values), "mean": statistics.fmean(values),
          "std": statistics.stdev(values) if len(values) > 1 else 0.0}


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
  os.makedirs(out, exist_ok=True)
  counts = {}
  for split, n in (("train", args.pos_train_sentences), ("dev", args.pos_dev_sentences)):
    with open(os.path.join(src, f"{split}.txt"), encoding="utf-8") as f:
      blocks = [b.strip("\n") for b in f.read().split("\n\n") if b.strip()]
    if n and n < len(blocks):
      keep = sorted(random.Random(0).sample(range(len(blocks)), n))  # the file runs by document: sample
      blocks = [blocks[i] for i in keep]
    tmp = os.path.join(out, f".{split}.txt.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
      f.write("\n\n".join(blocks) + "\n")
    os.replace(tmp, os.path.join(out, f"{split}.txt"))
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
  files = os.path.join(data_dir, "pretrain_tfrecords", pretrain_inputs.HELDOUT_GLOB)
  counts = np.zeros(len(vocab), np.int64)
  spec = pretrain_dataset.feature_spec(max_seq_length)
  records = tf.data.TFRecordDataset(pretrain_dataset.list_files(files)).map(
      lambda r: tf.io.parse_single_example(r, spec)).batch(256)  # every record, the last batch too
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
  result = trainer.run(cfg, progress=False)
  if result.status != "finished":
    raise SystemExit(f"pre-training {name} stopped ({result.status}); rerun the same command to resume")
  eval_cfg = pretrain_config(args, vocab_size, method, steps, lr, name, do_train=False, do_eval=True,
                             num_eval_steps=args.final_eval_batches)
  metrics = trainer.run(eval_cfg, progress=False)
  rates = reporting.read_scalars(os.path.join(cfg.model_dir, "train")).get("sequences_per_sec", [])
  return {"method": method, "name": name, "model_dir": cfg.model_dir, "steps": steps,
          "learning_rate": cfg.learning_rate, "num_warmup_steps": cfg.num_warmup_steps,
          "adam_bias_correction": cfg.adam_bias_correction, "temperature": cfg.temperature,
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


# ---- fine-tuning -------------------------------------------------------------------------------------------

def finetune_hparams(args, vocab_size: int, task: str) -> dict:
  """The tiny preset's sample fine-tuning (LR 3e-4, layer-wise decay 0.8, batch 32), same for every method."""
  lib_task, _, max_len = TASKS[task]
  hp = presets.sample_finetuning_hparams(vocab_size)
  hp.update(task_names=[lib_task], max_seq_length=min(max_len, args.ft_max_seq_length or max_len),
            num_train_epochs=args.ft_epochs, keep_all_models=False)
  hp.update(args.model_overrides_ft)
  return hp


def finetune(args, vocab_size, task, method, init_checkpoint, seed, name, reinit_embeddings=False) -> dict:
  lib_task, metric, _ = TASKS[task]
  hp = {**finetune_hparams(args, vocab_size, task), "reinit_embeddings": reinit_embeddings}
  cfg = FinetuningConfig.create(name, args.data_dir, **hp, init_checkpoint=init_checkpoint, seed=seed,
                                num_trials=1)
  start = time.time()
  results = run_finetuning(cfg, progress=False)[-1]
  seconds = time.time() - start
  shutil.rmtree(cfg.model_dir, ignore_errors=True)  # results are kept in the stage file
  return {"task": task, "method": method, "seed": seed, "metric": metric,
          "value": float(results[lib_task][metric]), "all": {k: float(v) for k, v in results[lib_task].items()},
          "seconds": round(seconds, 1), "init_checkpoint": init_checkpoint, "reinit_embeddings": reinit_embeddings}


# ---- stages 2-4 --------------------------------------------------------------------------------------------

def run_name(args, prefix: str, method: str, lr: float, steps: int) -> str:
  """E.g. ``pt_electra_lr3e-4_s3000`` (``_temp2`` with --temperature): a finished unit is reused only for the
  same settings. A change of the preset itself between invocations is not detected: use a new --work-dir."""
  mantissa, exponent = f"{lr:.0e}".split("e")
  temp = f"_temp{args.temperature:g}" if method == "electra" and args.temperature is not None else ""
  return f"{prefix}_{method}_lr{mantissa}e{int(exponent)}_s{steps}{temp}"


def stage_sweep(args, vocab_size) -> dict:
  """The same LR rule for both methods: best sst dev accuracy of one fine-tune after a short run."""
  steps = {"electra": args.sweep_steps, "mlm": equal_flop_steps(args, vocab_size, args.sweep_steps)}
  chosen, points = {}, []
  for method in PRETRAINED:
    given = getattr(args, f"{method}_lr")
    if given is not None:
      chosen[method] = {"learning_rate": given, "rule": "given on the command line"}
      continue
    rows = []
    for i, lr in enumerate(args.sweep_lrs):  # a sweep point (pre-training + its fine-tune) is one shard's
      name = run_name(args, "sweep", method, lr, steps[method])
      mine = owns(args, i + (len(args.sweep_lrs) if method == "mlm" else 0))
      pre = unit(args, f"pretrain_{name}", pretrain, args, vocab_size, method, steps[method], lr, name, owner=mine)
      ft = unit(args, f"finetune_sst_{name}_seed{args.sweep_seed}", finetune, args, vocab_size, "sst", method,
                pre["model_dir"], args.sweep_seed, f"ft_{name}", owner=mine)
      rows.append({"method": method, "learning_rate": lr, "steps": steps[method], "sst_accuracy": ft["value"],
                   "heldout": pre["heldout"], "loop_seconds": pre["loop_seconds"],
                   "total_flops": pre["total_flops"]})
    best = max(rows, key=lambda r: (r["sst_accuracy"], -r["learning_rate"]))
    chosen[method] = {"learning_rate": best["learning_rate"],
                      "rule": f"best sst dev accuracy (seed {args.sweep_seed}) after {steps[method]} steps"}
    points += rows
  return {"steps": steps, "points": points, "chosen": chosen}


PRIMARY_REASON = ("the reference's FLOP count is the paper's own convention and does not depend on the machine, "
                  "its load or implementation choices (e.g. sparse embedding gathers); measured wall-clock on a "
                  "shared CPU varies with other jobs, so it is reported beside it")


def stage_pretrain(args, vocab_size, chosen) -> dict:
  steps = {"electra": args.steps, "mlm": equal_flop_steps(args, vocab_size, args.steps)}
  names = {m: run_name(args, "pt", m, chosen[m]["learning_rate"], steps[m]) for m in PRETRAINED}
  done = run_dealt(args, [(f"pretrain_{names[m]}", pretrain,
                           (args, vocab_size, m, steps[m], chosen[m]["learning_rate"], names[m])) for m in PRETRAINED])
  runs = {m: done[f"pretrain_{names[m]}"] for m in PRETRAINED}  # one order in every shard: it orders stage 4
  e, m = runs["electra"], runs["mlm"]
  # Seconds per step from the steady rates (tracing excluded): the MLM steps that take ELECTRA's loop time.
  wall_steps = max(1, int(round(args.steps * m["steady_seq_per_sec"] / e["steady_seq_per_sec"])))
  compute = {"primary": "flops", "why_primary": PRIMARY_REASON, "flops_equal_mlm_steps": steps["mlm"],
             "wallclock_equal_mlm_steps": wall_steps, "wallclock_over_flops_steps": wall_steps / steps["mlm"],
             "flops_ratio_electra_over_mlm_per_step": e["flops_per_step"] / m["flops_per_step"],
             "time_ratio_electra_over_mlm_per_step": m["steady_seq_per_sec"] / e["steady_seq_per_sec"]}
  if args.wallclock_mlm:
    lr = chosen["mlm"]["learning_rate"]
    name = run_name(args, "pt", "mlm", lr, wall_steps)
    runs["mlm_wall"] = unit(args, f"pretrain_{name}", pretrain, args, vocab_size, "mlm", wall_steps, lr, name,
                            owner=owns(args, 0))
  return {"runs": runs, "compute": compute}


def stage_finetune(args, vocab_size, runs) -> dict:
  methods = list(runs) + ["none"]
  todo = []
  for seed in range(args.first_seed, args.first_seed + args.seeds):  # seeds outer: partial results balanced
    for task in args.tasks:
      for method in methods:
        init = runs[method]["model_dir"] if method in runs else "none"
        source = runs[method]["name"] if method in runs else "none"
        reinit = args.reinit_embeddings and method in runs  # random weights are the same either way
        todo.append((task, method, f"finetune_{task}_{source}_seed{seed}{'_reinit' if reinit else ''}",
                     (args, vocab_size, task, method, init, seed, f"ft_{task}_{method}_seed{seed}", reinit)))
  results = run_dealt(args, [(name, finetune, work_args) for _, _, name, work_args in todo])
  trials = {task: {m: [] for m in methods} for task in args.tasks}
  for task, method, name, _ in todo:
    trials[task][method].append(results[name])
  return trials


# ---- stage 5: summary --------------------------------------------------------------------------------------

def compare(trials) -> dict:
  """Exact two-sided Mann-Whitney U of every pair of methods on one task (U of the first method)."""
  from electra_tf import seed_comparison  # pylint: disable=import-outside-toplevel
  out = {}
  methods = list(trials)
  for i, a in enumerate(methods):
    for b in methods[i + 1:]:
      x, y = [t["value"] for t in trials[a]], [t["value"] for t in trials[b]]
      out[f"{a}_vs_{b}"] = {**seed_comparison.mann_whitney(x, y),
                            "median_difference": statistics.median(x) - statistics.median(y)}
  return out


def summarize(args, data, sweep, pre, trials) -> dict:
  finetuning = {task: {m: {**describe([t["value"] for t in ts]), "metric": TASKS[task][1],
                           "seeds": [t["seed"] for t in ts],
                           "seconds_per_trial": statistics.fmean(t["seconds"] for t in ts)}
                       for m, ts in by_method.items()}
                for task, by_method in trials.items()}
  tests = {task: compare(by_method) for task, by_method in trials.items()}
  target = {}
  for task, f in finetuning.items():
    med = {m: f[m]["median"] for m in f}
    target[task] = {"order_by_median": sorted(med, key=med.get, reverse=True),
                    "electra_gt_mlm_gt_none": med["electra"] > med["mlm"] > med["none"],
                    "significant_at_0.05": {k: v["p"] < 0.05 for k, v in tests[task].items()}}
  baseline = data["heldout_unigram_baseline"]["accuracy"]
  return {"data": data, "sweep": sweep, "pretraining": pre["runs"], "compute": pre["compute"],
          "unigram_stage": {m: {"heldout_masked_lm_accuracy": r["heldout"].get("masked_lm_accuracy"),
                                "unigram_baseline": baseline,
                                "ratio": r["heldout"].get("masked_lm_accuracy", 0.0) / baseline,
                                "left": r["heldout"].get("masked_lm_accuracy", 0.0) >= LEFT_UNIGRAM * baseline}
                            for m, r in pre["runs"].items()},
          "finetuning": finetuning, "mann_whitney": tests, "target": target,
          "finetune_hparams": {task: finetune_hparams(args, data["vocab_size"], task) for task in args.tasks},
          "args": {k: v for k, v in vars(args).items() if k not in ("sample_kwargs",)}}


def plot(summary, path):
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  tasks = list(summary["finetuning"])
  fig, axes = plt.subplots(1, len(tasks) + 2, figsize=(4.2 * (len(tasks) + 2), 3.8))
  for ax, task in zip(axes, tasks):
    f = summary["finetuning"][task]
    methods = list(f)
    data = [f[m]["values"] for m in methods]
    ax.boxplot(data, widths=0.5, showfliers=False)
    for i, (m, vals) in enumerate(zip(methods, data), start=1):
      ax.scatter([i + (j - (len(vals) - 1) / 2) * 0.05 for j in range(len(vals))], vals, color=COLORS[m],
                 s=16, zorder=3)
    ax.set_xticks(range(1, len(methods) + 1), [LABELS[m].split(" (")[0] + ("\n(wall)" if m == "mlm_wall" else "")
                                               for m in methods], fontsize=8)
    ax.set_ylabel(f"dev {f[methods[0]]['metric']}")
    ax.set_title(f"{task}: {f[methods[0]]['n']} seeds per method", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
  ax_mlm, ax_disc = axes[len(tasks)], axes[len(tasks) + 1]
  for m, run in summary["pretraining"].items():
    hist = [h for h in run["heldout_history"] if "masked_lm_accuracy" in h]
    ax_mlm.plot([h["step"] * run["flops_per_step"] for h in hist], [h["masked_lm_accuracy"] for h in hist], "o-",
                color=COLORS[m], ms=3, label=f"{LABELS[m]}{' (its generator)' if m == 'electra' else ''}")
    if m == "electra":
      auc = [h for h in run["heldout_history"] if "disc_auc_real" in h]
      ax_disc.plot([h["step"] for h in auc], [h["disc_auc_real"] for h in auc], "o-", color=COLORS[m], ms=3,
                   label="disc_auc_real")
      ax_disc.plot([h["step"] for h in auc], [h.get("disc_recall", float("nan")) for h in auc], "s:",
                   color=COLORS[m], ms=3, label="disc_recall")
  ax_mlm.axhline(summary["data"]["heldout_unigram_baseline"]["accuracy"], color="k", ls="--", lw=1,
                 label="unigram baseline")
  ax_mlm.set_xlabel("pre-training FLOPs (reference count)")
  ax_mlm.set_ylabel("held-out masked-LM accuracy")
  ax_mlm.legend(fontsize=7)
  ax_mlm.grid(alpha=0.3)
  ax_disc.set_xlabel("ELECTRA step")
  ax_disc.set_title("ELECTRA discriminator, held-out", fontsize=9)
  ax_disc.legend(fontsize=7)
  ax_disc.grid(alpha=0.3)
  fig.tight_layout()
  tmp = path + ".tmp.png"
  fig.savefig(tmp, dpi=100)
  plt.close(fig)
  os.replace(tmp, path)


def markdown(summary) -> str:
  base = summary["data"]["heldout_unigram_baseline"]
  lines = ["LR sweep (one sst fine-tune per point):", "",
           "| method | peak LR | steps | held-out MLM acc. | disc_auc_real | sst dev |", "|---|---|---|---|---|---|"]
  for p in summary["sweep"]["points"]:
    auc = p["heldout"].get("disc_auc_real")
    lines.append(f"| {p['method']} | {p['learning_rate']:g} | {p['steps']} | "
                 f"{p['heldout'].get('masked_lm_accuracy', float('nan')):.3f} | "
                 f"{'-' if auc is None else f'{auc:.3f}'} | {p['sst_accuracy']:.2f} |")
  lines += ["", "chosen: " + ", ".join(f"{m} {c['learning_rate']:g} ({c['rule']})"
                                       for m, c in summary["sweep"]["chosen"].items()), ""]
  lines += ["| pre-training | peak LR | steps | FLOPs (reference count) | train-loop s | seq/s | held-out MLM acc. "
            f"(unigram baseline {base['accuracy']:.3f}, '{base['token']}') | disc_auc_real | disc_recall |",
            "|---|---|---|---|---|---|---|---|---|"]
  for m, r in summary["pretraining"].items():
    h = r["heldout"]
    fmt = lambda k: f"{h[k]:.3f}" if k in h else "-"  # pylint: disable=cell-var-from-loop
    lines.append(f"| {LABELS[m]} | {r['learning_rate']:g} | {r['steps']} | {r['total_flops']:.3e} | "
                 f"{r['loop_seconds']:.0f} | {r['steady_seq_per_sec']:.1f} | {fmt('masked_lm_accuracy')} | "
                 f"{fmt('disc_auc_real')} | {fmt('disc_recall')} |")
  c = summary["compute"]
  lines += ["", "left the unigram stage (held-out MLM accuracy >= "
            f"{LEFT_UNIGRAM:g}x the baseline): " + ", ".join(f"{m} {'yes' if u['left'] else 'no'} ({u['ratio']:.1f}x)"
                                                           for m, u in summary["unigram_stage"].items())]
  lines += ["", f"equal compute: FLOPs (primary) gives MLM {c['flops_equal_mlm_steps']} steps; measured wall-clock "
            f"would give {c['wallclock_equal_mlm_steps']} ({100 * (c['wallclock_over_flops_steps'] - 1):+.0f}%); "
            f"per step ELECTRA/MLM = {c['flops_ratio_electra_over_mlm_per_step']:.2f}x FLOPs, "
            f"{c['time_ratio_electra_over_mlm_per_step']:.2f}x time", ""]
  lines += [("fine-tuning of the pre-trained models: encoder layers only, a fresh embedding layer (reinit_embeddings)"
             if summary["args"].get("reinit_embeddings") else "fine-tuning: every weight loaded (the reference)"), ""]
  lines += ["| task | method | n | median | range | std | per seed |", "|---|---|---|---|---|---|---|"]
  for task, f in summary["finetuning"].items():
    for m, s in f.items():
      per = ", ".join(f"{seed}: {v:.1f}" for seed, v in zip(s["seeds"], s["values"]))
      lines.append(f"| {task} ({s['metric']}) | {LABELS[m]} | {s['n']} | {s['median']:.2f} | "
                   f"{s['min']:.2f}-{s['max']:.2f} | {s['std']:.2f} | {per} |")
  lines += ["", "| task | pair | U | p (exact, two-sided) | median difference |", "|---|---|---|---|---|"]
  for task, pairs in summary["mann_whitney"].items():
    for pair, t in pairs.items():
      lines.append(f"| {task} | {pair.replace('_vs_', ' vs ')} | {t['U']:g}/{t['n_pairs']} | {t['p']:.4f} | "
                   f"{t['median_difference']:+.2f} |")
  lines.append("")
  for task, t in summary["target"].items():
    lines.append(f"{task}: order by median {' > '.join(t['order_by_median'])}; ELECTRA > MLM > none: "
                 f"{'yes' if t['electra_gt_mlm_gt_none'] else 'no'}")
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
  p.add_argument("--steps", type=int, default=3000, help="ELECTRA pre-training steps; MLM gets equal FLOPs")
  p.add_argument("--sweep-steps", type=int, default=600)
  p.add_argument("--sweep-lrs", default="1e-4,3e-4,1e-3")
  p.add_argument("--sweep-seed", type=int, default=0)
  p.add_argument("--electra-lr", type=float, help="skip ELECTRA's sweep and use this peak LR")
  p.add_argument("--mlm-lr", type=float, help="skip MLM's sweep and use this peak LR")
  p.add_argument("--temperature", type=float, help="ELECTRA's sampling temperature (default: the preset's)")
  p.add_argument("--wallclock-mlm", action="store_true", help="also pre-train and fine-tune an MLM run of "
                                                              "ELECTRA's measured wall-clock")
  p.add_argument("--evals-per-run", type=int, default=6, help="held-out evaluations during each pre-training")
  p.add_argument("--eval-batches", type=int, default=20)
  p.add_argument("--final-eval-batches", type=int, default=40)
  p.add_argument("--tasks", default="sst,pos")
  p.add_argument("--seeds", type=int, default=5)
  p.add_argument("--first-seed", type=int, default=1)
  p.add_argument("--ft-epochs", type=float, default=2.0)
  p.add_argument("--ft-max-seq-length", type=int, default=0, help="cap the per-task length (0 = sst 64, pos 128)")
  p.add_argument("--reinit-embeddings", action="store_true",
                 help="stage 4 fine-tunes the pre-trained models with reinit_embeddings (their encoder layers, a "
                      "fresh embedding layer; docs/short_runs.md) into *_reinit stage files and summary_reinit.*; "
                      "the LR sweep keeps the reference's fine-tuning")
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
    args.model_overrides_ft = {**small, "iterations_per_loop": 10}
    args.pos_train_sentences, args.pos_dev_sentences = 120, 60
    args.steps, args.sweep_steps, args.sweep_lrs = 12, 6, [3e-4, 1e-3]
    args.evals_per_run, args.eval_batches, args.final_eval_batches = 2, 2, 3
    args.seeds, args.ft_epochs, args.ft_max_seq_length = 2, 1.0, 32
  args.work_dir = os.path.abspath(args.work_dir)
  args.data_dir = os.path.join(args.work_dir, "data")
  return args


def main(argv=None) -> int:
  args = parse_args(argv)
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
    return 0
  sweep = stage_sweep(args, vocab_size)
  log("chosen peak LRs: " + ", ".join(f"{m} {c['learning_rate']:g}" for m, c in sweep["chosen"].items()))
  if last < 2:
    return 0
  pre = stage_pretrain(args, vocab_size, sweep["chosen"])
  c = pre["compute"]
  log(f"equal compute: MLM {c['flops_equal_mlm_steps']} steps by FLOPs (primary), {c['wallclock_equal_mlm_steps']} "
      f"by measured wall-clock")
  if last < 3:
    return 0
  trials = stage_finetune(args, vocab_size, pre["runs"])
  if last < 4 or args.shard != 0:
    return 0
  summary = summarize(args, data, sweep, pre, trials)
  os.makedirs(os.path.join(args.work_dir, "plots"), exist_ok=True)
  suffix = "_reinit" if args.reinit_embeddings else ""
  summary["plot"] = os.path.join(args.work_dir, "plots", f"paper_claim{suffix}.png")
  plot(summary, summary["plot"])
  summary["script_seconds_this_invocation"] = round(time.time() - started, 1)
  write_json(os.path.join(args.work_dir, f"summary{suffix}.json"), summary)
  table = markdown(summary)
  with open(os.path.join(args.work_dir, f"summary{suffix}.md"), "w", encoding="utf-8") as f:
    f.write(table)
  print(table, end="", flush=True)
  log(f"summary: {os.path.join(args.work_dir, f'summary{suffix}.json')}, {summary['plot']}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
