"""Pre-train ELECTRA (replaced token detection), a BERT-style MLM baseline or ELECTRIC.

  python pretrain/run_pretraining.py --data-dir DATA --model-name electra_small
  python pretrain/run_pretraining.py --data-dir DATA --model-name electra_base --model-size base \\
      --strategy mirrored --hparams '{"mixed_precision": "bfloat16", "use_xla": true}'
  python pretrain/run_pretraining.py --data-dir DATA --model-name electra_small \\
      --hparams '{"do_train": false, "do_eval": true}'

Data: <data-dir>/pretrain_tfrecords/pretrain_data.tfrecord* and <data-dir>/vocab.txt; the model, its
checkpoints, TensorBoard logs and results/ go to <data-dir>/models/<model-name>. Rerunning the same
command resumes from the latest checkpoint. With no --data-dir the embedded sample setup is used.
See docs/pretraining.md.
"""

import argparse
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args(argv=None):
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--data-dir", help="root with pretrain_tfrecords/, vocab.txt and models/ "
                                    "(default: the embedded sample setup)")
  p.add_argument("--model-name", default=None, help="model directory under <data-dir>/models "
                                                     "(required with --data-dir; sample: electra_sample)")
  p.add_argument("--hparams", default="{}", help="JSON string or .json file of PretrainingConfig overrides")
  p.add_argument("--model-size", choices=("small", "base", "large", "small++"),
                 help="preset: size plus the paper's pre-training settings for it")
  p.add_argument("--strategy", choices=("auto", "one_device", "mirrored", "multi_worker", "tpu"),
                 help="distribution strategy (auto: TPU if tpu_name, multi-worker if TF_CONFIG, all GPUs)")
  p.add_argument("--no-progress", action="store_true", help="log lines only, no progress bar")
  return p.parse_args(argv)


def main(argv=None) -> int:
  args = parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  from electra_tf.configs import PretrainingConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.hparams import HParamError, parse_hparams  # pylint: disable=g-import-not-at-top
  try:
    hparams = parse_hparams(args.hparams)
    if args.strategy:
      hparams["strategy"] = args.strategy
    if args.data_dir and not args.model_name:
      raise HParamError("--model-name is required with --data-dir (the model goes to <data-dir>/models/<name>)")
    PretrainingConfig.create(args.model_name or "electra_sample", args.data_dir or ".", preset=args.model_size,
                             **hparams)  # validate flags before the slow imports
    from electra_tf.pretraining import trainer  # pylint: disable=g-import-not-at-top
    data_dir = args.data_dir
    if data_dir is None:  # the sample setup: its data, learned vocab and tiny model (user values win)
      from electra_tf import sample_data  # pylint: disable=g-import-not-at-top
      root = sample_data.ensure_sample_setup()
      hparams = {**sample_data.sample_pretraining_hparams(root / "vocab.txt"), **hparams}
      data_dir = str(root)
    config = PretrainingConfig.create(args.model_name or "electra_sample", data_dir, preset=args.model_size,
                                      **hparams)
    trainer.run(config, progress=not args.no_progress)
  except (HParamError, ValueError, FileNotFoundError) as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  except RuntimeError as e:  # PretrainingError, SampleDataError
    if type(e).__name__ not in ("PretrainingError", "SampleDataError"):
      raise
    print(f"error: {e}", file=sys.stderr)
    return 2
  return 0


if __name__ == "__main__":
  sys.exit(main())
