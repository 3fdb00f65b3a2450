"""A diagnosis, not a selection: dev scores of one pre-trained model of a paper_claim work dir fine-tuned with a
setting its validation curve did not choose, on the same subsets and seeds as the experiment's final runs.

    python experiments/setting_on_dev.py --work-dir runs/pc_len --model mlm_s3994 --task sst --size all \\
        --learning-rate 1e-3 --epochs 2.8 --seeds 1,2,3,4,5

Options this script does not know go to paper_claim.py's parser, so a work dir made with other subset or model
options is read with the same ones (``--quick``, ``--validation-size``, ``--split-seed`` ...). Run it with the
threads the experiment's shards had (``TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1`` for two shards on
two cores): the thread count changes the scores.

Use it to ask why a chosen setting scored as it did (was it the weights or the choice?). Its numbers read dev,
so they must never feed back into a choice or replace a row of the experiment: docs/experiments/paper_claim.md
reports them as such. ``--model`` is a name under ``<work>/data/models`` without its ``pt_`` (or ``sweep_``)
prefix and LR (``electra_s2400``, ``mlm_s3994``), or ``none`` for random weights; ``--pretraining-lr`` picks
its LR where the work dir holds runs at several (a sweep's). Prints one JSON line per seed, then the median and
range. Two copies with different ``--seeds`` use two cores.
"""

import argparse
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the experiments' shared modules

import label_efficiency as le  # pylint: disable=wrong-import-position
import paper_claim as pc  # pylint: disable=wrong-import-position
from electra_tf.finetuning import selection  # pylint: disable=wrong-import-position
from units import read_json, stage_path  # pylint: disable=wrong-import-position


def model_dir(work_dir: str, model: str, pretraining_lr: float = None) -> str:
  """``mlm_s3994`` (``electra_s9600_temp1`` for a run with --temperature, ``_gen1`` with --generator-size) -> the
  model dir that the stage record names (as paper_claim reads it) of the one finished run
  ``pt_mlm_lr<LR>_s3994``, or of the sweep's run of the same method and steps (``sweep_mlm_lr<LR>_s3994``) that a
  length reused, its LR read from that record; ``pretraining_lr`` picks one LR where the work dir holds finished
  runs at several."""
  method, steps, variants = le.parse_model_name(model)
  suffix = le.variant_suffix(variants)
  lr = "*" if pretraining_lr is None else selection.learning_rate_label(pretraining_lr)
  pattern = f"{{pt,sweep}}_{method}_lr{lr}_s{steps}{suffix}" if steps is not None else f"pt_{model}_lr*_sN"
  found = {}  # LR -> model dir; a length's own run before the sweep's run of the same settings
  for prefix in ("sweep", "pt") if steps is not None else ():
    for path in sorted(glob.glob(stage_path(work_dir, f"pretrain_{prefix}_{method}_lr{lr}_s{steps}{suffix}"))):
      record = read_json(path)
      found[selection.learning_rate_label(record["learning_rate"])] = record["model_dir"]
  if len(found) != 1:
    hint = (f"; give --pretraining-lr, one of {', '.join(sorted(found))}" if len(found) > 1 else
            "; give the name of a finished paper_claim pre-training, e.g. electra_s2400")
    print(f"error: --model {model}: expected one finished pre-training run {pattern} in "
          f"{os.path.dirname(stage_path(work_dir, ''))}, found {len(found)}{hint}", file=sys.stderr)
    sys.exit(2)
  return next(iter(found.values()))


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--work-dir", required=True, help="a paper_claim work dir whose data stage has run")
  p.add_argument("--model", required=True, help="e.g. mlm_s3994, electra_s2400, or none")
  p.add_argument("--task", default="sst", choices=("sst", "pos"))
  p.add_argument("--size", default="all", help="labelled examples, as the experiment's --sst-sizes/--pos-sizes")
  p.add_argument("--learning-rate", type=float, required=True)
  p.add_argument("--epochs", type=float, required=True)
  p.add_argument("--seeds", default="1,2,3,4,5")
  p.add_argument("--pretraining-lr", type=float,
                 help="the pre-training peak LR of --model, where the work dir holds its runs at several LRs")
  args, experiment_options = p.parse_known_args(argv)
  pc_args = pc.parse_args(["--work-dir", args.work_dir, "--tasks", args.task, *experiment_options,
                           "--sst-sizes" if args.task == "sst" else "--pos-sizes", args.size])
  pretrained = ({} if args.model == "none" else
                {args.model: model_dir(pc_args.work_dir, args.model, args.pretraining_lr)})
  la = pc.finetuning_args(pc_args, pretrained)
  size = None if args.size == "all" else int(args.size)
  values = []
  for seed in (int(s) for s in args.seeds.split(",")):
    record = le.trial(la, args.task, args.model, size, selection.Setting(args.learning_rate, args.epochs), seed,
                      "dev")
    values.append(record["value"])
    print(json.dumps(record), flush=True)
  print(f"{args.model} {args.task} {args.size}, LR {args.learning_rate:g}, {args.epochs:g} epochs, dev: median "
        f"{statistics.median(values):.1f} (range {min(values):.1f}-{max(values):.1f}, n={len(values)})", flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
