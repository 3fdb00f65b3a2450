"""Predict with a model fine-tuned on a task from your own files: one prediction per input row.

  electra-predict --data-dir DATA --model-name electra_small --task-name topics --input new.csv --output pred.jsonl
  electra-predict --model-dir DATA/models/electra_small/finetuning_models/topics_model_1 --input dev.csv
  electra-predict --saved-model exported/ --input new.csv --output pred.csv
  cat new.jsonl | electra-predict --model-dir ... --input - --input-format jsonl

The input is read as the training file was (CSV, TSV, JSON Lines, CoNLL or SQuAD JSON; columns by name); a
label column is optional, and where it is there the scores on it are printed (on the dev file: the fine-tuning
run's dev score). Output: JSON Lines by default, CSV / TSV by the output's extension, standard output without
--output. See docs/your_task.md.
"""

import argparse
import logging
import os
import sys

from electra_tf.cli import common
from electra_tf.errors import DataError, HParamError

INPUT_FORMATS = ("csv", "tsv", "jsonl", "conll", "json")


def parse_args(argv=None):
  p = common.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  where = p.add_mutually_exclusive_group()
  where.add_argument("--model-dir", help="a fine-tuned model directory (finetuning_models/<task>_model_<trial>)")
  where.add_argument("--saved-model", help="a SavedModel exported from one (classification and regression)")
  p.add_argument("--data-dir", help="with --model-name and --task-name: the fine-tuning run's data directory")
  p.add_argument("--model-name", help="the pre-trained model's name under <data-dir>/models/")
  p.add_argument("--task-name", help="the task's name (as fine-tuned with --task-name)")
  p.add_argument("--trial", type=common.positive_int, default=1, help="which trial's model (default 1)")
  p.add_argument("--input", required=True, help="the rows to predict; - for standard input")
  p.add_argument("--input-format", choices=INPUT_FORMATS, default="jsonl", help="standard input's format")
  p.add_argument("--output", help="where predictions go (.jsonl, .csv or .tsv); default standard output")
  p.add_argument("--batch-size", type=common.positive_int, help="rows per batch (default: the run's eval batch)")
  p.add_argument("--no-progress", action="store_true", help="no progress bar")
  return p.parse_args(argv)


def model_dir(args) -> str:
  if args.model_dir:
    return args.model_dir
  missing = [flag for flag, value in (("--data-dir", args.data_dir), ("--model-name", args.model_name),
                                      ("--task-name", args.task_name)) if not value]
  if missing:
    raise HParamError(f"name the model: --model-dir DIR, --saved-model DIR, or --data-dir, --model-name and "
                      f"--task-name (missing {', '.join(missing)})")
  return os.path.join(args.data_dir, "models", args.model_name, "finetuning_models",
                      f"{args.task_name}_model_{args.trial}")


def _run(args):
  source = args.saved_model or model_dir(args)
  if not os.path.isdir(source):
    raise DataError(source, None, "no such model directory; fine-tune the task first (electra-finetune "
                    "--train-file ...), or check --model-name, --task-name and --trial")
  from electra_tf.finetuning import predict  # pylint: disable=g-import-not-at-top  (CLI start-up: TensorFlow)
  path = predict.stdin_to_file(args.input_format) if args.input == "-" else args.input
  try:
    if args.saved_model:
      predictor = predict.SavedModelPredictor(source, args.batch_size or 32)
    else:
      predictor = predict.Predictor(source, args.batch_size)
    n = predict.write_predictions(predictor.predict_file(path, progress=not args.no_progress), args.output)
  except DataError as e:
    if args.input == "-" and e.path == path:  # name what the user gave, not the temporary copy
      raise DataError("standard input", e.line, e.problem) from None
    raise
  finally:
    if args.input == "-":
      os.unlink(path)
  print(f"wrote {n} predictions to {args.output or 'standard output'}", file=sys.stderr)
  if predictor.scores:
    shown = " - ".join(f"{k}: {v:.2f}" for k, v in predictor.scores.items())
    print(f"scores on the input's labels: {shown}", file=sys.stderr)


def main(argv=None) -> int:
  args = parse_args(argv)
  logging.basicConfig(level=logging.WARNING, format="%(message)s")
  return common.run_cli(lambda: _run(args))
