"""electra-tf: ELECTRA pre-training and fine-tuning in TensorFlow 2 / Keras 3.

Layout: ``configs`` (hyperparameters), ``modeling`` (layers -> encoder -> pre-training networks),
``checkpoint_names`` / ``hf_mapping`` (weight names of the reference TF1 checkpoints and of Hugging Face),
``tokenization`` and ``pretrain_data`` (data prep), ``pretraining`` and ``finetuning`` (the two jobs).
"""

__version__ = "0.1.0"
