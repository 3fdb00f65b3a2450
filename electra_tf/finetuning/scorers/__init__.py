"""Scorers with the reference's (official) metric definitions."""

from electra_tf.finetuning.scorers.classification import AccuracyScorer, MCCScorer, RegressionScorer
from electra_tf.finetuning.scorers.squad import (normalize_answer, squad_v1_evaluate, squad_v2_evaluate)
from electra_tf.finetuning.scorers.mrqa import mrqa_evaluate
from electra_tf.finetuning.scorers.qa import MRQAScorer, SQuADScorer, SpanBasedQAScorer, final_span, get_final_text
from electra_tf.finetuning.scorers.tagging import EntityLevelF1Scorer, TaggingScorer, get_span_labels, get_tags
