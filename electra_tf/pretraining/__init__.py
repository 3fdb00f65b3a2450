"""Replaced-token-detection pre-training: masking, sampling, objective, training loop, evaluation."""
