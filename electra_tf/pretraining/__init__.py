"""Replaced-token-detection pre-training: masking, sampling, objective, training loop, evaluation, and
initialisation from released or converted checkpoints (``init_checkpoint``)."""
