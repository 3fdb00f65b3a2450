"""ELECTRA vs MLM-only (BERT-style) pre-training at equal compute, fine-tuned on the sample `sst` task.

  python experiments/electra_vs_mlm.py --work-dir runs/electra_vs_mlm            # the full experiment
  python experiments/electra_vs_mlm.py --work-dir /tmp/evm_quick --quick         # smoke version (~1 min)

Stages (each skipped when its output already exists, so an interrupted run resumes where it stopped;
pre-training itself resumes from its last checkpoint):

  1. sample data     electra_tf.sample_data.prepare_sample_data -> <work>/data/{corpus,finetuning_data}
  2. vocab           data_prep/build_vocab.py (a small WordPiece vocab learnt on the corpus)
  3. tfrecords       data_prep/build_pretraining_dataset.py (2% of the reviews held out)
  4. pre-training    pretrain/run_pretraining.py twice, same network, corpus, batch, length, LR shape:
                       electra: replaced token detection (+ a generator of --generator-fraction width)
                       mlm:     {"electra_objective": false}, trained for the steps that match ELECTRA's
                                FLOPs (counted as the reference's flops_computation.py does)
  5. held-out eval   pretrain/run_pretraining.py {"do_train": false, "do_eval": true}
     export          the TF2 pre-training checkpoint -> a model directory (library calls; written when
                     run_finetuning.py could not read pre-training checkpoints, before commit e2840ee)
  6. fine-tuning     finetune/run_finetuning.py --task sst, one trial per (seed, method), seeds in the
                     outer loop: electra, mlm and a no-pre-training baseline (--init-checkpoint none)
  7. summary         <work>/summary.json (all numbers), <work>/plots/*.png

Everything runs through the command-line tools; this file only chooses hparams, counts FLOPs, and
collects/plots what the tools write.
"""

import argparse
import json
import os
import pathlib
import random
import statistics
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from electra_tf import reporting  # pylint: disable=g-import-not-at-top,wrong-import-position

METHODS = ("electra", "mlm", "no_pretrain")
LABELS = {"electra": "ELECTRA", "mlm": "MLM only (BERT-style)", "no_pretrain": "no pre-training"}


# ---- FLOPs, counted like the reference's flops_computation.py (matmul = 2mn, backward = forward,
#      dense embedding lookups, output softmax on 15.625% of the positions) ----------------------------

def _block_flops(h, i, heads, s):
  dropout, layer_norm, act, softmax = 4, 5, 8, 5
  per_token = (3 * 2 * h * h + 3 * h + 2 * h * s + softmax * s * heads + dropout * s * heads + s * heads +
               2 * h * s + 2 * h * h + h + dropout * h + h + layer_norm +
               2 * h * i + act * i + i + 2 * h * i + h + dropout * h + h + layer_norm * h)
  return per_token * s


def _embedding_flops(h, e, v, s, output, output_frac=0.15625):
  f = 2 * e * v  # dense lookup (input) or output projection onto the vocabulary
  if not output:
    f += 2 * e * (s + 2) + 2 * e + 5 * e + 4 * e
  if e != h or output:
    f += 2 * h * e + (e if output else h)
    if output:
      f += 8 * e + 5 * e + 5 * v + 2 * v
      return output_frac * f * s
  return f * s


def _train_flops_per_sequence(h, layers, e, v, s, discriminator):
  i, heads = 4 * h, max(1, h // 64)
  head = (2 * h * h + h + 8 * h + 2 * h) * s if discriminator else _embedding_flops(h, e, v, s, True)
  return 2 * (layers * _block_flops(h, i, heads, s) + _embedding_flops(h, e, v, s, False) + head)


def flops_per_step(args, vocab_size, method):
  """Training FLOPs of one pre-training step (batch included)."""
  h, layers, e, s, b = args.hidden_size, args.num_layers, args.embedding_size, args.max_seq_length, args.batch_size
  if method == "mlm":
    return b * _train_flops_per_sequence(h, layers, e, vocab_size, s, False)
  hg = max(1, round(h * args.generator_fraction))
  return b * (_train_flops_per_sequence(h, layers, e, vocab_size, s, True) +
              _train_flops_per_sequence(hg, layers, e, vocab_size, s, False))  # tied embeddings: width e


# ---- helpers ---------------------------------------------------------------------------------------------

def log(msg):
  print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_tool(cmd, log_path, env=None):
  """Runs one CLI (python from this venv), appending its output to log_path; raises on failure."""
  full = [sys.executable] + [str(c) for c in cmd]
  log(" ".join(full[1:2] + [c if " " not in c else f"'{c}'" for c in full[2:]]))
  os.makedirs(os.path.dirname(log_path), exist_ok=True)
  start = time.time()
  with open(log_path, "a", encoding="utf-8") as f:
    f.write(f"\n$ {' '.join(full)}\n")
    f.flush()
    rc = subprocess.call(full, stdout=f, stderr=subprocess.STDOUT, cwd=str(REPO),
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})})
  if rc != 0:
    raise SystemExit(f"command failed (exit {rc}); see {log_path}")
  return time.time() - start


def read_json(path, default=None):
  try:
    with open(path, encoding="utf-8") as f:
      return json.load(f)
  except (OSError, ValueError):
    return default


def write_json(path, obj):
  tmp = f"{path}.tmp"
  with open(tmp, "w", encoding="utf-8") as f:
    json.dump(obj, f, indent=2, sort_keys=True)
    f.write("\n")
  os.replace(tmp, path)


def latest_step(model_dir):
  state = os.path.join(model_dir, "checkpoint")
  if not os.path.exists(state):
    return 0
  with open(state, encoding="utf-8") as f:
    first = f.readline()
  try:
    return int(first.strip().rstrip('"').rsplit("-", 1)[1])
  except (IndexError, ValueError):
    return 0


def stats(values):
  values = [float(v) for v in values]
  return {"n": len(values), "median": statistics.median(values), "mean": statistics.fmean(values),
          "std": statistics.stdev(values) if len(values) > 1 else 0.0, "min": min(values), "max": max(values),
          "values": values}


# ---- stages ----------------------------------------------------------------------------------------------

def stage_data(args, data_dir, logs):
  from electra_tf import sample_data  # pylint: disable=g-import-not-at-top
  sample_data.prepare_sample_data(data_dir, max_reviews=args.max_reviews, log=log)
  if args.max_finetune_examples:  # quick mode: a few hundred sentences of each split
    for split, n in (("train", args.max_finetune_examples), ("dev", max(50, args.max_finetune_examples // 4))):
      path = os.path.join(data_dir, "finetuning_data", "sst", f"{split}.tsv")
      with open(path, encoding="utf-8") as f:
        header, *rows = [l for l in f.read().split("\n") if l]
      if len(rows) > n:  # the files are grouped by label: cut a seeded random subset, not the head
        rows = random.Random(0).sample(rows, n)
        with open(path, "w", encoding="utf-8") as f:
          f.write("\n".join([header] + rows) + "\n")
  vocab = os.path.join(data_dir, "vocab.txt")
  if not os.path.exists(vocab):
    cmd = ["data_prep/build_vocab.py", "--corpus-dir", os.path.join(data_dir, "corpus"), "--output", vocab,
           "--vocab-size", args.vocab_size]
    if args.vocab_max_sentences:
      cmd += ["--max-sentences", args.vocab_max_sentences]
    run_tool(cmd, os.path.join(logs, "build_vocab.log"))
  records = os.path.join(data_dir, "pretrain_tfrecords")
  if not os.path.exists(os.path.join(records, "metadata.json")):
    run_tool(["data_prep/build_pretraining_dataset.py", "--corpus-dir", os.path.join(data_dir, "corpus"),
              "--vocab-file", vocab, "--output-dir", records, "--num-processes", 2, "--num-shards", args.num_shards,
              "--eval-fraction", 0.02, "--max-seq-length", args.max_seq_length, "--no-progress"],
             os.path.join(logs, "build_pretraining_dataset.log"))
  with open(vocab, encoding="utf-8") as f:
    return sum(1 for _ in f)


def model_overrides(args):
  return {"hidden_size": args.hidden_size, "num_hidden_layers": args.num_layers,
          "num_attention_heads": max(1, args.hidden_size // 64), "intermediate_size": 4 * args.hidden_size}


def pretrain_hparams(args, vocab_size, method, steps):
  return {"model_hparam_overrides": model_overrides(args), "embedding_size": args.embedding_size,
          "vocab_size": vocab_size, "train_batch_size": args.batch_size, "eval_batch_size": args.batch_size,
          "max_seq_length": args.max_seq_length, "learning_rate": args.learning_rate, "num_train_steps": steps,
          "num_warmup_steps": max(1, round(args.warmup_fraction * steps)),
          "iterations_per_loop": max(1, min(50, steps // 4)), "save_checkpoints_steps": max(1, steps // 4),
          "eval_every_steps": max(1, steps // 4), "num_eval_steps": args.eval_batches, "seed": args.pretrain_seed,
          "electra_objective": method == "electra", "generator_hidden_size": args.generator_fraction}


def stage_pretrain(args, data_dir, logs, vocab_size, method, steps):
  model_dir = os.path.join(data_dir, "models", method)
  record_path = os.path.join(args.work_dir, "stages", f"pretrain_{method}.json")
  record = read_json(record_path, {"wall_seconds": 0.0, "invocations": 0})
  hp = pretrain_hparams(args, vocab_size, method, steps)
  if latest_step(model_dir) < steps:
    record["wall_seconds"] += run_tool(["pretrain/run_pretraining.py", "--data-dir", data_dir, "--model-name",
                                        method, "--no-progress", "--hparams", json.dumps(hp)],
                                       os.path.join(logs, f"pretrain_{method}.log"))
    record["invocations"] += 1
  record.update(steps=steps, hparams=hp)
  write_json(record_path, record)
  results = os.path.join(model_dir, "results", "unsup_results.json")
  history = read_json(results, [])
  if not any(h.get("step") == steps for h in history):  # final held-out evaluation
    ev = dict(hp, do_train=False, do_eval=True, num_eval_steps=args.final_eval_batches)
    run_tool(["pretrain/run_pretraining.py", "--data-dir", data_dir, "--model-name", method, "--no-progress",
              "--hparams", json.dumps(ev)], os.path.join(logs, f"eval_{method}.log"))
  return record


def stage_export(args, data_dir, vocab_size, method, steps):
  """Pre-training's TF2 object checkpoint -> this project's model directory (reference names), which is what
  fine-tuning's --init-checkpoint reads. Until commit e2840ee, run_finetuning.py could not read
  <data>/models/<name> as pre-training leaves it ("... is a TF2 object checkpoint; it restores into
  PretrainingNetworks or an ElectraDiscriminator only") and no convert subcommand imported it; the export
  keeps the experiment independent of that."""
  out = os.path.join(data_dir, "models", f"{method}_for_finetuning")
  if os.path.exists(os.path.join(out, "electra_config.json")):
    return out
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from electra_tf.configs import PretrainingConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.convert import checkpoints as ckpt  # pylint: disable=g-import-not-at-top
  from electra_tf.convert import load_pretrained_weights  # pylint: disable=g-import-not-at-top
  from electra_tf.modeling.models import build_pretraining_networks  # pylint: disable=g-import-not-at-top
  cfg = PretrainingConfig.create(method, data_dir, **pretrain_hparams(args, vocab_size, method, steps))
  nets = build_pretraining_networks(cfg)
  prefix = tf.train.latest_checkpoint(cfg.model_dir)
  report = load_pretrained_weights(prefix, nets)
  if report.missing:
    raise SystemExit(f"{prefix}: {len(report.missing)} weights not restored, e.g. {report.missing[0]}")
  ckpt.write_model_dir(out, ckpt.source_from_networks(nets, cfg.vocab_file, cfg.do_lower_case, steps),
                       overwrite=True)
  log(f"exported {prefix} -> {out} ({len(report.loaded)} weights)")
  return out


def finetune_hparams(args, vocab_size):
  return {"model_hparam_overrides": model_overrides(args), "embedding_size": args.embedding_size,
          "vocab_size": vocab_size, "max_seq_length": args.ft_max_seq_length, "train_batch_size": 32,
          "eval_batch_size": 64, "learning_rate": args.ft_learning_rate, "num_train_epochs": args.ft_epochs,
          "keep_all_models": False, "iterations_per_loop": 200}


def stage_finetune(args, data_dir, logs, vocab_size, method, init_checkpoint, seed):
  """One fine-tuning trial (its own model name, so every seed is a resumable unit of its own)."""
  name = f"ft_{method}_seed{seed}"
  results = os.path.join(data_dir, "models", name, "results", "sst_results.json")
  trials = read_json(results, {}).get("trials", [])
  if not trials:
    run_tool(["finetune/run_finetuning.py", "--data-dir", data_dir, "--model-name", name, "--task", "sst",
              "--num-trials", 1, "--seed", seed, "--no-progress", "--init-checkpoint", init_checkpoint,
              "--hparams", json.dumps(finetune_hparams(args, vocab_size))],
             os.path.join(logs, f"finetune_{method}.log"))
    trials = read_json(results, {}).get("trials", [])
  if not trials:
    raise SystemExit(f"{results} has no trial; see {os.path.join(logs, f'finetune_{method}.log')}")
  return trials[0]


# ---- collection and plots --------------------------------------------------------------------------------

def train_seconds(curves, batch_size):
  """Pure training time: the trainer logs sequences/s per compiled loop, so each loop took
  (steps in loop x batch) / (sequences/s). Excludes start-up, checkpointing and evaluation."""
  total, prev = 0.0, 0
  for step, seqs in curves.get("sequences_per_sec", []):
    if seqs > 0:
      total += (step - prev) * batch_size / seqs
    prev = step
  return total


def heldout_curves(history):
  """{"eval/<metric>": [(step, value)]} from results/unsup_results.json (which also has the final eval)."""
  out = {}
  for h in sorted(history, key=lambda h: h["step"]):
    for k, v in h.items():
      if k not in ("step", "split"):
        out.setdefault(f"eval/{k}", []).append((h["step"], v))
  return out


def plot(summary, curves, path):
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  colors = {"electra": "tab:blue", "mlm": "tab:orange", "no_pretrain": "tab:gray"}
  fig, axes = plt.subplots(1, 3, figsize=(13, 3.9))
  ax = axes[0]
  for method in ("electra", "mlm"):
    pre = summary["pretraining"][method]
    per_step = pre["flops_per_step"]
    c = dict(curves.get(method, {}))
    c.update(heldout_curves(pre["eval_history"]))
    who = "generator" if method == "electra" else "model"
    for tag, style, label in (("mlm_accuracy", "-", "train"), ("eval/masked_lm_accuracy", "o--", "held-out")):
      pts = c.get(tag, [])
      if pts:
        ax.plot([s * per_step / 1e12 for s, _ in pts], [v for _, v in pts], style, color=colors[method],
                ms=4, lw=1.2, label=f"{'ELECTRA' if method == 'electra' else 'MLM'} {who} ({label})")
  ax.set_xlabel("pre-training compute (TFLOPs, reference count)")
  ax.set_ylabel("masked-token accuracy")
  ax.set_title("Masked-LM accuracy vs compute")
  ax.legend(fontsize=7)
  ax.grid(alpha=0.3)
  ax = axes[1]
  c = dict(curves.get("electra", {}))
  c.update(heldout_curves(summary["pretraining"]["electra"]["eval_history"]))
  for tag, style, label in (("disc_accuracy", "-", "disc. accuracy (train)"),
                            ("eval/disc_auc", "o--", "disc. AUC (held-out)"),
                            ("eval/disc_recall", "s:", "disc. recall (held-out)")):
    pts = c.get(tag, [])
    if pts:
      ax.plot([s for s, _ in pts], [v for _, v in pts], style, color=colors["electra"], ms=4, lw=1.2, label=label)
  ax.set_xlabel("ELECTRA step")
  ax.set_title("ELECTRA discriminator")
  ax.legend(fontsize=7)
  ax.grid(alpha=0.3)
  ax = axes[2]
  data = [summary["finetuning"][m]["accuracy"]["values"] for m in METHODS]
  ax.boxplot(data, widths=0.5, showfliers=False)
  for i, (m, vals) in enumerate(zip(METHODS, data), start=1):
    xs = [i + (j - (len(vals) - 1) / 2) * 0.06 for j in range(len(vals))]
    ax.scatter(xs, vals, color=colors[m], zorder=3, s=18)
    ax.annotate(f"median {statistics.median(vals):.1f}", (i, max(vals)), textcoords="offset points",
                xytext=(0, 6), ha="center", fontsize=8)
  ax.set_xticks(range(1, len(METHODS) + 1), ["ELECTRA", "MLM only", "no pre-train"])
  ax.set_ylabel("dev accuracy (%)")
  ax.set_title(f"sst (Rotten Tomatoes) dev, {len(data[0])} seeds each")
  ax.grid(alpha=0.3, axis="y")
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def markdown_tables(summary):
  """The write-up's tables (docs/experiments/electra_vs_mlm.md) from the summary."""
  lines = ["| method | pre-training steps | FLOPs (reference count) | train time (s) | held-out masked-LM acc. | "
           "ELECTRA disc. AUC |", "|---|---|---|---|---|---|"]
  for m in ("electra", "mlm"):
    p = summary["pretraining"][m]
    ev = p["final_heldout_eval"] or {}
    auc = f"{ev['disc_auc']:.3f}" if "disc_auc" in ev else "-"
    acc = f"{ev['masked_lm_accuracy']:.3f}" if "masked_lm_accuracy" in ev else "-"
    lines.append(f"| {LABELS[m]} | {p['steps']} | {p['total_flops']:.3e} | {p['train_seconds_from_logs']:.0f} | "
                 f"{acc} | {auc} |")
  lines += ["", "| method | n | median | mean | std | min | max | per-seed (seed: acc) |",
            "|---|---|---|---|---|---|---|---|"]
  for m in METHODS:
    f = summary["finetuning"][m]
    a = f["accuracy"]
    per = ", ".join(f"{s}: {v:.1f}" for s, v in zip(f["seeds"], a["values"]))
    lines.append(f"| {LABELS[m]} | {a['n']} | {a['median']:.2f} | {a['mean']:.2f} | {a['std']:.2f} | "
                 f"{a['min']:.2f} | {a['max']:.2f} | {per} |")
  return "\n".join(lines) + "\n"


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter)
  p.add_argument("--work-dir", default=str(REPO / "runs" / "electra_vs_mlm"))
  p.add_argument("--quick", action="store_true", help="tiny smoke version: few reviews, steps and seeds")
  p.add_argument("--max-reviews", type=int, default=None, help="IMDB reviews in the corpus (all: 25,000)")
  p.add_argument("--max-finetune-examples", type=int, default=None, help="cut the sst train split")
  p.add_argument("--vocab-size", type=int, default=8000)
  p.add_argument("--vocab-max-sentences", type=int, default=100000)
  p.add_argument("--num-shards", type=int, default=8)
  p.add_argument("--hidden-size", type=int, default=128)
  p.add_argument("--num-layers", type=int, default=4)
  p.add_argument("--embedding-size", type=int, default=128)
  p.add_argument("--generator-fraction", type=float, default=0.25)
  p.add_argument("--max-seq-length", type=int, default=128)
  p.add_argument("--batch-size", type=int, default=32)
  p.add_argument("--learning-rate", type=float, default=1e-3)
  p.add_argument("--warmup-fraction", type=float, default=0.1)
  p.add_argument("--steps", type=int, default=1000, help="ELECTRA pre-training steps; MLM gets equal FLOPs")
  p.add_argument("--eval-batches", type=int, default=10, help="held-out batches of the periodic evals")
  p.add_argument("--final-eval-batches", type=int, default=40)
  p.add_argument("--pretrain-seed", type=int, default=0)
  p.add_argument("--seeds", type=int, default=5, help="fine-tuning trials per method")
  p.add_argument("--ft-seed", type=int, default=1, help="first fine-tuning seed")
  p.add_argument("--ft-epochs", type=float, default=1.0)
  p.add_argument("--ft-max-seq-length", type=int, default=64)
  p.add_argument("--ft-learning-rate", type=float, default=3e-4)
  p.add_argument("--no-plot", action="store_true")
  p.add_argument("--methods", default=",".join(METHODS),
                 help="run the stages of these methods only (e.g. to run two processes side by side); the "
                      "summary is written when all three are selected")
  args = p.parse_args(argv)
  if args.quick:
    args.max_reviews = args.max_reviews or 200
    args.max_finetune_examples = args.max_finetune_examples or 200
    args.vocab_size, args.vocab_max_sentences, args.num_shards = 300, 5000, 2
    args.hidden_size, args.num_layers, args.embedding_size = 32, 1, 32
    args.max_seq_length, args.batch_size = 32, 8
    args.steps, args.eval_batches, args.final_eval_batches = 4, 1, 1
    args.seeds = min(args.seeds, 2)
    args.ft_epochs, args.ft_max_seq_length = 1.0, 32
  methods = [m.strip() for m in args.methods.split(",") if m.strip()]
  if not methods or set(methods) - set(METHODS):
    p.error(f"--methods: choose from {', '.join(METHODS)}")
  work = os.path.abspath(args.work_dir)
  args.work_dir = work
  data_dir, logs = os.path.join(work, "data"), os.path.join(work, "logs")
  os.makedirs(os.path.join(work, "stages"), exist_ok=True)
  started = time.time()

  vocab_size = stage_data(args, data_dir, logs)
  per_step = {m: flops_per_step(args, vocab_size, m) for m in ("electra", "mlm")}
  steps = {"electra": args.steps, "mlm": int(round(args.steps * per_step["electra"] / per_step["mlm"]))}
  log(f"vocab {vocab_size}; FLOPs/step electra {per_step['electra']:.3e}, mlm {per_step['mlm']:.3e}; "
      f"steps electra {steps['electra']}, mlm {steps['mlm']} (equal FLOPs)")
  pretraining = {}
  for method in [m for m in ("electra", "mlm") if m in methods]:
    record = stage_pretrain(args, data_dir, logs, vocab_size, method, steps[method])
    history = read_json(os.path.join(data_dir, "models", method, "results", "unsup_results.json"), [])
    final = [h for h in history if h.get("step") == steps[method]]
    pretraining[method] = {"steps": steps[method], "flops_per_step": per_step[method],
                           "total_flops": per_step[method] * steps[method],
                           "wall_seconds": record["wall_seconds"], "invocations": record["invocations"],
                           "hparams": record["hparams"], "final_heldout_eval": final[-1] if final else None,
                           "eval_history": history}
  init = {m: stage_export(args, data_dir, vocab_size, m, steps[m]) for m in ("electra", "mlm") if m in methods}
  init["no_pretrain"] = "none"
  trials = {m: [] for m in METHODS}
  for seed in range(args.ft_seed, args.ft_seed + args.seeds):  # seeds outer: partial results stay balanced
    for method in [m for m in METHODS if m in methods]:
      trials[method].append(stage_finetune(args, data_dir, logs, vocab_size, method, init[method], seed))
  if set(methods) != set(METHODS):
    log(f"stages of {', '.join(methods)} done; rerun with all methods for the summary")
    return 0
  finetuning = {}
  for method in METHODS:
    acc = [t["sst"]["accuracy"] for t in trials[method]]
    finetuning[method] = {"accuracy": stats(acc), "seeds": [t["seed"] for t in trials[method]],
                          "seconds_per_trial": statistics.fmean(t["time"] for t in trials[method])}
  summary = {"config": {k: v for k, v in vars(args).items()}, "vocab_size": vocab_size,
             "pretraining": pretraining, "finetuning": finetuning,
             "finetune_hparams": finetune_hparams(args, vocab_size),
             "flops_ratio_electra_over_mlm_per_step": per_step["electra"] / per_step["mlm"],
             "script_wall_seconds_this_invocation": time.time() - started}
  curves = {m: reporting.read_scalars(os.path.join(data_dir, "models", m, "train")) for m in ("electra", "mlm")}
  for m in ("electra", "mlm"):
    pretraining[m]["train_seconds_from_logs"] = train_seconds(curves[m], args.batch_size)
  summary["curves"] = {m: {k: v for k, v in c.items() if k in (
      "total_loss", "mlm_accuracy", "disc_accuracy", "eval/masked_lm_accuracy", "eval/disc_auc",
      "eval/disc_accuracy", "eval/disc_recall", "eval/disc_precision", "sequences_per_sec")}
      for m, c in curves.items()}
  if not args.no_plot:
    os.makedirs(os.path.join(work, "plots"), exist_ok=True)
    plot_path = os.path.join(work, "plots", "electra_vs_mlm.png")
    plot(summary, curves, plot_path)
    summary["plot"] = plot_path
  write_json(os.path.join(work, "summary.json"), summary)
  with open(os.path.join(work, "summary.md"), "w", encoding="utf-8") as f:
    f.write(markdown_tables(summary))
  log(f"summary: {os.path.join(work, 'summary.json')}")
  for m in METHODS:
    a = finetuning[m]["accuracy"]
    log(f"{LABELS[m]:>24}: sst dev accuracy median {a['median']:.2f}  mean {a['mean']:.2f}  std {a['std']:.2f}  "
        f"min {a['min']:.2f}  max {a['max']:.2f}  (n={a['n']})")
  return 0


if __name__ == "__main__":
  sys.exit(main())
