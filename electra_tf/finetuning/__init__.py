"""Fine-tuning on the reference's tasks (GLUE, SQuAD 1.1/2.0, MRQA, chunking) and on the user's own files.

``run_finetuning(FinetuningConfig.create(...))`` runs the trials; ``tasks.get_task`` gives a task's reader,
featurizer and scorer; ``model.FinetuningModel`` is the encoder plus heads. See ``docs/finetuning.md``.

The names below are imported on first use, so reading and checking a user's files (``user_files``) loads no
TensorFlow.
"""

from electra_tf.lazy_exports import lazy_exports

_MODULE_OF = {"DataError": "base", "FinetuningRun": "run", "run_finetuning": "run", "GLUE_TASKS": "tasks",
              "TASK_NAMES": "tasks", "get_task": "tasks", "get_tasks": "tasks"}
__all__ = sorted(_MODULE_OF)
__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF)
