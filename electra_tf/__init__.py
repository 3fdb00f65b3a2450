"""electra-tf: ELECTRA pre-training and fine-tuning in TensorFlow 2 / Keras 3.

Layout (docs/architecture.md has every module and the import rules): ``errors``, ``hparams``, ``presets``,
``configs`` (hyperparameters), ``runtime`` (devices, logging, atomic writes), ``modeling`` (layers -> encoder
-> pre-training networks), ``checkpoint_names`` (the reference's TF1 weight names), ``tokenization`` and
``pretrain_data`` (data prep), ``pretraining`` and ``finetuning`` (the two jobs), ``convert`` and ``serving``
(checkpoints in and out), ``cli`` (the command lines).
"""

__version__ = "0.1.0"
