"""The main job on the embedded sample data: zero to a fine-tuned model in one command.

    python -m electra_tf.quickstart [--sample-dir DIR] [--pretrain-steps N] [--vocab-file vocab.txt]

1. sample text (IMDB reviews; Rotten Tomatoes sentences in the SST layout), a learned vocab, TFRecords; a seeded
   subset of 250 labelled training sentences (``presets.SAMPLE_LABELS``) and a validation split of 500 other
   training sentences;
2. pre-trains a tiny ELECTRA (progress bar; resumes if interrupted);
3. fine-tunes it on the 250 sentences (every weight loaded, as the reference does) and the same network from
   random weights, with the same seeds, each with its setting from the presets (``SAMPLE_FINETUNING``);
4. fits the classical baselines on the same 250 sentences: the majority class and TF-IDF + logistic
   regression, its C chosen on the validation split;
5. prints dev accuracy of all four, the tests of the differences, and writes ``quickstart_curves.png``.

Every step reuses what an earlier run finished. ``--quick`` is the reduced variant CI runs.
"""

import json
import logging
import statistics
import sys
import time

from electra_tf.cli import common  # first: it quiets TensorFlow's start-up before anything loads TensorFlow
from electra_tf import presets, reporting, sample_data, seed_comparison  # pylint: disable=wrong-import-order
from electra_tf.configs import FinetuningConfig, PretrainingConfig
from electra_tf.finetuning import FinetuningRun, baselines, get_task, splits
from electra_tf.finetuning.trainer_cache import TrainerCache
from electra_tf.pretraining import evaluation, trainer

NO_PRETRAINING_NAME = "electra_sample_no_pretraining"


def parse_args(argv=None):
  p = common.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--sample-dir", default=None, help="where everything goes (default ./sample_run or "
                                                    f"${sample_data.SAMPLE_DIR_ENV})")
  p.add_argument("--pretrain-steps", type=int, default=presets.SAMPLE_PRETRAIN_STEPS,
                 help="pre-training steps (batch 32 x 128)")
  p.add_argument("--seeds", type=common.positive_int, default=presets.SAMPLE_FINETUNE_SEEDS,
                 help="fine-tuning seeds for each model (the comparison prints medians and ranges)")
  p.add_argument("--vocab-file", default=None, help="use this vocab.txt instead of learning one")
  p.add_argument("--quick", action="store_true", help="tiny variant for CI: few reviews, 30 steps, "
                                                      "600 training sentences")
  p.add_argument("--no-progress", action="store_true", help="log lines instead of progress bars")
  return p.parse_args(argv)


LABEL_NAMES = {"pretrained": "pre-trained", "no_pretraining": "random weights"}


def _accuracies(results: list) -> list:
  return [float(r[presets.SAMPLE_TASK]["accuracy"]) for r in results]


def _spread(values: list) -> str:
  return f"median {statistics.median(values):.1f} (range {min(values):.1f}-{max(values):.1f}, n={len(values)})"


def _examples(raw_data_dir: str, split: str) -> baselines.Examples:
  cfg = FinetuningConfig.create("baselines", "", task_names=[presets.SAMPLE_TASK], raw_data_dir=raw_data_dir)
  return baselines.glue_examples(get_task(cfg, presets.SAMPLE_TASK, None).get_examples(split))


def label_subset(root, labels: int = presets.SAMPLE_LABELS, validation_size: int = presets.SAMPLE_VALIDATION_SIZE
                 ) -> dict:
  """Writes (or keeps) the main job's seeded subset of ``labels`` sst training sentences and its validation split
  under ``root/label_subsets`` (``splits.write_subset``); returns its description."""
  return splits.write_subset(str(root / "finetuning_data" / presets.SAMPLE_TASK), presets.SAMPLE_TASK,
                             str(root / "label_subsets" / f"{labels}_seed{presets.SAMPLE_SPLIT_SEED}"), "tsv",
                             validation_size, labels, presets.SAMPLE_SPLIT_SEED)


def classical_baselines(split: dict) -> dict:
  """Majority class and TF-IDF + logistic regression on the subset, C chosen on the validation split."""
  train = _examples(split["validation_root"], "train")
  validation, dev = _examples(split["validation_root"], "dev"), _examples(split["dev_root"], "dev")
  tfidf = baselines.tfidf_logreg(train, validation, dev)
  return {"majority": baselines.majority_accuracy(train.labels, dev.labels), "tfidf_logreg": tfidf["dev_accuracy"],
          "tfidf_C": tfidf["C"], "tfidf_validation": {str(c): v for c, v in tfidf["validation"].items()}}


def comparison_line(tfidf: float, none: list, pre: list, labels: int) -> str:
  """The headline: the classical baseline, random weights and the pre-trained model, medians over seeds."""
  return (f"TF-IDF + logistic regression {tfidf:.1f} | random weights {statistics.median(none):.1f} | pre-trained "
          f"{statistics.median(pre):.1f} ({len(pre)} seeds each, {labels} labels)")


def run(args) -> dict:
  start = time.time()
  reporting.check_plotting()  # the report's plot: matplotlib missing is named before the work, not after it
  quick = dict(max_reviews=300, max_task_train=600, vocab_sentences=3000) if args.quick else {}
  steps = 30 if args.quick else args.pretrain_steps
  seeds = 1 if args.quick else args.seeds
  labels = 200 if args.quick else presets.SAMPLE_LABELS
  validation_size = 100 if args.quick else presets.SAMPLE_VALIDATION_SIZE
  print(f"== 1/5 sample data, vocab, pre-training TFRecords; {labels} labelled sentences and a validation split "
        f"of {validation_size}", flush=True)
  root = sample_data.ensure_sample_setup(args.sample_dir, vocab_file=args.vocab_file, **quick)
  vocab = root / "vocab.txt"
  split = label_subset(root, labels, validation_size)

  print(f"== 2/5 pre-training a tiny ELECTRA ({steps} steps)", flush=True)
  vocab_size = sample_data.vocab_size_of(vocab)
  hparams = presets.sample_pretraining_hparams(vocab_size, steps)
  if args.quick:
    hparams.update(iterations_per_loop=10, save_checkpoints_steps=10, eval_every_steps=15, num_eval_steps=2)
  cfg = PretrainingConfig.create(presets.SAMPLE_MODEL_NAME, str(root), **hparams)
  pretrainer = trainer.Trainer(cfg, progress=not args.no_progress)
  if pretrainer.train().status == "interrupted":
    print("stopped during pre-training; rerun the same command to resume", flush=True)
    return None
  # The held-out evaluation run_pretraining.py's do_eval makes, on the model in memory: a second trainer
  # would build and compile everything again (a minute of the budget).
  pretrainer.evaluate()

  print(f"== 3/5 fine-tuning on {labels} sst sentences: pre-trained vs. from random weights", flush=True)
  accuracies, settings = {}, {}
  trainers = TrainerCache()  # the two runs differ in peak LR and init only: one compiled trainer serves both
  for key, name, init in (("pretrained", presets.SAMPLE_MODEL_NAME, None),
                          ("no_pretraining", NO_PRETRAINING_NAME, "none")):
    ft = presets.sample_label_subset_hparams(vocab_size, "pretrained" if init is None else "random")
    if args.quick:
      ft.update(num_train_epochs=1.0)
    settings[key] = {k: ft[k] for k in ("learning_rate", "num_train_epochs")}
    ft_cfg = FinetuningConfig.create(name, str(root), **ft, num_trials=seeds, raw_data_dir=split["dev_root"],
                                     **({"init_checkpoint": init} if init else {}))
    job = FinetuningRun(ft_cfg, progress=not args.no_progress, trainers=trainers)
    results = job.run()
    if job.stopped:  # the seeds so far would make a comparison of fewer seeds than it says
      print("stopped during fine-tuning; rerun the same command to resume", flush=True)
      return None
    accuracies[key] = _accuracies(results)

  print("== 4/5 classical baselines on the same sentences", flush=True)
  classical = classical_baselines(split)

  print("== 5/5 report", flush=True)
  models = root / "models"
  pre = reporting.read_scalars(str(models / presets.SAMPLE_MODEL_NAME / "train"))
  with open(evaluation.results_json_path(cfg.results_txt), encoding="utf-8") as f:
    heldout = json.load(f)[-1]
  names = {"pretrained": presets.SAMPLE_MODEL_NAME, "no_pretraining": NO_PRETRAINING_NAME}
  curves = {key: reporting.read_scalars(str(models / name / "finetuning_models")) for key, name in names.items()}
  loss_tag = next((t for t in curves["pretrained"] if t.endswith("loss")), None)
  pre_acc, none_acc = accuracies["pretrained"], accuracies["no_pretraining"]
  png = root / "quickstart_curves.png"
  reporting.plot_panels([
      ("pre-training losses", "loss", [("generator (MLM)", pre.get("mlm_loss", [])),
                                       ("discriminator x 50", [(s, 50 * v) for s, v in pre.get("disc_loss", [])])]),
      ("discriminator accuracy (train)", "accuracy", [("replaced-token detection", pre.get("disc_accuracy", []))]),
      (f"fine-tuning loss (sst, {labels} sentences)", "loss (summed over the batch)",
       [(LABEL_NAMES[key], curves[key].get(loss_tag, [])) for key in names]),
      (f"sst dev accuracy, {labels} labels (medians)", "%",
       [("TF-IDF + LR", classical["tfidf_logreg"]), ("random weights", statistics.median(none_acc)),
        ("pre-trained", statistics.median(pre_acc))],
       {"kind": "bar", "hline": (classical["majority"], f"majority {classical['majority']:.1f}")}),
  ], str(png), title=f"electra-tf quickstart: tiny ELECTRA, {steps} pre-training steps")

  # a seed gives both models the same head, embedding layer, data order and dropout masks
  versus = seed_comparison.compare_seeds(pre_acc, none_acc)
  tfidf = classical["tfidf_logreg"]
  summary = {"sample_dir": str(root), "pretrain_steps": steps, "heldout_pretraining_metrics": heldout,
             "labels": labels, "validation_size": validation_size, "split_seed": presets.SAMPLE_SPLIT_SEED,
             "finetuning_settings": settings,
             "dev_accuracy": {"pretrained": statistics.median(pre_acc), "no_pretraining": statistics.median(none_acc),
                              "majority": classical["majority"], "tfidf_logreg": tfidf},
             "dev_accuracy_per_seed": {"pretrained": pre_acc, "no_pretraining": none_acc},
             "tfidf_logreg": {"C": classical["tfidf_C"], "validation_accuracy": classical["tfidf_validation"]},
             "pretrained_ahead_beyond_seed_spread": versus["beyond_seed_spread"],
             "seeds_where_pretrained_is_ahead": versus["seeds_ahead"],
             "pretrained_seeds_above_tfidf": sum(a > tfidf for a in pre_acc),
             "sign_test_p": versus["sign_test_p"], "mann_whitney_p": versus["mann_whitney_p"],
             "plot": str(png), "seconds": round(time.time() - start, 1)}
  with open(root / "quickstart_summary.json", "w", encoding="utf-8") as f:
    json.dump(summary, f, indent=2)
  nan = float("nan")
  print(f"\npre-training (held-out, step {heldout['step']}): disc_auc_real {heldout.get('disc_auc_real', nan):.3f} "
        f"(the reference's disc_auc, padding included: {heldout.get('disc_auc', nan):.3f})  disc_recall "
        f"{heldout.get('disc_recall', nan):.3f}  masked_lm_accuracy {heldout.get('masked_lm_accuracy', nan):.3f}")
  print(f"sst dev accuracy after training on {labels} labelled sentences (1,000 dev sentences; TF-IDF's C chosen on "
        f"{validation_size} validation sentences carved from the training set, never on dev):")
  print(comparison_line(tfidf, none_acc, pre_acc, labels))
  print(f"  pre-trained ELECTRA {_spread(pre_acc)}  |  random weights {_spread(none_acc)}  |  TF-IDF + logistic "
        f"regression (C {classical['tfidf_C']:g}) {tfidf:.1f}  |  majority class {classical['majority']:.1f}")
  gap = versus["median_difference"]
  paired = (f"ahead on {versus['seeds_ahead']} of {versus['seeds']} seeds paired by seed, one-sided sign test "
            f"p {versus['sign_test_p']:.3f}")
  above = f"{summary['pretrained_seeds_above_tfidf']} of {len(pre_acc)} pre-trained seeds above TF-IDF + LR"
  if versus["beyond_seed_spread"]:
    print(f"pre-training helps: {gap:+.1f} points over random weights (median), every pre-trained seed above every "
          f"seed without it (exact Mann-Whitney p {versus['mann_whitney_p']:.3f}; {paired}); {above}")
  else:
    print(f"pre-training is not ahead of random weights beyond the seed spread here ({gap:+.1f} points, median; "
          f"{paired}; the ranges overlap, exact Mann-Whitney p {versus['mann_whitney_p']:.3f}); {above}")
  print(f"curves: {png}\nsummary: {root / 'quickstart_summary.json'}  ({summary['seconds'] / 60:.1f} min)")
  return summary


def main(argv=None) -> int:
  args = parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  return common.run_cli(lambda: run(args))


if __name__ == "__main__":
  sys.exit(main())
