"""The main job on the embedded sample data: zero to a fine-tuned model in one command.

    python -m electra_tf.quickstart [--sample-dir DIR] [--pretrain-steps N] [--vocab-file vocab.txt]

1. sample text (IMDB reviews; Rotten Tomatoes sentences in the SST layout), a learned vocab, TFRecords;
2. pre-trains a tiny ELECTRA (progress bar; resumes if interrupted);
3. fine-tunes it on the sst task (every weight loaded, as the reference does) and the same network from random
   weights, with the same seeds;
4. prints dev accuracy of both against the majority baseline, the tests of the difference, and writes
   ``quickstart_curves.png``.

Every step reuses what an earlier run finished. ``--quick`` is the reduced variant CI runs.
"""

import argparse
import json
import logging
import pathlib
import statistics
import sys
import time

from electra_tf.cli import common  # first: it quiets TensorFlow's start-up before anything loads TensorFlow
from electra_tf import presets, reporting, sample_data, seed_comparison  # pylint: disable=wrong-import-order
from electra_tf.configs import FinetuningConfig, PretrainingConfig
from electra_tf.finetuning import run_finetuning
from electra_tf.pretraining import evaluation, trainer

NO_PRETRAINING_NAME = "electra_sample_no_pretraining"


def parse_args(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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


def _majority_accuracy(tsv: pathlib.Path) -> float:
  labels = [line.rstrip("\n").split("\t")[-1] for line in tsv.read_text(encoding="utf-8").splitlines()[1:]]
  return 100.0 * max(labels.count(v) for v in set(labels)) / len(labels)


def _accuracies(results: list) -> list:
  return [float(r[presets.SAMPLE_TASK]["accuracy"]) for r in results]


def _spread(values: list) -> str:
  return f"median {statistics.median(values):.1f} (range {min(values):.1f}-{max(values):.1f}, n={len(values)})"


def run(args) -> dict:
  start = time.time()
  quick = dict(max_reviews=300, max_task_train=600, vocab_sentences=3000) if args.quick else {}
  steps = 30 if args.quick else args.pretrain_steps
  seeds = 1 if args.quick else args.seeds
  print("== 1/4 sample data, vocab and pre-training TFRecords", flush=True)
  root = sample_data.ensure_sample_setup(args.sample_dir, vocab_file=args.vocab_file, **quick)
  vocab = root / "vocab.txt"

  print(f"== 2/4 pre-training a tiny ELECTRA ({steps} steps)", flush=True)
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

  print("== 3/4 fine-tuning on sst (Rotten Tomatoes): pre-trained vs. from random weights", flush=True)
  ft = presets.sample_finetuning_hparams(vocab_size)
  if args.quick:
    ft.update(num_train_epochs=1.0)
  accuracies = {}
  for name, init in ((presets.SAMPLE_MODEL_NAME, None), (NO_PRETRAINING_NAME, "none")):
    ft_cfg = FinetuningConfig.create(name, str(root), **ft, num_trials=seeds,
                                     **({"init_checkpoint": init} if init else {}))
    accuracies[name] = _accuracies(run_finetuning(ft_cfg, progress=not args.no_progress))
  accuracy = {name: statistics.median(values) for name, values in accuracies.items()}

  print("== 4/4 report", flush=True)
  majority = _majority_accuracy(root / "finetuning_data" / presets.SAMPLE_TASK / "dev.tsv")
  models = root / "models"
  pre = reporting.read_scalars(str(models / presets.SAMPLE_MODEL_NAME / "train"))
  with open(evaluation.results_json_path(cfg.results_txt), encoding="utf-8") as f:
    heldout = json.load(f)[-1]
  curves = {name: reporting.read_scalars(str(models / name / "finetuning_models")) for name in accuracy}
  loss_tag = next((t for t in curves[presets.SAMPLE_MODEL_NAME] if t.endswith("loss")), None)
  png = root / "quickstart_curves.png"
  reporting.plot_panels([
      ("pre-training losses", "loss", [("generator (MLM)", pre.get("mlm_loss", [])),
                                       ("discriminator x 50", [(s, 50 * v) for s, v in pre.get("disc_loss", [])])]),
      ("discriminator accuracy (train)", "accuracy", [("replaced-token detection", pre.get("disc_accuracy", []))]),
      ("fine-tuning loss (sst)", "loss (summed over the batch)", [("pre-trained", curves[presets.SAMPLE_MODEL_NAME].get(loss_tag, [])),
                                          ("no pre-training", curves[NO_PRETRAINING_NAME].get(loss_tag, []))]),
      ("sst dev accuracy", "%", [("pre-trained", accuracy[presets.SAMPLE_MODEL_NAME]),
                                 ("no pre-training", accuracy[NO_PRETRAINING_NAME])],
       {"kind": "bar", "hline": (majority, f"majority {majority:.1f}")}),
  ], str(png), title=f"electra-tf quickstart: tiny ELECTRA, {steps} pre-training steps")

  pre_acc, none_acc = accuracies[presets.SAMPLE_MODEL_NAME], accuracies[NO_PRETRAINING_NAME]
  # a seed gives both models the same head, embedding layer, data order and dropout masks
  versus = seed_comparison.compare_seeds(pre_acc, none_acc)
  summary = {"sample_dir": str(root), "pretrain_steps": steps, "heldout_pretraining_metrics": heldout,
             "dev_accuracy": {"pretrained": accuracy[presets.SAMPLE_MODEL_NAME],
                              "no_pretraining": accuracy[NO_PRETRAINING_NAME], "majority": majority},
             "dev_accuracy_per_seed": {"pretrained": pre_acc, "no_pretraining": none_acc},
             "pretrained_ahead_beyond_seed_spread": versus["beyond_seed_spread"],
             "seeds_where_pretrained_is_ahead": versus["seeds_ahead"],
             "sign_test_p": versus["sign_test_p"], "mann_whitney_p": versus["mann_whitney_p"],
             "plot": str(png), "seconds": round(time.time() - start, 1)}
  with open(root / "quickstart_summary.json", "w", encoding="utf-8") as f:
    json.dump(summary, f, indent=2)
  nan = float("nan")
  print(f"\npre-training (held-out, step {heldout['step']}): disc_auc_real {heldout.get('disc_auc_real', nan):.3f} "
        f"(the reference's disc_auc, padding included: {heldout.get('disc_auc', nan):.3f})  disc_recall "
        f"{heldout.get('disc_recall', nan):.3f}  masked_lm_accuracy {heldout.get('masked_lm_accuracy', nan):.3f}")
  print(f"sst dev accuracy, {len(pre_acc)} fine-tuning seed(s) each: pre-trained ELECTRA {_spread(pre_acc)}  |  "
        f"same network without pre-training {_spread(none_acc)}  |  majority class {majority:.1f}")
  gap = versus["median_difference"]
  paired = (f"ahead on {versus['seeds_ahead']} of {versus['seeds']} seeds paired by seed, one-sided sign test "
            f"p {versus['sign_test_p']:.3f}")
  if versus["beyond_seed_spread"]:
    print(f"pre-training helps: {gap:+.1f} points (median), every pre-trained seed above every seed without it "
          f"(exact Mann-Whitney p {versus['mann_whitney_p']:.3f}; {paired})")
  else:
    print(f"pre-training is not ahead beyond the seed spread here ({gap:+.1f} points, median; {paired}; the "
          f"ranges overlap, exact Mann-Whitney p {versus['mann_whitney_p']:.3f}): {steps} steps teach the layers "
          "little that the task's own training sentences do not (docs/short_runs.md)")
  print(f"curves: {png}\nsummary: {root / 'quickstart_summary.json'}  ({summary['seconds'] / 60:.1f} min)")
  return summary


def main(argv=None) -> int:
  args = parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  return common.run_cli(lambda: run(args))


if __name__ == "__main__":
  sys.exit(main())
