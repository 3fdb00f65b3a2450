"""Fine-tuning on the reference's tasks: GLUE, SQuAD 1.1/2.0, MRQA and chunking.

``run_finetuning(FinetuningConfig.create(...))`` runs the trials; ``tasks.get_task`` gives a task's reader,
featurizer and scorer; ``model.FinetuningModel`` is the encoder plus heads. See ``docs/finetuning.md``.
"""

from electra_tf.finetuning.base import DataError
from electra_tf.finetuning.run import FinetuningRun, run_finetuning
from electra_tf.finetuning.tasks import GLUE_TASKS, TASK_NAMES, get_task, get_tasks
