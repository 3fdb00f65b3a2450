"""Label efficiency with fair, converged fine-tuning: accuracy against labelled examples for pre-trained models,
random weights and the classical baselines, each neural model with its own setting chosen on validation.

    PY=".venv/bin/python"   # from the checkout's root
    nice -n 10 $PY -m experiments.label_efficiency --work-dir runs/label_efficiency --data-dir runs/pc1200/data \\
        --pretrained electra=runs/pc1200/data/models/pt_electra_lr1e-3_s1200 \\
        --pretrained mlm=runs/pc1200/data/models/pt_mlm_lr1e-3_s1997
    $PY -m experiments.label_efficiency --work-dir /tmp/le_quick --quick          # smoke version (CI)

Protocol (docs/experiments/label_efficiency.md):

- **Splits.** ``--validation-size`` training sentences are carved off once by ``--split-seed``
  (``electra_tf.finetuning.splits``), never dev's; the labelled subsets of ``--sizes`` are the first k of the
  rest (nested, the same for every method). Dev is the task's real dev set.
- **Baselines** (``electra_tf.finetuning.baselines``), on the same subsets: majority class of the training
  labels, TF-IDF + logistic regression (C chosen on validation); for POS the most-frequent-tag lookup, on the
  words as written and lowercased (what the uncased models see).
- **Selection.** Every neural model (each ``--pretrained NAME=MODEL_DIR`` and ``none``, random weights) gets
  its own setting per size from the same grid: peak LR in ``--grid-lrs`` x a training budget of
  ``--grid-examples`` examples seen (epochs = budget / size, at least 1), so a trial costs the same at every
  size; random weights also with the layer-wise decays of ``--random-weights-decays`` (default 1: no decay,
  where the preset's 0.8 gives their lower layers a fraction of the LR). One fine-tune per grid point with
  seed ``--selection-seed`` (not one of the reported seeds; more with ``--extra-selection-seeds``, and the
  median counts), scored on the validation split only; the best wins
  (ties: lower LR, then the smaller budget). Converged means a larger budget at the chosen LR did not raise
  the validation score. When the best is the grid's largest budget at its LR, twice its epochs run next at
  that LR, again while the longer run wins, up to ``--extend-examples`` examples seen
  (``selection.extension``): every chosen setting shows its curve turn.
- **Final.** The chosen setting with seeds ``--first-seed`` .. + ``--seeds``, scored on dev once each.
- **Summary.** Medians, ranges, exact two-sided Mann-Whitney tests (``electra_tf.seed_comparison``), seeds
  above the TF-IDF baseline; ``summary.json``, ``summary.md``, ``plots/label_efficiency.png`` and
  ``plots/validation_curves.png`` (each model's validation score against epochs at its chosen LR). Units still
  missing are listed as pending, so a partial run is reported as what it is.

Every unit writes ``<work>/stages/<name>.json`` when done and is skipped when that file exists (rerun the same
command to continue); units are named by method (``--pretrained`` NAME), and a unit records its model's directory
name, so NAME given another model on the same work dir stops with one line. ``--shard K/N`` deals the units of a
stage round-robin between N processes on one work dir; ``--until baselines|select|final|summary`` stops after a
stage; ``--report`` runs nothing and writes the summary of what has finished so far.
"""

import argparse
import itertools
import os
import re
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if not __package__:  # run as a file: the package's modules are not importable
  sys.exit("run it as a module, from the checkout's root: python -m experiments.label_efficiency [options]")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# pylint: disable=wrong-import-position
from electra_tf.cli.common import run_cli
from electra_tf import presets, reporting, sample_data, seed_comparison
from electra_tf.configs import FinetuningConfig
from electra_tf.finetuning import baselines, get_task, selection, splits
from electra_tf.finetuning.tagging import read_conll
from electra_tf.finetuning.trainer_cache import TrainerCache
from electra_tf.runtime.atomic_files import atomic_write
from experiments.units import log, read_json, unit, write_json  # resumable units and their stage files

STAGES = ("baselines", "select", "final", "summary")
# Every grid point, seed and model is a fine-tuning run of its own; the runs of a task share one compiled trainer
# (reset for each run: the results of a new trainer, bit for bit), so a process traces each task's steps once.
TRAINERS = TrainerCache()
# our task name -> (library task, file format, metric, fine-tuning max_seq_length). ``imdb``: IMDB review
# polarity read as ``sst`` (sample_data.write_imdb_task), a task the protocol was not tuned on (its review
# texts, not their labels, are in the sample pre-training corpus); the networks read a review's first 128
# tokens, TF-IDF + LR all of it.
TASKS = {"sst": ("sst", "tsv", "accuracy", 64), "pos": ("chunk", "conll", "f1", 128),
         "imdb": ("sst", "tsv", "accuracy", 128)}
CLASSIFICATION = ("sst", "imdb")
LABELS = {"electra": "ELECTRA", "mlm": "MLM only", "none": "random weights", "tfidf": "TF-IDF + LR",
          "lookup": "most-frequent tag", "lookup_lowercase": "most-frequent tag, lowercased",
          "majority": "majority class"}
COLORS = {"electra": "tab:blue", "mlm": "tab:orange", "none": "tab:gray", "tfidf": "tab:green",
          "lookup": "tab:green", "lookup_lowercase": "tab:olive", "majority": "black"}


# paper_claim's ELECTRA options that make a run its own model, as its run name spells them (in this order):
# ``electra_s8314_gen1_temp1`` is --generator-size 1 --temperature 1
VARIANTS = {"gen": "generator_hidden_size", "temp": "temperature"}


def parse_model_name(name: str):
  """``electra_s1200`` (a model named by its pre-training steps) -> ("electra", 1200, {}); a run with paper_claim's
  --generator-size or --temperature, ``electra_s1200_gen1_temp1`` -> ("electra", 1200, {"gen": "1", "temp": "1"});
  other names -> (name, None, {})."""
  named = re.fullmatch(r"(.+?)_s(\d+)((?:_(?:%s)[^_]+)*)" % "|".join(VARIANTS), name)
  if not named:
    return name, None, {}
  return named.group(1), int(named.group(2)), dict(re.findall(r"_(%s)([^_]+)" % "|".join(VARIANTS), named.group(3)))


def variant_suffix(variants: dict) -> str:
  """The run-name suffix of ``variants`` as parse_model_name returns them: {"gen": "1"} -> ``_gen1``."""
  return "".join(f"_{key}{variants[key]}" for key in VARIANTS if key in variants)


def label(name: str) -> str:
  """A method's or baseline's label; ``electra_s1200`` reads "ELECTRA, 1,200 steps"."""
  method, steps, variants = parse_model_name(name)
  return (LABELS.get(method, method) + ("" if steps is None else f", {steps:,} steps") +
          "".join(f", {VARIANTS[key]} {value}" for key, value in variants.items()))


def color(name: str) -> str:
  return COLORS.get(parse_model_name(name)[0], "tab:purple")


def size_name(size) -> str:
  return "all" if size is None else str(size)


# ---- data ----------------------------------------------------------------------------------------------------

def task_source(args, task: str) -> str:
  if task == "sst":
    return os.path.join(args.data_dir, "finetuning_data", "sst")
  if task == "imdb":
    return str(sample_data.write_imdb_task(os.path.join(args.data_dir, "finetuning_data", "imdb")))
  return args.pos_dir


def subset_out(args, task: str, size) -> str:
  return os.path.join(args.work_dir, "subsets", f"{task}_{size_name(size)}")


def subset_dirs(args, task: str, size) -> dict:
  lib_task, fmt, _, _ = TASKS[task]
  return splits.write_subset(task_source(args, task), lib_task, subset_out(args, task, size), fmt,
                             args.validation_size, size, args.split_seed)


def glue_split(root: str, split: str) -> baselines.Examples:
  cfg = FinetuningConfig.create("baselines", "", task_names=["sst"], raw_data_dir=root)
  return baselines.glue_examples(get_task(cfg, "sst", None).get_examples(split))


def baseline_unit(args, task: str, size) -> dict:
  d = subset_dirs(args, task, size)
  if task in CLASSIFICATION:
    train = glue_split(d["validation_root"], "train")
    validation, dev = glue_split(d["validation_root"], "dev"), glue_split(d["dev_root"], "dev")
    tfidf = baselines.tfidf_logreg(train, validation, dev)
    return {"task": task, "size": d["train"], "split": d["fingerprint"],
            "majority": baselines.majority_accuracy(train.labels, dev.labels),
            "tfidf": tfidf["dev_accuracy"], "tfidf_C": tfidf["C"],
            "tfidf_validation": {str(c): v for c, v in tfidf["validation"].items()}}
  path = lambda root, split: os.path.join(root, "chunk", f"{split}.txt")
  train = read_conll(path(d["validation_root"], "train"))
  validation, dev = read_conll(path(d["validation_root"], "dev")), read_conll(path(d["dev_root"], "dev"))
  tagger, uncased = baselines.MostFrequentTagger().fit(train), baselines.MostFrequentTagger(lowercase=True).fit(train)
  return {"task": task, "size": d["train"], "split": d["fingerprint"], "lookup": tagger.accuracy(dev),
          "lookup_validation": tagger.accuracy(validation), "unknown_word_tags": tagger.unknown,
          "lookup_lowercase": uncased.accuracy(dev), "lookup_lowercase_validation": uncased.accuracy(validation)}


# ---- neural --------------------------------------------------------------------------------------------------

def grid_for(args, size_count: int, method: str):
  """The grid at a subset of ``size_count`` examples: epochs = budget / size (at least 1). Random weights also
  try ``--random-weights-decays``: a network with no pre-trained layers has nothing for a layer-wise decay to
  keep, and a decay slows its lower layers."""
  decays = list(args.grid_decays)
  if method == "none":
    decays += [d for d in args.random_weights_decays if d not in decays]
  return selection.grid(args.grid_lrs, grid_epochs(args, size_count), decays)


def grid_epochs(args, size_count: int) -> list:
  return sorted({max(1.0, round(budget / size_count, 1)) for budget in args.grid_examples})


def config_factory(args, task: str, method: str, name: str):
  lib_task, _, _, max_len = TASKS[task]
  vocab_size = sample_data.vocab_size_of(os.path.join(args.data_dir, "vocab.txt"))
  base = {**presets.sample_finetuning_hparams(vocab_size), "task_names": [lib_task], "max_seq_length": max_len,
          "init_checkpoint": args.pretrained.get(method, "none"),
          "vocab_file": os.path.join(args.data_dir, "vocab.txt")}
  if task == "pos" and args.pos_bucket_width:
    base["length_bucket_width"] = args.pos_bucket_width
  base.update(args.model_overrides_ft)
  return lambda **kw: FinetuningConfig.create(name, args.work_dir, **{**base, **kw})


def trial(args, task, method, size, setting, seed, on: str) -> dict:
  """One fine-tune scored on ``on`` ("validation" or "dev")."""
  d = subset_dirs(args, task, size)
  _, _, metric, _ = TASKS[task]
  name = f"ft_{task}_{method}_{size_name(size)}_{setting.key()}_seed{seed}_{on}"
  start = time.time()
  value = selection.finetune_score(config_factory(args, task, method, name), setting, seed,
                                   d[f"{on}_root"], TASKS[task][0], metric, trainers=TRAINERS)
  return {"task": task, "method": method, "size": d["train"], "setting": setting._asdict(), "seed": seed,
          "on": on, "value": value, "seconds": round(time.time() - start, 1), "split": d["fingerprint"],
          "length_bucket_width": args.pos_bucket_width if task == "pos" else 0,
          "pretrained": pretrained_model(args, method)}


def pretrained_model(args, method: str):
  """The name of the directory ``method``'s weights come from (None: random weights); a finished unit records
  it, so a later run that gives the same method name another model stops instead of reusing its scores."""
  path = args.pretrained.get(method)
  return None if path is None else os.path.basename(os.path.normpath(path))


def setting_from(record: dict) -> selection.Setting:
  return selection.Setting(**record)


def select_unit_name(task, method, size, setting, seed=None) -> str:
  """A grid point's unit; ``seed``: an ``--extra-selection-seeds`` seed (None: ``--selection-seed``, whose units
  carry no seed in their names)."""
  return f"select_{task}_{method}_{size_name(size)}_{setting.key()}" + ("" if seed is None else f"_seed{seed}")


def selection_seeds(args) -> list:
  """(seed, the seed in its unit names) of every fine-tune a grid point gets: ``--selection-seed`` first."""
  return [(args.selection_seed, None)] + [(seed, seed) for seed in args.extra_selection_seeds]


def parse_extra_selection_seeds(p, text: str, selection_seed: int, selection_flag: str, first_seed: int,
                                seeds: int) -> list:
  """``--extra-selection-seeds`` as a list of seeds; ``p.error`` (one line, exit 2) for a seed that is not an
  integer, repeats, or is ``selection_flag``'s seed or a reported one (a reported seed chosen on would be scored
  twice)."""
  try:
    extra = [int(x) for x in text.split(",") if x.strip()]
  except ValueError:
    p.error(f"--extra-selection-seeds {text!r}: give integer seeds, e.g. 6,7")
  after = first_seed + seeds
  if set(extra) & (set(range(first_seed, after)) | {selection_seed}) or len(set(extra)) < len(extra):
    p.error(f"--extra-selection-seeds {','.join(map(str, extra))}: each seed once, none of them {selection_flag} "
            f"{selection_seed} or a reported seed ({first_seed}-{after - 1}); e.g. {after},{after + 1}")
  return extra


def select_unit_names(args, task, method, size, size_count):
  """(setting, seed, unit name) of every grid fine-tune of a cell."""
  return [(s, seed, select_unit_name(task, method, size, s, tag)) for s in grid_for(args, size_count, method)
          for seed, tag in selection_seeds(args)]


def final_unit_name(task, method, size, setting, seed) -> str:
  """Named by the setting too: a choice that changes (a longer run won, a grid grew) gets new final runs."""
  return f"final_{task}_{method}_{size_name(size)}_{setting.key()}_seed{seed}"


def max_epochs(args, size_count: int) -> float:
  """The longest run an extension may add: ``--extend-examples`` examples seen (0: the grid's longest)."""
  if not args.extend_examples:
    return max(grid_epochs(args, size_count))
  return max(1.0, round(args.extend_examples / size_count, 1))


def chosen_setting(args, task, method, size, size_count, stages: dict):
  """The selection's result from the finished grid and extension units, or None while a grid unit is missing.
  Each grid point scores the median of its selection seeds. While the best is the longest run at its LR and a
  longer one is allowed, the result is ``{"extend": setting, "name": unit name, "seed": its seed}``: that run
  comes first (``selection.extension``)."""
  order = grid_for(args, size_count, method)
  seeds = selection_seeds(args)
  names = {s: [select_unit_name(task, method, size, s, tag) for _, tag in seeds] for s in order}
  if any(name not in stages for point in names.values() for name in point):
    return None
  scores = {s: [stages[name]["value"] for name in point] for s, point in names.items()}  # chosen by the median
  while True:
    longer = selection.extension(scores, order, max_epochs(args, size_count))
    if longer is None:
      break
    runs = [(seed, select_unit_name(task, method, size, longer, tag)) for seed, tag in seeds]
    missing = [(seed, name) for seed, name in runs if name not in stages]
    if missing:
      return {"extend": longer, "name": missing[0][1], "seed": missing[0][0]}
    order.append(longer)
    scores[longer] = [stages[name]["value"] for _, name in runs]
  best = selection.choose(scores, order)
  curve = selection.epoch_curve(scores, best)
  return {"chosen": best, "curve": curve, "converged": selection.converged(curve, best.epochs),
          "scores": {s.key(): v for s, v in scores.items()}}


# ---- stages --------------------------------------------------------------------------------------------------

def sizes_for(args, task: str):
  """The cell sizes of ``task``: ``--pos-sizes`` for POS where given, else ``--sizes``."""
  return args.pos_sizes if task == "pos" and args.pos_sizes else args.sizes


def plan(args):
  """(task, size, subset size) for every cell. Each cell's subset is dealt, every cell checked against the work
  dir (``check_splits``), and only then written, once."""
  dealt = {(task, size): splits.deal(task_source(args, task), TASKS[task][0], TASKS[task][1], args.validation_size,
                                     size, args.split_seed)
           for task in args.tasks for size in sizes_for(args, task)}
  check_splits(args, dealt)
  for (task, size), cell in dealt.items():
    splits.write_dealt(cell, subset_out(args, task, size), TASKS[task][0])
  return [(task, size, cell["train"]) for (task, size), cell in dealt.items()]


def dealt(args, items):
  return [item for i, item in enumerate(items) if i % args.shard_count == args.shard_index]


def load_stages(args) -> dict:
  d = os.path.join(args.work_dir, "stages")
  return {f[:-5]: read_json(os.path.join(d, f)) for f in sorted(os.listdir(d)) if f.endswith(".json")} \
      if os.path.isdir(d) else {}


def methods(args):
  return list(args.pretrained) + ["none"]


def finished_trials(args, prefixes=("select_", "final_")):
  """(file name, record) of every finished unit in the work dir whose name starts with one of ``prefixes``
  (by default the fine-tuning trials), in name order."""
  stages = os.path.join(args.work_dir, "stages")
  for name in sorted(os.listdir(stages)) if os.path.isdir(stages) else []:
    if name.startswith(prefixes) and name.endswith(".json"):
      yield name, read_json(os.path.join(stages, name)) or {}


def check_bucket_width(args):
  """A work dir's POS fine-tunes share one ``--pos-bucket-width``: stops with one line on a finished POS trial
  that used another (units are named without it)."""
  for name, record in finished_trials(args, ("select_pos_", "final_pos_")):
    used = record.get("length_bucket_width", 0)
    if used != args.pos_bucket_width:
      raise SystemExit(f"error: {args.work_dir} holds POS fine-tunes with --pos-bucket-width {used} ({name}); "
                       f"pass --pos-bucket-width {used}, or use a new --work-dir")


def check_pretrained(args):
  """Units are named by method, not by model: a work dir whose finished trials of a method fine-tuned another
  pre-trained model (by its directory's name) stops with one line. Trials that recorded none are not checked."""
  for name, record in finished_trials(args):
    method = record.get("method")
    if method in args.pretrained and record.get("pretrained", pretrained_model(args, method)) != \
        pretrained_model(args, method):
      raise SystemExit(f"error: {args.work_dir} holds fine-tunes of {method} from the pre-trained model "
                       f"{record['pretrained']} ({name}), not {pretrained_model(args, method)}; give this "
                       f"model another name, or use a new --work-dir")


def check_splits(args, dealt: dict):
  """Units are named by task and size, not by the sentences they hold. ``dealt``: {(task, size): what
  ``splits.deal`` gives now}. A finished unit that recorded another carving of its cell (another
  ``--split-seed``, ``--validation-size`` or source file, or a version of ``splits`` that deals otherwise), or a
  work dir whose subset files were dealt otherwise (units from before carvings were recorded), stops with one
  line."""
  current = {}
  for (task, size), cell in dealt.items():
    current[(task, cell["train"])] = cell["fingerprint"]
    on_disk = splits.written_fingerprint(subset_out(args, task, size), TASKS[task][0], TASKS[task][1])
    if on_disk not in (None, cell["fingerprint"]):
      raise SystemExit(f"error: {args.work_dir} holds {task} {size_name(size)} subsets dealt by another carving "
                       f"(split {on_disk}, now {cell['fingerprint']}); rerun with the split settings and code "
                       f"it used, or use a new --work-dir")
  for name, record in finished_trials(args, ("select_", "final_", "baseline_")):
    used, now = record.get("split"), current.get((record.get("task"), record.get("size")))
    if used is not None and now is not None and used != now:
      raise SystemExit(f"error: {args.work_dir} holds units on another carving of {record['task']} "
                       f"{record['size']} ({name}: split {used}, now {now}); rerun with the split settings it "
                       f"used, or use a new --work-dir")


def run(args, ready=None):
  """Runs this shard's units; ``ready``: the methods whose units may run now (None: every method). Units are
  dealt from the full list either way, so a shard runs the same units early as later."""
  if args.report:
    report(args)
    return
  check_bucket_width(args)
  check_pretrained(args)
  now = lambda method: ready is None or method in ready
  cells = plan(args)
  for task, size, _ in dealt(args, cells):
    unit(args, f"baseline_{task}_{size_name(size)}", baseline_unit, args, task, size)
  if args.until == "baselines":
    return
  cells = [c for c in cells if c[0] in args.neural_tasks]
  todo = [(task, method, size, s, seed, name) for task, size, count in cells for method in methods(args)
          for s, seed, name in select_unit_names(args, task, method, size, count)]
  for task, method, size, s, seed, name in dealt(args, todo):
    if now(method):
      unit(args, name, trial, args, task, method, size, s, seed, "validation")
  # Where the best grid point is the longest run at its LR, longer runs follow, one at a time. Cells are dealt
  # from the same list in every shard, so one shard runs a cell's whole chain.
  for task, method, size, count in dealt(args, [(task, method, size, count) for task, size, count in cells
                                                for method in methods(args)]):
    while now(method):
      chosen = chosen_setting(args, task, method, size, count, load_stages(args))
      if chosen is None:
        log(f"extension not ready (its grid is unfinished; rerun to run it): {task} {size_name(size)} {method}")
      if chosen is None or "extend" not in chosen:
        break
      unit(args, chosen["name"], trial, args, task, method, size, chosen["extend"], chosen["seed"], "validation")
  if args.until == "select":
    return
  # Every shard deals the same list, whatever has finished: a unit whose selection another shard is still
  # running is left for a rerun (lists of only the ready units would differ between shards, and units would be
  # dealt to no shard).
  todo = [(task, size, count, method, seed) for seed in range(args.first_seed, args.first_seed + args.seeds)
          for task, size, count in cells for method in methods(args)]  # seeds outer: partial results balanced
  for task, size, count, method, seed in dealt(args, todo):
    if not now(method):
      continue
    chosen = chosen_setting(args, task, method, size, count, load_stages(args))
    if chosen is None or "extend" in chosen:
      log(f"not ready (its selection is unfinished; rerun to run it): final {task} {size_name(size)} {method} "
          f"seed {seed}")
      continue
    unit(args, final_unit_name(task, method, size, chosen["chosen"], seed), trial, args, task, method, size,
         chosen["chosen"], seed, "dev")
  if args.until == "final" or args.shard_index != 0 or ready is not None:
    return
  report(args)


def report(args):
  """Writes the summary, its Markdown and the plot from the finished units (pending ones are listed)."""
  summary = summarize(args, plan(args), load_stages(args))
  write_json(os.path.join(args.work_dir, "summary.json"), summary)
  atomic_write(os.path.join(args.work_dir, "summary.md"), markdown(summary))
  plot(summary, os.path.join(args.work_dir, "plots", "label_efficiency.png"))
  plot_validation_curves(summary, os.path.join(args.work_dir, "plots", "validation_curves.png"))
  log(f"summary: {os.path.join(args.work_dir, 'summary.md')}")


def summarize(args, cells, stages) -> dict:
  rows, pending = [], []
  for task, size, count in cells:
    base = stages.get(f"baseline_{task}_{size_name(size)}")
    if base is None:
      pending.append(f"{task} {size_name(size)}: baselines")
    row = {"task": task, "size": count, "size_name": size_name(size), "baselines": base, "methods": {}}
    for method in (methods(args) if task in args.neural_tasks else []):
      chosen = chosen_setting(args, task, method, size, count, stages)
      if chosen is None or "extend" in chosen:
        pending.append(f"{task} {size_name(size)} {method}: selection"
                       + (f" ({chosen['extend'].describe()} to run)" if chosen else ""))
        continue
      values = [stages[n]["value"] for n in (final_unit_name(task, method, size, chosen["chosen"], seed)
                                              for seed in range(args.first_seed, args.first_seed + args.seeds))
                if n in stages]
      if len(values) < args.seeds:
        pending.append(f"{task} {size_name(size)} {method}: {args.seeds - len(values)} final seed(s)")
      row["methods"][method] = {"chosen": chosen["chosen"]._asdict(), "curve": chosen["curve"],
                                "converged": chosen["converged"], "validation": chosen["scores"], "dev": values,
                                **({"median": statistics.median(values), "min": min(values), "max": max(values)}
                                   if values else {})}
    tests = {}
    full = {m: v["dev"] for m, v in row["methods"].items() if len(v["dev"]) == args.seeds and args.seeds > 1}
    for a, b in itertools.combinations(full, 2):  # every pair of models with all their seeds scored
      tests[f"{a}_vs_{b}"] = seed_comparison.mann_whitney(full[a], full[b])
    classical = (base or {}).get("tfidf")
    if classical is not None:
      for m, v in full.items():
        tests[f"{m}_seeds_above_tfidf"] = sum(x > classical for x in v)
    row["tests"] = tests
    rows.append(row)
  rows.sort(key=lambda r: (args.tasks.index(r["task"]), r["size"]))
  return {"rows": rows, "pending": pending, "args": {k: v for k, v in vars(args).items() if k != "model_overrides_ft"}}


def _cell(m: dict) -> str:
  if "median" not in m:
    return "pending"
  return f"{m['median']:.1f} ({m['min']:.1f}-{m['max']:.1f}, n={len(m['dev'])})"


def markdown(summary) -> str:
  out = []
  for task in dict.fromkeys(r["task"] for r in summary["rows"]):
    rows = [r for r in summary["rows"] if r["task"] == task]
    names = list(dict.fromkeys(m for r in rows for m in r["methods"]))
    classical = ["majority", "tfidf"] if task in CLASSIFICATION else ["lookup", "lookup_lowercase"]
    metric = "accuracy" if task in CLASSIFICATION else "F1 / word accuracy"
    out.append(f"### {task}: dev {metric} against labelled examples\n")
    out.append("| labels | " + " | ".join(label(c) for c in classical + names) + " | tests |")
    out.append("|---" * (len(classical) + len(names) + 2) + "|")
    for r in rows:
      b = r["baselines"] or {}
      cells = [f"{b[c]:.1f}" if c in b else "pending" for c in classical]
      cells += [_cell(r["methods"][m]) if m in r["methods"] else "pending" for m in names]
      tests = "; ".join(f"{k.replace('_', ' ')} p {v['p']:.3f}" if isinstance(v, dict) else f"{k.replace('_', ' ')} "
                        f"{v}" for k, v in r["tests"].items())
      out.append(f"| {r['size']} | " + " | ".join(cells) + f" | {tests} |")
    out.append("\nChosen settings (validation score per grid point, seed of the selection):\n")
    for r in rows:
      for m, v in r["methods"].items():
        s = selection.Setting(**v["chosen"])
        conv = {True: "converged", False: "not converged", None: "convergence not shown"}[v["converged"]]
        out.append(f"- {task} {r['size']} {label(m)}: {s.describe()} ({conv}; curve "
                   f"{', '.join(f'{e:g} ep {x:.1f}' for e, x in v['curve'])}); grid {v['validation']}")
    out.append("")
  if summary["pending"]:
    out.append("Pending: " + "; ".join(summary["pending"]))
  return "\n".join(out) + "\n"


def plot(summary, path):
  series = []
  for task in dict.fromkeys(r["task"] for r in summary["rows"]):
    rows = [r for r in summary["rows"] if r["task"] == task]
    lines = []
    for m in dict.fromkeys(m for r in rows for m in r["methods"]):
      lines.append((label(m), [(r["size"], r["methods"][m]["median"]) for r in rows
                                if m in r["methods"] and "median" in r["methods"][m]]))
    for c in (("tfidf", "majority") if task in CLASSIFICATION else ("lookup", "lookup_lowercase")):
      lines.append((label(c), [(r["size"], r["baselines"][c]) for r in rows if c in (r["baselines"] or {})]))
    series.append((f"{task}: dev score against labelled examples (medians)", "%", lines,
                   {"xlabel": "labelled training examples", "logx": True, "xticks": [r["size"] for r in rows],
                    "colors": {label(m): color(m) for r in rows for m in [*r["methods"], *COLORS]}}))
  reporting.plot_panels(series, path, title="label efficiency (x: labelled training examples)")


def plot_validation_curves(summary, path):
  """One panel per task and size: each model's validation score against fine-tuning epochs at its chosen LR
  and decay (the selection's curve, extensions included), so where each choice stops rising shows."""
  decay = lambda chosen: "" if chosen.get("layerwise_lr_decay") is None else f", decay {chosen['layerwise_lr_decay']:g}"
  series = []
  for r in summary["rows"]:
    curves = {m: v for m, v in r["methods"].items() if v.get("curve")}
    lines = [(f"{label(m)} ({v['chosen']['epochs']:g} ep{decay(v['chosen'])})", [tuple(p) for p in v["curve"]])
             for m, v in curves.items()]
    families = [parse_model_name(m)[0] for m in curves]
    colors = ({name: color(m) for (name, _), m in zip(lines, curves)}
              if len(set(families)) == len(families) else {})  # several models of a family: distinct colours
    if lines:
      series.append((f"{r['task']}, {r['size']} labels: validation against epochs", "%", lines,
                     {"xlabel": "fine-tuning epochs (at the chosen LR)", "logx": True, "colors": colors,
                      "xticks": sorted({x for _, points in lines for x, _ in points})}))
  if series:
    reporting.plot_panels(series, path, title="model selection on the validation split (legend: chosen epochs)")


def parse_args(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--work-dir", default=os.path.join(REPO, "runs", "label_efficiency"))
  p.add_argument("--data-dir", help="a sample data directory (finetuning_data/sst, vocab.txt)")
  p.add_argument("--pos-dir", default=os.path.join(os.environ.get("ELECTRA_TEST_DATA", os.path.join(
      REPO, "..", "shared", "data")), "tagging", "oanc_pos"))
  p.add_argument("--pretrained", action="append", default=[], help="NAME=MODEL_DIR (electra, mlm)")
  p.add_argument("--tasks", default="sst,pos",
                 help="tasks of the baselines: sst, pos, imdb (IMDB review polarity, 3,000 / 500 reviews: a task the "
                      "protocol was not tuned on; the review texts are in the sample pre-training corpus)")
  p.add_argument("--neural-tasks", default="sst", help="tasks the neural models are fine-tuned on")
  p.add_argument("--sizes", default="250,500,1000,2000,all")
  p.add_argument("--pos-sizes", default="", help="the POS cells' sizes (empty: --sizes)")
  p.add_argument("--validation-size", type=int, default=500)
  p.add_argument("--pos-bucket-width", type=int, default=0,
                 help="the POS fine-tunes' length_bucket_width (0: batches of 128 tokens); the same for every method")
  p.add_argument("--split-seed", type=int, default=0)
  p.add_argument("--grid-lrs", default="3e-4,1e-3")
  p.add_argument("--grid-examples", default="5000,10000,20000", help="training budgets (examples seen)")
  p.add_argument("--grid-decays", default="", help="layer-wise LR decays (empty: the preset's 0.8)")
  p.add_argument("--random-weights-decays", default="1",
                 help="decays random weights try besides --grid-decays (1: none; empty: the same grid as the "
                      "pre-trained models)")
  p.add_argument("--extend-examples", type=int, default=80000,
                 help="when the best grid point is the longest run at its LR, run twice the epochs, again while "
                      "the longer run wins, up to this many examples seen (0: the grid alone)")
  p.add_argument("--selection-seed", type=int, default=0)
  p.add_argument("--extra-selection-seeds", default="",
                 help="more seeds for every grid point (e.g. 6,7), the median chosen: a steadier choice at that many "
                      "times the selection's cost; none of them a reported seed")
  p.add_argument("--seeds", type=int, default=5)
  p.add_argument("--first-seed", type=int, default=1)
  p.add_argument("--until", choices=STAGES, default="summary")
  p.add_argument("--shard", default="0/1")
  p.add_argument("--report", action="store_true",
                 help="run nothing: write the summary of the units finished so far (shards may be running)")
  p.add_argument("--quick", action="store_true", help="smoke version: 300 reviews, H 32 x 1 layer, 2 seeds")
  args = p.parse_args(argv)
  args.tasks, args.neural_tasks = args.tasks.split(","), args.neural_tasks.split(",")
  parse_sizes = lambda text: [None if s == "all" else int(s) for s in text.split(",") if s.strip()]
  args.sizes, args.pos_sizes = parse_sizes(args.sizes), parse_sizes(args.pos_sizes)
  args.grid_lrs = [float(x) for x in args.grid_lrs.split(",")]
  args.grid_examples = [int(x) for x in args.grid_examples.split(",")]
  args.grid_decays = [float(x) for x in args.grid_decays.split(",")] if args.grid_decays else [None]
  args.random_weights_decays = [float(x) for x in args.random_weights_decays.split(",") if x.strip()]
  args.shard_index, args.shard_count = (int(x) for x in args.shard.split("/"))
  args.pretrained = dict(item.split("=", 1) for item in args.pretrained)
  args.model_overrides_ft = {}
  if args.quick:
    args.data_dir = args.data_dir or os.path.join(args.work_dir, "data")
    sample_data.ensure_sample_setup(args.data_dir, max_reviews=300, max_task_train=600, vocab_sentences=3000,
                                    log=log, build_records=False)
    args.sizes, args.validation_size, args.seeds = [50, None], 100, 2
    args.grid_lrs, args.grid_examples, args.extend_examples = [1e-3], [100, 200], 400
    args.model_overrides_ft = {"model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 1,
                                                          "num_attention_heads": 2, "intermediate_size": 64},
                               "embedding_size": 32, "max_seq_length": 32, "use_xla": False}
  args.extra_selection_seeds = parse_extra_selection_seeds(p, args.extra_selection_seeds, args.selection_seed,
                                                           "--selection-seed", args.first_seed, args.seeds)
  if not args.data_dir:
    p.error("--data-dir is required (a sample data directory), or --quick")
  return args


def main(argv=None) -> int:
  """Runs the experiment; a user-fixable error (``ElectraError``) is one ``error:`` line and exit status 2."""
  args = parse_args(argv)
  return run_cli(lambda: run(args))


if __name__ == "__main__":
  sys.exit(main())
