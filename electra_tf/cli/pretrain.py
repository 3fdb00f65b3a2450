"""Pre-train ELECTRA (replaced token detection), a BERT-style MLM baseline or ELECTRIC.

  python pretrain/run_pretraining.py --data-dir DATA --model-name electra_small
  python pretrain/run_pretraining.py --data-dir DATA --model-name electra_base --model-size base \\
      --strategy mirrored --hparams '{"mixed_precision": "bfloat16", "use_xla": true}'
  python pretrain/run_pretraining.py --data-dir DATA --model-name electra_small \\
      --hparams '{"do_train": false, "do_eval": true}'
  python pretrain/run_pretraining.py --data-dir DATA --model-name electra_small_more --model-size small++ \\
      --init-checkpoint electra_small/ --hparams '{"num_train_steps": 10000, "learning_rate": 2e-4}'

Data: <data-dir>/pretrain_tfrecords/pretrain_data.tfrecord* and <data-dir>/vocab.txt; the model, its
checkpoints, TensorBoard logs and results/ go to <data-dir>/models/<model-name>. Rerunning the same
command resumes from the latest checkpoint. --init-checkpoint starts a new run (step 0, fresh optimizer) from
the weights of a released checkpoint (reference TF1 layout), a transformers directory, a keras-hub preset or
an electra-tf model directory. With no --data-dir the embedded sample setup is used.
See docs/pretraining.md.
"""

import argparse
import logging

from electra_tf.cli import common
from electra_tf.configs import STRATEGIES, PretrainingConfig
from electra_tf.hparams import HParamError, parse_hparams
from electra_tf.presets import PRETRAINING_PRESETS


def parse_args(argv=None):
  p = common.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--data-dir", help="root with pretrain_tfrecords/, vocab.txt and models/ "
                                    "(default: the embedded sample setup)")
  p.add_argument("--model-name", default=None, help="model directory under <data-dir>/models "
                                                     "(required with --data-dir; sample: electra_sample)")
  p.add_argument("--hparams", default="{}", help="JSON string or .json file of PretrainingConfig overrides")
  p.add_argument("--model-size", choices=PRETRAINING_PRESETS,
                 help="preset: size plus the paper's pre-training settings for it")
  p.add_argument("--init-checkpoint", metavar="PATH",
                 help="start from these weights (step 0, fresh optimizer): a released checkpoint in the reference's "
                      "TF1 layout, a transformers directory, a keras-hub preset or a model directory; "
                      "ignored when the model directory has a checkpoint to resume (hparam init_checkpoint)")
  p.add_argument("--strategy", choices=STRATEGIES,
                 help="distribution strategy (auto: TPU if tpu_name, multi-worker if TF_CONFIG, all GPUs)")
  p.add_argument("--no-progress", action="store_true", help="log lines only, no progress bar")
  return p.parse_args(argv)


def config_from_flags(args, data_dir: str, defaults=None) -> PretrainingConfig:
  """The run's config: ``--hparams`` (and --strategy) over ``defaults``; raises HParamError naming a bad key."""
  hparams = parse_hparams(args.hparams)
  common.reject_hparams_set_by_flags(hparams)
  if args.strategy:
    hparams["strategy"] = args.strategy
  if args.init_checkpoint:
    if hparams.get("init_checkpoint") not in (None, args.init_checkpoint):
      raise HParamError("init_checkpoint is given twice, by --init-checkpoint and in --hparams; pass it once")
    hparams["init_checkpoint"] = args.init_checkpoint
  if args.data_dir and not args.model_name:
    raise HParamError("--model-name is required with --data-dir (the model goes to <data-dir>/models/<name>)")
  return PretrainingConfig.create(args.model_name or "electra_sample", data_dir, preset=args.model_size,
                                  **{**(defaults or {}), **hparams})


def _run(args):
  config_from_flags(args, args.data_dir or ".")  # validate flags before the slow work
  from electra_tf.pretraining import trainer  # pylint: disable=g-import-not-at-top  (CLI start-up: TensorFlow)
  data_dir, defaults = args.data_dir, None
  if data_dir is None:  # the sample setup: its data, learned vocab and tiny model (user values win)
    sample = common.sample_setup(build_records=True)
    data_dir, defaults = str(sample.root), sample.pretraining_hparams()
  trainer.run(config_from_flags(args, data_dir, defaults), progress=not args.no_progress)


def main(argv=None) -> int:
  args = parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  return common.run_cli(lambda: _run(args))
