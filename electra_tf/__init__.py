"""electra-tf: ELECTRA pre-training and fine-tuning in TensorFlow 2 / Keras 3.

Layout (docs/architecture.md has every module and the import rules): ``errors``, ``hparams``, ``presets``,
``configs`` (hyperparameters), ``runtime`` (devices, logging, atomic writes), ``modeling`` (layers -> encoder
-> pre-training networks), ``checkpoint_names`` (the reference's TF1 weight names), ``tokenization`` and
``pretrain_data`` (data prep), ``pretraining`` and ``finetuning`` (the two jobs), ``convert`` and ``serving``
(checkpoints in and out), ``keras_encoder`` (the encoder as a plain Keras model), ``cli`` (the command lines).

``electra_tf.load_encoder(path)`` is ``keras_encoder.load_encoder``, imported on first use so that
``import electra_tf`` stays light (no TensorFlow).
"""

__version__ = "0.1.0"


def __getattr__(name):
  if name == "load_encoder":
    from electra_tf.keras_encoder import load_encoder  # pylint: disable=g-import-not-at-top  (loads TensorFlow)
    return load_encoder
  raise AttributeError(f"module 'electra_tf' has no attribute {name!r}")
