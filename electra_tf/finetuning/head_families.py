"""The fine-tuning head families (classification, regression, span QA, tagging), each described in one
place: its Keras layer (``head_layers``), the outputs its scorer reads, how a checkpoint shows it, whether
and how a SavedModel serves it, and its Hugging Face counterpart. A task names its family by ``head_type``;
code that depends on the family looks it up here (``family(head_type)``) instead of comparing the string.

A new head family: its layer in ``head_layers``, its scorer in ``scorers/``, a ``HeadFamily`` below.
"""

import dataclasses
import functools
import typing

import tensorflow as tf

from electra_tf.convert import hf_task_models
from electra_tf.errors import ConversionError
from electra_tf.finetuning import head_layers

# A SavedModel's string inputs: one text (or a pair) for sentence heads, a question and its context for QA.
TEXT_INPUTS = ("text", "text_pair")
QUESTION_CONTEXT_INPUTS = ("question", "context")
WORD_INPUTS = ("words",)  # [B, W] words of each sentence, "" after its last word


def _serve_classes(outputs, labels):
  logits = outputs["logits"]
  label_id = tf.argmax(logits, -1, output_type=tf.int32)
  return {"label": tf.gather(labels, label_id), "label_id": label_id,
          "probabilities": tf.nn.softmax(logits), "logits": logits}


def _serve_score(outputs, value_range):
  """``value_range``: [low, high] of the labels the head learned mapped to [0, 1] (STS-B: [0, 5])."""
  prediction = outputs["predictions"]
  low, high = value_range[0], value_range[1]
  return {"score": prediction * (high - low) + low, "prediction": prediction}


def _serve_label_set(outputs, labels):
  logits = outputs["logits"]
  probabilities = tf.sigmoid(logits)
  return {"probabilities": probabilities, "predicted": logits > 0.0, "logits": logits}


@dataclasses.dataclass(frozen=True)
class HeadFamily:
  """What electra-tf knows about one head family."""
  name: str  # the tasks' head_type
  layer: type  # the Keras head layer: (task, hidden_size, dropout_rate) -> (losses [B], outputs)
  scorer_outputs: typing.Tuple[str, ...]  # what its scorer reads from the layer's outputs (with loss, eid)
  named_outputs: bool  # one output per label (the task's label_list names them)
  checkpoint_scope: typing.Optional[str] = None  # a task_specific/<task>/<scope> only this family has
  serving_inputs: typing.Tuple[str, ...] = ()  # the SavedModel signature's inputs; () = not served
  serve: typing.Optional[typing.Callable] = None  # (layer outputs, label names) -> served outputs (text inputs)
  hf_export: typing.Optional[typing.Callable] = None  # (Source, task, info) -> (state dict, config.json, note)
  hf_refusal: str = ""  # why there is no Hugging Face export, when hf_export is None

  @property
  def servable(self) -> bool:
    return bool(self.serving_inputs)


FAMILIES = {f.name: f for f in (
    HeadFamily("classification", head_layers.ClassificationHead, ("predictions", "targets"), named_outputs=True,
               serving_inputs=TEXT_INPUTS, serve=_serve_classes, hf_export=hf_task_models.sequence_classification),
    HeadFamily("regression", head_layers.RegressionHead, ("predictions", "targets"), named_outputs=False,
               serving_inputs=TEXT_INPUTS, serve=_serve_score,
               hf_export=functools.partial(hf_task_models.sequence_classification, regression=True)),
    HeadFamily("multilabel", head_layers.MultiLabelHead, ("predictions", "targets"), named_outputs=True,
               serving_inputs=TEXT_INPUTS, serve=_serve_label_set,
               hf_refusal="multi-label heads are not exported to Hugging Face yet; export the encoder with "
                          "export-hf --what encoder"),
    HeadFamily("tagging", head_layers.TaggingHead, ("predictions", "labels", "labels_mask"), named_outputs=True,
               serving_inputs=WORD_INPUTS, hf_export=hf_task_models.token_classification),
    HeadFamily("qa", head_layers.QAHead, head_layers.QA_OUTPUTS, named_outputs=False,
               checkpoint_scope="qa_hidden", serving_inputs=QUESTION_CONTEXT_INPUTS,
               hf_refusal=("the reference's joint start/end QA head (beam search + answerable classifier) has no "
                           "Hugging Face counterpart; export the encoder with export-hf --what encoder, or serve "
                           "it with export-savedmodel")),
)}


def family(head_type: str) -> HeadFamily:
  """The family of a task's ``head_type``."""
  try:
    return FAMILIES[head_type]
  except KeyError:
    raise ValueError(f"unknown head type {head_type!r}; one of {', '.join(FAMILIES)}") from None


def head_type_in_checkpoint(scopes: typing.Iterable[str], num_outputs: typing.Optional[int],
                            registered: typing.Optional[str] = None) -> str:
  """A fine-tuned task's head type from its ``task_specific/<task>/<scope>`` names and output count: a scope
  only one family has (QA's ``qa_hidden``), else the task registry's type (``registered``), else one output
  is regression and more are classification (tagging has the same shapes; only its task name tells)."""
  for f in FAMILIES.values():
    if f.checkpoint_scope is not None and f.checkpoint_scope in scopes:
      return f.name
  return registered or ("regression" if num_outputs == 1 else "classification")


def export_hf(source, task: str, info: dict):
  """(state dict, config.json dict, note) of a fine-tuned task as a Hugging Face task model; one
  ConversionError line for a family without a counterpart."""
  head = family(info["type"])
  if head.hf_export is None:
    raise ConversionError(f"task {task!r} has a {head.name} head: {head.hf_refusal}")
  return head.hf_export(source, task, info)


def servable_families() -> typing.List[str]:
  return [f.name for f in FAMILIES.values() if f.servable]
