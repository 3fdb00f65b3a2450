"""The task registry: reference task names -> task classes."""

from electra_tf.finetuning import classification, qa, tagging, user_task
from electra_tf.finetuning.base import DataError, Task
from electra_tf.finetuning.tfds_source import TFDSSource
from electra_tf.hparams import HParamError

TASKS = {cls.name: cls for cls in (
    classification.CoLA, classification.SST, classification.MRPC, classification.STS, classification.QQP,
    classification.MNLI, classification.QNLI, classification.RTE,
    qa.SQuAD, qa.SQuADv1, qa.NewsQA, qa.NaturalQuestions, qa.TriviaQA, qa.SearchQA,
    tagging.Chunking)}
TASK_NAMES = tuple(TASKS)
GLUE_TASKS = ("cola", "sst", "mrpc", "sts", "qqp", "mnli", "qnli", "rte")


def get_task(config, name: str, tokenizer) -> Task:
  """A task object for ``name``; raises HParamError for an unknown name."""
  if name not in TASKS:
    raise HParamError(f"unknown task {name!r}; choose from {', '.join(TASK_NAMES)}")
  task = TASKS[name](config, tokenizer)
  if config.data_source == "tfds":
    task.source = TFDSSource.for_task(task)
  return task


def get_tasks(config, tokenizer):
  if config.train_file:  # a task from the user's own files
    spec = user_task.infer_spec(user_task.spec_from_config(config), config.train_file)
    task = user_task.make_task(config, tokenizer, spec)
    for split in ("dev", "test"):  # every file read once before training: a bad dev row stops the run now
      if getattr(config, f"{split}_file"):
        task.get_examples(split)
    return [task]
  names = list(config.task_names)
  if not names:
    raise HParamError("no task given: pass --task NAME or --task-names a,b")
  if len(set(names)) != len(names):
    raise HParamError(f"task_names lists a task twice: {names}")
  return [get_task(config, n, tokenizer) for n in names]


__all__ = ["TASKS", "TASK_NAMES", "GLUE_TASKS", "get_task", "get_tasks", "DataError"]
