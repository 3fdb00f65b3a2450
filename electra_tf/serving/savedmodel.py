"""SavedModel export of a fine-tuned classifier, regressor or QA model for serving on raw strings.

The serving signature takes ``tf.string`` tensors, tokenizes inside the graph (the project's tensorflow-text
WordPiece path, whose ids equal the reference tokenizer's; tf-text's ``BertTokenizer`` when that is not
available; for a SentencePiece ``.model``, tf-text's SentencePiece op, whose ids equal the sentencepiece
library's), packs ``[CLS] a [SEP] b [SEP]`` with the reference's pair truncation, and runs the encoder and
the task head. The result loads with ``tf.saved_model.load`` after ``import tensorflow_text`` alone.

Signatures (``serving_default``):

* classification: ``text`` [B] (+ ``text_pair`` [B] for pair tasks) -> ``label`` [B] string, ``label_id`` [B],
  ``probabilities`` [B, n], ``logits`` [B, n].
* regression (STS): the same inputs -> ``score`` [B] (on the label scale, 0..5) and ``prediction`` [B] (raw).
* QA: ``question`` [B], ``context`` [B] -> ``answer`` [B] string (word pieces joined, lowercased as the
  model sees them; SentencePiece pieces joined back into text), ``start``/``end`` [B] token positions in
  the packed input, ``score`` [B] (start + end log-probability), ``no_answer_logit`` [B], ``has_answer`` [B]
  bool (no_answer_logit <= threshold).
  One window per question: contexts longer than ``max_seq_length`` are truncated (no doc stride).
"""

import os
import types
import typing

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from electra_tf import fileio
from electra_tf.configs import FinetuningConfig
from electra_tf.errors import ConversionError
from electra_tf.convert.formats import read_source
from electra_tf.convert.vocab_files import SPM_FILE, VOCAB_FILE, check_vocab
from electra_tf.convert.loading import load_pretrained_weights
from electra_tf.finetuning import head_families, user_task
from electra_tf.finetuning.result_files import write_json
from electra_tf.finetuning.model import FinetuningModel
from electra_tf.finetuning.tasks import TASKS
from electra_tf.runtime.atomic_files import atomic_directory
from electra_tf.errors import VocabError
from electra_tf.tokenization import FullTokenizer, load_tokenizer, read_vocab

MIN_SEQ_LENGTH = 3
MODEL_FIELDS = ("model_size", "model_hparam_overrides", "embedding_size", "vocab_size")  # FinetuningConfig's  # [CLS] a [SEP] b [SEP] keeps at least the three special tokens


def task_heads(extra: typing.Mapping[str, np.ndarray]) -> typing.Dict[str, dict]:
  """``{task: {"type": ..., "num_outputs": n}}`` read off ``task_specific/<task>/...`` names and shapes
  (``head_families.head_type_in_checkpoint``)."""
  scopes, outputs = {}, {}
  for name, value in extra.items():
    parts = name.split("/")
    if len(parts) < 4 or parts[0] != "task_specific":
      continue
    scopes.setdefault(parts[1], set()).add(parts[2])
    if parts[2] == "dense" and parts[3] == "kernel":
      outputs[parts[1]] = int(value.shape[-1])
  return {task: {"type": head_families.head_type_in_checkpoint(found, outputs.get(task), _registry_type(task)),
                 "num_outputs": outputs.get(task)} for task, found in scopes.items()}


def _registry_class(task_name: str):
  return TASKS.get(task_name)


def _registry_type(task_name: str) -> typing.Optional[str]:
  cls = _registry_class(task_name)
  return None if cls is None else cls.head_type


def task_defaults(task_name: str, head_type: str, num_outputs: int, config: FinetuningConfig) -> dict:
  """Labels (a regressor: the [low, high] its [0, 1] outputs map to) and whether the task reads a sentence
  pair, from the fine-tuning task registry when the task is one of the reference's; generic otherwise."""
  cls = _registry_class(task_name)
  head = head_families.family(head_type)
  labels = [f"LABEL_{i}" for i in range(num_outputs)] if head_type != "regression" else [0.0, 5.0]
  pair = head.serving_inputs == head_families.TEXT_INPUTS
  if cls is not None and head.serving_inputs == head_families.TEXT_INPUTS:  # a GLUE task: its columns tell
    task = cls(config, None)
    pair = task.columns("dev").text_b is not None
    if head.named_outputs and len(task.label_list) == num_outputs:
      labels = list(task.label_list)
  inputs = head.serving_inputs if pair else head.serving_inputs[:1]
  return dict(labels=labels, pair=pair, inputs=list(inputs))


def build_finetuned_model(path: str, task: typing.Optional[str] = None, **config_overrides):
  """(``FinetuningModel`` with the checkpoint's weights, its one task's info, the ``Source``) for a
  fine-tuned checkpoint in any format that holds ``task_specific/<task>/`` weights."""
  source = read_source(path)
  found = task_heads(source.extra)
  if not found:
    raise ConversionError(f"{path} holds no fine-tuned head (task_specific/<task>/...); fine-tune it first "
                          "(a pre-trained checkpoint has nothing to serve)")
  if task is None:
    if len(found) > 1:
      raise ConversionError(f"{path} holds several tasks ({', '.join(sorted(found))}); choose one with --task")
    task = next(iter(found))
  if task not in found:
    raise ConversionError(f"{path} has no head for task {task!r} (it has {', '.join(sorted(found))})")
  info = dict(name=task, **found[task])
  own = user_spec(path)
  if own is not None and own[0].name == task:  # a task from the user's files: its type and labels
    info["type"] = own[0].type
  else:
    own = None
  if not head_families.family(info["type"]).servable:
    raise ConversionError(f"task {task!r} has a {info['type']} head; SavedModel export serves "
                          f"{', '.join(head_families.servable_families())} heads")
  config = FinetuningConfig.create(task_names=[task], **config_overrides)
  spec = types.SimpleNamespace(name=task, head_type=info["type"], num_outputs=info["num_outputs"], config=config)
  model_config = source.architecture.discriminator
  if own is not None:  # the fine-tuning run's own model config (heads are not visible in a checkpoint's shapes)
    model_config = FinetuningConfig.create(**{k: v for k, v in own[1].items() if k in MODEL_FIELDS}).model_config()
  model = FinetuningModel(model_config, [spec])
  model.build(None)
  load_pretrained_weights(path, model, require_all=True)
  info.update(task_defaults(task, info["type"], info["num_outputs"] or 1, config))
  if own is not None:
    info.update(user_task_info(*own))
  return model, info, source


def user_spec(path: str):
  """(TaskSpec, fine-tuning config dict) of a model fine-tuned on a task from the user's files, else None."""
  if fileio.isdir(path) and fileio.isfile(os.path.join(path, user_task.SPEC_FILE)):
    return user_task.read_spec(path)
  return None


def user_task_info(spec: "user_task.TaskSpec", settings: dict) -> dict:
  """What serving takes from a user task's spec: label names (or a regression's range), the pair input, the
  fine-tuning run's sequence length and casing."""
  head = head_families.family(spec.type)
  pair = head.serving_inputs == head_families.TEXT_INPUTS and bool(spec.text_pair_column)
  inputs = head.serving_inputs if pair else head.serving_inputs[:1]
  labels = [spec.min_value, spec.max_value] if spec.type == "regression" else [str(v) for v in spec.labels]
  return dict(labels=labels, pair=pair, inputs=list(inputs), spec=spec.to_json(), settings=settings,
              default_max_seq_length=settings.get("max_seq_length"), default_lower_case=settings.get("do_lower_case"))


# ---------------------------------------------------------------------------------------------------
# In-graph tokenization and packing.


def make_tokenizer(vocab_file: str, do_lower_case: bool):
  """(tokenize fn [B] string -> ragged int64 ids, an object to keep alive on the module).

  Prefers the project's tensorflow-text path (reference-exact normalisation); falls back to tf-text's
  ``BertTokenizer`` (differs from the reference on control characters and some CJK/accents). A
  SentencePiece model: tf-text's SentencePiece op (the kept object, so the SavedModel holds the model)."""
  if read_vocab(vocab_file, check_special=False).kind == "sentencepiece":
    tokenizer = load_tokenizer(vocab_file, do_lower_case)
    return tokenizer.tf_tokenize, tokenizer.tf_module()
  try:
    tokenizer = FullTokenizer(vocab_file, do_lower_case)
    if hasattr(tokenizer, "tf_tokenize"):
      return tokenizer.tf_tokenize, tokenizer
  except ImportError:
    pass
  with fileio.open_file(vocab_file) as f:
    vocab = [line.strip() for line in f]
  table = tf.lookup.StaticVocabularyTable(
      tf.lookup.KeyValueTensorInitializer(vocab, tf.range(len(vocab), dtype=tf.int64)), num_oov_buckets=1)
  bert = tf_text.BertTokenizer(table, lower_case=do_lower_case, token_out_type=tf.int64)
  return (lambda text: bert.tokenize(text).merge_dims(1, 2)), bert


def truncate_pair_lengths(len_a, len_b, budget):
  """The reference's ``_truncate_seq_pair`` (pop from the longer, ``b`` on ties, until the pair fits) in
  closed form: the longer is cut to ``budget - shorter`` when that still leaves it the longer; otherwise both
  end at half, ``a`` taking the odd token."""
  shorter = tf.minimum(len_a, len_b)
  fits = len_a + len_b <= budget
  longer_cut = budget - shorter >= shorter
  half_a, half_b = (budget + 1) // 2, budget // 2
  a_is_longer = len_a > len_b
  new_a = tf.where(fits, len_a, tf.where(longer_cut, tf.where(a_is_longer, budget - shorter, len_a), half_a))
  new_b = tf.where(fits, len_b, tf.where(longer_cut, tf.where(a_is_longer, len_b, budget - shorter), half_b))
  return new_a, new_b


def pack(ids_a, ids_b, max_seq_length: int, cls_id: int, sep_id: int, max_a: typing.Optional[int] = None):
  """Ragged [B, (n)] ids -> int32 ``input_ids``, ``input_mask``, ``segment_ids`` [B, max_seq_length]:
  ``[CLS] a [SEP]`` (segment 0) + ``b [SEP]`` (segment 1), zero-padded. ``max_a`` first caps ``a`` (the
  QA query's max_query_length)."""
  if max_a is not None:
    ids_a = ids_a[:, :max_a]
  if ids_b is None:
    ids_a = ids_a[:, :max_seq_length - 2]
    segments = [ids_a]
  else:
    keep_a, keep_b = truncate_pair_lengths(ids_a.row_lengths(), ids_b.row_lengths(), max_seq_length - 3)
    segments = [_take_prefix(ids_a, keep_a), _take_prefix(ids_b, keep_b)]
  batch = tf.shape(segments[0].row_splits)[0] - 1
  cls = tf.fill([batch, 1], tf.constant(cls_id, tf.int64))
  sep = tf.fill([batch, 1], tf.constant(sep_id, tf.int64))
  pieces, types_ = [cls], [tf.zeros([batch, 1], tf.int64)]
  for i, seg in enumerate(segments):
    seg = tf.cast(seg, tf.int64)
    pieces += [seg, sep]
    types_ += [tf.ones_like(seg) * i, tf.fill([batch, 1], tf.constant(i, tf.int64))]
  ids = tf.concat(pieces, axis=1)
  segment_ids = tf.concat(types_, axis=1)
  input_ids = ids.to_tensor(0, shape=[None, max_seq_length])
  input_mask = tf.ones_like(ids).to_tensor(0, shape=[None, max_seq_length])
  segment_ids = segment_ids.to_tensor(0, shape=[None, max_seq_length])
  return tuple(tf.cast(x, tf.int32) for x in (input_ids, input_mask, segment_ids))


def _take_prefix(ragged, lengths):
  """Each row's first ``lengths[i]`` items."""
  positions = tf.ragged.range(ragged.row_lengths())
  return tf.ragged.boolean_mask(ragged, positions < tf.cast(lengths, positions.dtype)[:, None])


# ---------------------------------------------------------------------------------------------------
# The serving module.


class ServingModule(tf.Module):
  """Raw strings in, predictions out (see the module docstring for the signatures)."""

  def __init__(self, model, info: dict, vocab_file: str, do_lower_case: bool, max_seq_length: int,
               config: FinetuningConfig):
    super().__init__(name="electra_serving")
    try:
      vocab = read_vocab(vocab_file)  # either format; special ids resolved
    except VocabError as e:
      raise ConversionError(str(e)) from None
    # A closure, not an attribute: tracking the Keras model would make tf.saved_model trace Keras's own
    # serving function for it, which expects a single tensor input.
    self._model = lambda: model
    # Keras 3 layers kept in Python lists are not tracked by tf.Module; list every variable explicitly so
    # the SavedModel captures them all.
    self.model_variables = [getattr(v, "value", v) for v in model.weights]
    self.vocab_asset = tf.saved_model.Asset(vocab_file)
    self._tokenize, self._tokenizer = make_tokenizer(vocab_file, do_lower_case)
    self.tokens = tf.constant(vocab.id_to_token())
    self.sentencepiece = vocab.kind == "sentencepiece"
    self.info, self.max_seq_length, self.config = info, max_seq_length, config
    self._head = head_families.family(info["type"])
    self.cls_id, self.sep_id = vocab.special["[CLS]"], vocab.special["[SEP]"]
    self.labels = tf.constant(info["labels"])
    self.do_lower_case = tf.constant(bool(do_lower_case))
    self.task_name = tf.constant(info["name"])

  def _features(self, input_ids, input_mask, segment_ids):
    batch = tf.shape(input_ids)[0]
    zeros = tf.zeros([batch], tf.int32)
    name = self.info["name"]
    features = dict(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids, task_id=zeros)
    for key in ("eid", "label_ids", "targets", "start_positions", "end_positions", "is_impossible"):
      features[f"{name}_{key}"] = zeros  # labels the heads read even when predicting
    return features

  def run_head(self, input_ids, input_mask, segment_ids):
    """The fine-tuning model's outputs for this task on packed inputs (no tokenization)."""
    _, outputs = self._model()(self._features(input_ids, input_mask, segment_ids), training=False)
    return outputs[self.info["name"]]

  def classify(self, text, text_pair=None):
    ids_b = None if text_pair is None else self._tokenize(text_pair)
    packed = pack(self._tokenize(text), ids_b, self.max_seq_length, self.cls_id, self.sep_id)
    return self._head.serve(self.run_head(*packed), self.labels)

  def tag(self, words):
    """Tags of ``words`` [B, W] ("" after a sentence's last word), as fine-tuning featurizes a sentence: each
    word's pieces, [CLS] first and [SEP] last, the words cut where fine-tuning cuts them (a task from the
    user's files: word i is kept while [CLS], its pieces, those before it and [SEP] fit in max_seq_length; the
    reference's tasks: while words + 4 + the pieces before it fit); each word is tagged at its first piece.
    Returns ``tags`` [B, W] ("" for padding and cut words), ``tag_ids`` and ``kept`` [B, W]."""
    name, length = self.info["name"], self.max_seq_length
    batch, width = tf.shape(words)[0], tf.shape(words)[1]
    present = tf.not_equal(words, "")
    pieces = self._tokenize(tf.reshape(words, [-1]))
    pieces = tf.RaggedTensor.from_uniform_row_length(tf.cast(pieces, tf.int32), tf.cast(width, tf.int64))  # [B,W,P]
    per_word = tf.cast(pieces.row_lengths(axis=2), tf.int32).to_tensor() * tf.cast(present, tf.int32)
    n_words = tf.reduce_sum(tf.cast(present, tf.int32), -1, keepdims=True)
    before = tf.cumsum(per_word, axis=-1, exclusive=True)
    if "spec" in self.info:
      kept = present & (before + per_word + 2 <= length)
    else:
      kept = present & (n_words + 4 + before <= length)
    body = tf.ragged.boolean_mask(pieces, kept).merge_dims(1, 2)
    ones = tf.ones([batch, 1], tf.int32)
    ids = tf.concat([ones * self.cls_id, body, ones * self.sep_id], axis=1)[:, :length]
    input_mask = tf.ones_like(ids).to_tensor(0, shape=[None, length])
    input_ids = ids.to_tensor(0, shape=[None, length])
    positions = tf.where(kept, before + 1, 0)
    zeros = tf.zeros([batch], tf.int32)
    features = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": input_mask,  # all 1, as trained
                "task_id": zeros, f"{name}_eid": zeros, f"{name}_labeled_positions": positions,
                f"{name}_labels": tf.zeros_like(positions), f"{name}_labels_mask": tf.zeros_like(positions, tf.float32)}
    _, outputs = self._model()(features, training=False)
    tag_ids = outputs[name]["predictions"]
    return {"tags": tf.where(kept, tf.gather(self.labels, tag_ids), ""), "tag_ids": tag_ids, "kept": kept}

  def answer(self, question, context):
    cfg = self.config
    packed = pack(self._tokenize(question), self._tokenize(context), self.max_seq_length, self.cls_id,
                  self.sep_id, max_a=cfg.max_query_length)
    input_ids, input_mask, segment_ids = packed
    out = self.run_head(*packed)
    start_lp, start_idx = out["start_top_log_probs"], out["start_top_index"]   # [B, k]
    end_lp, end_idx = out["end_top_log_probs"], out["end_top_index"]           # [B, k, k]
    scores = start_lp[:, :, None] + end_lp
    starts = tf.broadcast_to(start_idx[:, :, None], tf.shape(end_idx))
    # The context's word pieces: segment 1 without its closing [SEP], which the reference's token_to_orig_map
    # leaves out, so no answer may start or end there.
    context_token = (tf.cast(segment_ids, tf.bool) & tf.cast(input_mask, tf.bool)
                     & tf.not_equal(input_ids, self.sep_id))
    valid = ((end_idx >= starts) & (end_idx - starts + 1 <= cfg.max_answer_length)
             & tf.gather(context_token, starts, batch_dims=1) & tf.gather(context_token, end_idx, batch_dims=1))
    scores = tf.where(valid, scores, tf.fill(tf.shape(scores), -1e9))
    batch = tf.shape(scores)[0]
    best = tf.argmax(tf.reshape(scores, [batch, -1]), -1, output_type=tf.int32)
    start = tf.gather(tf.reshape(starts, [batch, -1]), best, batch_dims=1)
    end = tf.gather(tf.reshape(end_idx, [batch, -1]), best, batch_dims=1)
    score = tf.gather(tf.reshape(scores, [batch, -1]), best, batch_dims=1)
    positions = tf.range(self.max_seq_length)[None]
    in_span = (positions >= start[:, None]) & (positions <= end[:, None])
    pieces = tf.ragged.boolean_mask(tf.gather(self.tokens, input_ids), in_span)
    if self.sentencepiece:  # pieces carry their own word boundaries (U+2581)
      text = tf.strings.strip(tf.strings.regex_replace(tf.strings.reduce_join(pieces, axis=-1), "\u2581", " "))
    else:
      text = tf.strings.regex_replace(tf.strings.reduce_join(pieces, axis=-1, separator=" "), " ##", "")
    no_answer = out["answerable_logit"]
    has_answer = (no_answer <= cfg.qa_na_threshold) & (score > -1e8)
    return {"answer": tf.where(has_answer, text, ""), "start": start, "end": end, "score": score,
            "no_answer_logit": no_answer, "has_answer": has_answer}

  def signatures(self) -> dict:
    if self._head.serving_inputs == head_families.QUESTION_CONTEXT_INPUTS:
      fn = tf.function(lambda question, context: self.answer(question, context))
      serve = fn.get_concrete_function(question=tf.TensorSpec([None], tf.string, name="question"),
                                       context=tf.TensorSpec([None], tf.string, name="context"))
    elif self._head.serving_inputs == head_families.WORD_INPUTS:
      fn = tf.function(lambda words: self.tag(words))
      serve = fn.get_concrete_function(words=tf.TensorSpec([None, None], tf.string, name="words"))
    elif self.info["pair"]:
      fn = tf.function(lambda text, text_pair: self.classify(text, text_pair))
      serve = fn.get_concrete_function(text=tf.TensorSpec([None], tf.string, name="text"),
                                       text_pair=tf.TensorSpec([None], tf.string, name="text_pair"))
    else:
      fn = tf.function(lambda text: self.classify(text))
      serve = fn.get_concrete_function(text=tf.TensorSpec([None], tf.string, name="text"))
    if self._head.serving_inputs == head_families.WORD_INPUTS:  # a tagger's packed input needs its word positions too
      return {"serving_default": serve}
    packed = tf.function(lambda input_ids, input_mask, segment_ids: self.run_head(input_ids, input_mask,
                                                                                  segment_ids))
    int_spec = tf.TensorSpec([None, None], tf.int32)
    return {"serving_default": serve,
            "packed": packed.get_concrete_function(int_spec, int_spec, int_spec)}


def export_savedmodel(path: str, out_dir: str, task: typing.Optional[str] = None,
                      vocab_file: typing.Optional[str] = None, do_lower_case: typing.Optional[bool] = None,
                      max_seq_length: typing.Optional[int] = None,
                      labels: typing.Optional[typing.Sequence[str]] = None, overwrite: bool = False) -> dict:
  """Exports a fine-tuned checkpoint's task as a SavedModel; returns the task info that was served."""
  if max_seq_length is not None and max_seq_length < MIN_SEQ_LENGTH:
    raise ConversionError(f"max_seq_length {max_seq_length} is too short: a packed input needs {MIN_SEQ_LENGTH} "
                          "positions for [CLS] and two [SEP]; pass a larger length, or none for the task's default")
  model, info, source = build_finetuned_model(path, task)
  vocab_file = vocab_file or source.vocab_file
  if vocab_file is None:
    raise ConversionError(f"{path} has no {VOCAB_FILE} or {SPM_FILE} beside it; pass --vocab")
  check_vocab(vocab_file, source.architecture)
  if labels is not None:
    if head_families.family(info["type"]).named_outputs and len(labels) != info["num_outputs"]:
      raise ConversionError(f"{len(labels)} labels given but the head has {info['num_outputs']} outputs")
    info["labels"] = list(labels)
  lower = do_lower_case if do_lower_case is not None else info.get("default_lower_case")
  if lower is None:
    lower = source.do_lower_case if source.do_lower_case is not None else True
  config = FinetuningConfig.create(task_names=[info["name"]])
  seq = max_seq_length or info.get("default_max_seq_length") or config.max_seq_length
  positions = source.architecture.discriminator.max_position_embeddings
  if seq > positions:
    raise ConversionError(f"max_seq_length {seq} is longer than the model's {positions} position embeddings; "
                          f"pass at most {positions}")
  module = ServingModule(model, info, vocab_file, lower, seq, config)
  with atomic_directory(out_dir, overwrite) as tmp:
    tf.saved_model.save(module, tmp, signatures=module.signatures())
    if "spec" in info:  # how electra-predict reads new files for this model
      fileio.makedirs(os.path.join(tmp, "assets"))
      write_json(os.path.join(tmp, "assets", user_task.SAVED_MODEL_SPEC),
                         {"task": info["spec"], "finetuning": dict(info["settings"], max_seq_length=seq,
                                                                   do_lower_case=lower)})
  info.update(do_lower_case=lower, max_seq_length=seq)
  return info
