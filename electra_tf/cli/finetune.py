"""Fine-tune and evaluate ELECTRA on GLUE, SQuAD, MRQA or chunking (the reference's run_finetuning.py).

  python finetune/run_finetuning.py --data-dir DATA --model-name electra_small --task mnli
  python finetune/run_finetuning.py --data-dir DATA --model-name electra_base --model-size base \\
      --task-names mnli,rte --hparams '{"num_trials": 5}'

Data: <data-dir>/finetuning_data/<task>/{train,dev,test}.{tsv,json,jsonl,txt}; results under
<data-dir>/models/<model-name>/results/. See docs/finetuning.md.

With no --data-dir it fine-tunes the sample model (pretrain/run_pretraining.py with no data arguments)
on the sample sst task (Rotten Tomatoes sentences) in ./sample_run.
"""

import argparse
import logging

from electra_tf.cli import common
from electra_tf.configs import FinetuningConfig
from electra_tf.hparams import HParamError, parse_hparams
from electra_tf.presets import MODEL_SIZES


def parse_args(argv=None):
  p = common.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--data-dir", help="root with finetuning_data/, vocab.txt and models/ "
                                    "(default: the embedded sample setup)")
  p.add_argument("--model-name", help="pre-trained model under <data-dir>/models/ (required with --data-dir)")
  p.add_argument("--hparams", default="{}", help="JSON string or .json file of FinetuningConfig overrides")
  group = p.add_mutually_exclusive_group()
  group.add_argument("--task", help="one task: cola, sst, mrpc, sts, qqp, mnli, qnli, rte, squad, squadv1, "
                                    "newsqa, naturalqs, triviaqa, searchqa, chunk")
  group.add_argument("--task-names", help="comma-separated tasks trained together (multi-task)")
  p.add_argument("--model-size", choices=MODEL_SIZES, help="transformer size")
  p.add_argument("--init-checkpoint", help="checkpoint to start from (default <data-dir>/models/<model>; "
                                           "'none' = random weights)")
  p.add_argument("--data-source", choices=("files", "tfds"), help="read GLUE/SQuAD from tensorflow-datasets")
  p.add_argument("--num-trials", type=int, help="runs with seeds seed, seed+1, ... (negative = forever)")
  p.add_argument("--seed", type=int, help="base seed")
  p.add_argument("--no-progress", action="store_true", help="no progress bar")
  return p.parse_args(argv)


def config_from_flags(args, data_dir: str, model_name=None, defaults=None) -> FinetuningConfig:
  """The run's config: ``--hparams`` and the flags over ``defaults``; raises HParamError naming a bad key."""
  hparams = parse_hparams(args.hparams)
  common.reject_hparams_set_by_flags(hparams)
  flags = {"task_names": [args.task] if args.task else args.task_names, "model_size": args.model_size,
           "init_checkpoint": args.init_checkpoint, "data_source": args.data_source,
           "num_trials": args.num_trials, "seed": args.seed}
  hparams.update({k: v for k, v in flags.items() if v is not None})
  model_name = args.model_name or model_name
  if model_name is None:
    raise HParamError("--model-name is required with --data-dir (the model under <data-dir>/models/)")
  return FinetuningConfig.create(model_name, data_dir, **{**(defaults or {}), **hparams})


def _run(args):
  if args.data_dir is None:
    sample = common.sample_setup(build_records=False)
    config = config_from_flags(args, str(sample.root), sample.model_name, sample.finetuning_hparams())
  else:
    config = config_from_flags(args, args.data_dir)
  from electra_tf.finetuning import run_finetuning  # pylint: disable=g-import-not-at-top  (CLI start-up: TensorFlow)
  run_finetuning(config, progress=not args.no_progress)


def main(argv=None) -> int:
  args = parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  return common.run_cli(lambda: _run(args))
