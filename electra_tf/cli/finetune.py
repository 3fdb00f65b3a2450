"""Fine-tune and evaluate ELECTRA on GLUE, SQuAD, MRQA, chunking (the reference's run_finetuning.py) or a
task from your own files.

  python finetune/run_finetuning.py --data-dir DATA --model-name electra_small --task mnli
  python finetune/run_finetuning.py --data-dir DATA --model-name electra_base --model-size base \\
      --task-names mnli,rte --hparams '{"num_trials": 5}'
  python finetune/run_finetuning.py --data-dir DATA --model-name electra_small --task-name topics \\
      --train-file train.csv --dev-file dev.csv --text-column text --label-column topic --search

Your own files: CSV, TSV or JSON Lines by column name (classification of one text or a pair, regression,
multi-label), CoNLL or JSON Lines token/tag lists (tagging), SQuAD-layout JSON (QA); see docs/your_task.md.

Data: <data-dir>/finetuning_data/<task>/{train,dev,test}.{tsv,json,jsonl,txt}; results under
<data-dir>/models/<model-name>/results/. See docs/finetuning.md.

With no --data-dir it fine-tunes the sample model (pretrain/run_pretraining.py with no data arguments)
on the sample sst task (Rotten Tomatoes sentences) in ./sample_run.
"""

import argparse
import logging
import pathlib
import re

from electra_tf.cli import common
from electra_tf.configs import USER_TASK_TYPES, FinetuningConfig
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
  group.add_argument("--task-name", help="the name of a task from your own files (--train-file): results and "
                                         "models are written under it (default: the training file's name)")
  own = p.add_argument_group("a task from your own files (docs/your_task.md)")
  own.add_argument("--train-file", help=".csv, .tsv, .jsonl, SQuAD .json or CoNLL .txt")
  own.add_argument("--dev-file", help="scored and reported (without it: a validation split of the training file)")
  own.add_argument("--test-file", help="predictions written for it (labels optional)")
  own.add_argument("--task-type", choices=USER_TASK_TYPES, help="default: inferred from the training file")
  own.add_argument("--text-column", help="default 'text' or 'sentence'")
  own.add_argument("--text-pair-column", help="the second text of a pair task")
  own.add_argument("--label-column", help="default 'label'")
  own.add_argument("--label-separator", help="multi-label cells: the separator between labels")
  own.add_argument("--tokens-column", help="tagging in JSON Lines: the word lists (default 'tokens')")
  own.add_argument("--tags-column", help="tagging in JSON Lines: the tag lists (default 'tags')")
  own.add_argument("--id-column", help="a column copied into each prediction")
  search = p.add_argument_group("choosing the setting on a validation split")
  search.add_argument("--search", action="store_true", help="choose peak LR and epochs on a validation split "
                                                             "carved from training, then train with the choice")
  search.add_argument("--search-learning-rates", default="1e-4,3e-4,1e-3", help="the grid's peak LRs")
  search.add_argument("--search-epochs", default="2,3,5", help="the grid's epoch counts")
  search.add_argument("--search-seeds", type=common.positive_int, default=1, help="seeds per grid point")
  search.add_argument("--search-max-epochs", type=float, default=20.0,
                      help="doubling the epochs of a best-at-the-longest run stops here")
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
  flags.update({k: getattr(args, k) for k in OWN_FILE_FLAGS})
  if args.train_file or args.task_name:
    flags["task_names"] = [user_task_name(args)]
  hparams.update({k: v for k, v in flags.items() if v is not None})
  model_name = args.model_name or model_name
  if model_name is None:
    raise HParamError("--model-name is required with --data-dir (the model under <data-dir>/models/)")
  return FinetuningConfig.create(model_name, data_dir, **{**(defaults or {}), **hparams})


OWN_FILE_FLAGS = ("train_file", "dev_file", "test_file", "task_type", "text_column", "text_pair_column",
                  "label_column", "label_separator", "tokens_column", "tags_column", "id_column")
TASK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def user_task_name(args) -> str:
  """--task-name, else the training file's name (its directory's for ``train.*``); a name that can stand in file
  and variable names."""
  if not args.train_file:
    raise HParamError("--task-name names a task from your own files: give its --train-file too (the reference's "
                      "tasks are chosen with --task)")
  name = args.task_name
  if name is None:
    stem = pathlib.Path(args.train_file).stem
    name = pathlib.Path(args.train_file).resolve().parent.name if stem.lower() == "train" else stem
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    name = name if name[:1].isalpha() else f"task_{name}"
  if not TASK_NAME.match(name):
    raise HParamError(f"--task-name {name!r}: use letters, digits and underscores, starting with a letter")
  return name


def search_space(args):
  from electra_tf.finetuning.search import SearchSpace, parse_numbers  # pylint: disable=g-import-not-at-top
  return SearchSpace(parse_numbers(args.search_learning_rates, "--search-learning-rates"),
                     parse_numbers(args.search_epochs, "--search-epochs"), args.search_seeds,
                     args.search_max_epochs)


def _run(args):
  if args.data_dir is None:
    sample = common.sample_setup(build_records=False)
    config = config_from_flags(args, str(sample.root), sample.model_name, sample.finetuning_hparams())
  else:
    config = config_from_flags(args, args.data_dir)
  if args.search:
    space = search_space(args)
    from electra_tf.finetuning.search import search_and_finetune  # pylint: disable=g-import-not-at-top
    search_and_finetune(config, space, progress=not args.no_progress)
    return
  from electra_tf.finetuning import run_finetuning  # pylint: disable=g-import-not-at-top  (CLI start-up: TensorFlow)
  run_finetuning(config, progress=not args.no_progress)


def main(argv=None) -> int:
  args = parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  return common.run_cli(lambda: _run(args))
