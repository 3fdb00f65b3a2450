"""Model, pre-training and fine-tuning configurations with the reference's defaults.

Mirrors ``configure_pretraining.py`` / ``configure_finetuning.py`` and ``get_bert_config`` of
google-research/electra; see ``docs/hparams.md`` for every field. User overrides are applied before and
after the size/task defaults (as the reference does), so a value the user gives always wins.
"""

import dataclasses
import os
import typing

from electra_tf import presets
from electra_tf.hparams import HParamError, HParams, field
from electra_tf.presets import MODEL_SIZES, PRETRAINING_PRESETS as PRESETS

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker", "tpu")
USER_TASK_TYPES = ("auto", "classification", "regression", "multilabel", "tagging", "qa")


@dataclasses.dataclass
class ModelConfig(HParams):
  """Transformer dimensions: the reference's ``BertConfig`` plus the embedding size."""
  vocab_size: int = field(30522, "rows of the word-embedding table", min=1)
  hidden_size: int = field(256, "transformer width H", min=1)
  num_hidden_layers: int = field(12, "number of transformer layers L", min=0)
  num_attention_heads: int = field(4, "attention heads (H must divide evenly)", min=1)
  intermediate_size: int = field(1024, "feed-forward width", min=1)
  hidden_act: str = field("gelu", "feed-forward activation", choices=("gelu", "relu", "tanh"))
  hidden_dropout_prob: float = field(0.1, "dropout on embeddings and residual branches", min=0.0, max=0.99)
  attention_probs_dropout_prob: float = field(0.1, "dropout on attention probabilities", min=0.0, max=0.99)
  max_position_embeddings: int = field(512, "rows of the position table", min=1)
  type_vocab_size: int = field(2, "rows of the token-type table", min=1)
  initializer_range: float = field(0.02, "stddev of the truncated-normal initializer", min=0.0)
  embedding_size: typing.Optional[int] = field(None, "embedding width E (null = hidden_size)", min=1)

  def __post_init__(self):
    if self.embedding_size is None:
      self.embedding_size = self.hidden_size

  def validate(self):
    if self.hidden_size % self.num_attention_heads:
      raise HParamError(f"hidden_size {self.hidden_size} is not a multiple of num_attention_heads "
                        f"{self.num_attention_heads}")
    return self


def derived_heads(hidden_size: int) -> int:
  """The head count the reference gives a transformer of width ``hidden_size``: max(1, H // 64)."""
  return max(1, hidden_size // 64)


def model_config_for_size(model_size: str, vocab_size: int = 30522, embedding_size=None,
                          overrides: typing.Optional[dict] = None) -> ModelConfig:
  """The reference's ``get_bert_config``: size -> H/L, then heads = max(1, H//64) and FFN = 4H."""
  if model_size not in presets.SIZE_DIMS:
    raise HParamError(f"model_size {model_size!r} is not one of {', '.join(MODEL_SIZES)}")
  hidden, layers = presets.SIZE_DIMS[model_size]
  overrides = dict(overrides or {})
  cfg = ModelConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers)
  cfg.update(overrides)  # a user-given width drives the derived heads / FFN below
  cfg.num_attention_heads = derived_heads(cfg.hidden_size)
  cfg.intermediate_size = 4 * cfg.hidden_size
  cfg.embedding_size = embedding_size or cfg.hidden_size
  cfg.update(overrides)
  return cfg.validate()


def generator_model_config(disc: ModelConfig, hidden_fraction: float, layer_fraction: float) -> ModelConfig:
  """The reference's ``get_generator_config``: width and depth scaled, heads/FFN re-derived."""
  gen = dataclasses.replace(disc)
  gen.hidden_size = int(round(disc.hidden_size * hidden_fraction))
  gen.num_hidden_layers = int(round(disc.num_hidden_layers * layer_fraction))
  gen.intermediate_size = 4 * gen.hidden_size
  gen.num_attention_heads = derived_heads(gen.hidden_size)
  if gen.hidden_size < 1:
    raise HParamError(f"generator_hidden_size {hidden_fraction} gives a generator of width 0")
  return gen.validate()


@dataclasses.dataclass
class RuntimeConfig(HParams):
  """Where and how a job runs; shared by pre-training and fine-tuning (``runtime.select_strategy``)."""
  strategy: str = field("auto", "distribution strategy", choices=STRATEGIES)
  mixed_precision: str = field("float32", "compute dtype policy", choices=("float32", "bfloat16", "float16"))
  use_xla: typing.Optional[bool] = field(None, "XLA-compile the replica step; null (auto): on when a GPU is "
                                          "present, off on CPUs and TPUs (a TPU compiles the step anyway)")
  profile_steps: str = field("", "\"A,B\": trace training steps A to B (from 1) with TensorFlow's profiler into the "
                                 "run's TensorBoard directory (its Profile tab) and log where their time went: "
                                 "kernels per step, the device's busy share, the costliest kind of work; from "
                                 "step 1 also where the first call's tracing and compilation went; \"\" for none")
  # TPU (reference names)
  use_tpu: bool = field(False, "run on a Cloud TPU (selects the TPU strategy)")
  num_tpu_cores: typing.Optional[int] = field(None, "TPU cores to replicate over (null = every core of the TPU); "
                                               "only with a TPU", min=1)
  tpu_job_name: typing.Optional[str] = field(None, "TPU job name")
  tpu_name: typing.Optional[str] = field(None, "Cloud TPU name or grpc address")
  tpu_zone: typing.Optional[str] = field(None, "Cloud TPU zone")
  gcp_project: typing.Optional[str] = field(None, "GCP project")

  def uses_tpu(self) -> bool:
    """Whether ``runtime.select_strategy`` picks the TPU strategy."""
    return self.strategy == "tpu" or (self.strategy == "auto" and bool(self.use_tpu or self.tpu_name))

  def profile_window(self) -> typing.Optional[typing.Tuple[int, int]]:
    """``profile_steps`` as (first, last) training step to trace, both from 1 and included; None for "".
    "A,B" or "A" (one step)."""
    text = (self.profile_steps or "").strip()
    if not text:
      return None
    parts = [p.strip() for p in text.split(",")]
    try:
      first, last = (int(parts[0]), int(parts[-1])) if len(parts) <= 2 else (0, -1)
    except ValueError:
      first, last = 0, -1
    if not 1 <= first <= last:
      raise HParamError(f"profile_steps is {text!r}; give the first and last training step to trace as \"A,B\" "
                        "with 1 <= A <= B (e.g. \"101,105\"), or \"\" for none")
    return first, last

  def check_runtime(self):
    self.profile_window()  # one line if it is not "A,B"
    # The TPU estimator's num_shards; without a TPU there is nothing for it to set.
    if self.num_tpu_cores is not None and not self.uses_tpu():
      raise HParamError(f"num_tpu_cores is {self.num_tpu_cores} but this run uses no TPU; it applies with "
                        "use_tpu / tpu_name (or strategy tpu): drop it, or name the TPU")
    return self


# Gradient accumulation (both jobs): the step is over the global batch, computed in micro-batches.
ACCUMULATION_HELP = ("micro-batches per step: each is train_batch_size / N examples, their gradients are summed, "
                     "clipped and applied once, so the step equals one over the whole batch (with "
                     "per_example_dropout); trades speed for memory")
PER_EXAMPLE_DROPOUT_HELP = ("dropout masks keyed by (seed, step, the example's global row), the same under any "
                            "gradient_accumulation_steps, replica count or use_xla, and fused by XLA; false draws "
                            "TensorFlow's Philox per replica instead (its masks change with the replica count and "
                            "under XLA); always on when gradient_accumulation_steps > 1")


def check_accumulation(cfg):
  """One line if the global batch does not split into ``gradient_accumulation_steps`` micro-batches."""
  if cfg.train_batch_size % cfg.gradient_accumulation_steps:
    raise HParamError(f"train_batch_size {cfg.train_batch_size} is not divisible by gradient_accumulation_steps "
                      f"{cfg.gradient_accumulation_steps} (each micro-batch is train_batch_size / "
                      "gradient_accumulation_steps examples); use a batch that is a multiple of it")
  return cfg


def uses_per_example_dropout(cfg) -> bool:
  """Whether dropout is keyed per example (asked for, or implied by accumulation)."""
  return cfg.per_example_dropout or cfg.gradient_accumulation_steps > 1


@dataclasses.dataclass
class PretrainingConfig(RuntimeConfig):
  """Every pre-training option of the reference (section 2 of the spec) plus this port's additions."""
  # Written into model_dir by every run, so that its checkpoints can be read without the command line.
  SAVED_CONFIG_FILE: typing.ClassVar[str] = "pretraining_config.json"
  model_name: str = field("electra_small", "model directory name under <data_dir>/models")
  data_dir: str = field("", "root holding pretrain_tfrecords/, vocab.txt and models/")
  debug: bool = field(False, "tiny model, few steps (reference debug mode)")
  do_train: bool = field(True, "pre-train")
  do_eval: bool = field(False, "evaluate generator and discriminator")

  # objectives
  electra_objective: bool = field(True, "replaced token detection; false gives BERT-style MLM")
  electric_objective: bool = field(False, "ELECTRIC (energy-based cloze) objective")
  gen_weight: float = field(1.0, "weight of the generator (MLM) loss", min=0.0)
  disc_weight: float = field(50.0, "weight of the discriminator loss", min=0.0)
  mask_prob: float = field(0.15, "fraction of tokens masked", min=0.0, max=1.0, min_exclusive=True)

  # optimisation
  learning_rate: float = field(5e-4, "peak learning rate", min=0.0)
  lr_decay_power: float = field(1.0, "polynomial decay power (1 = linear)", min=0.0)
  weight_decay_rate: float = field(0.01, "decoupled weight decay", min=0.0)
  num_warmup_steps: int = field(10000, "steps of multiplicative warmup", min=0)
  adam_bias_correction: bool = field(False, "Adam's bias correction (not the reference's; steadies short "
                                     "runs, see docs/short_runs.md)")
  short_run_recipe: bool = field(False, "set learning_rate, num_warmup_steps, adam_bias_correction and the "
                                 "generator's temperature from num_train_steps by the measured short-run rule "
                                 "(on for --model-size tiny; values you give win)")

  # loop
  iterations_per_loop: int = field(200, "steps per compiled call", min=1)
  save_checkpoints_steps: int = field(1000, "checkpoint interval in steps", min=1)
  num_train_steps: int = field(1000000, "total training steps (the LR reaches 0 here)", min=1)
  num_eval_steps: int = field(100, "batches per evaluation", min=1)
  keep_checkpoint_max: int = field(5, "checkpoints kept", min=1)

  # model
  model_size: str = field("small", "transformer size", choices=MODEL_SIZES)
  model_hparam_overrides: dict = field(None, "overrides of ModelConfig fields", default_factory=dict)
  embedding_size: typing.Optional[int] = field(None, "embedding width (null = hidden; 128 for small)", min=1)
  vocab_size: int = field(30522, "vocabulary size", min=1)
  do_lower_case: bool = field(True, "lowercase input text")

  # generator
  uniform_generator: bool = field(False, "generator samples uniformly at random")
  two_tower_generator: bool = field(False, "two-tower cloze generator (forced on for ELECTRIC)")
  untied_generator_embeddings: bool = field(False, "generator gets its own embedding tables")
  untied_generator: bool = field(True, "generator has its own transformer weights")
  generator_layers: float = field(1.0, "generator depth as a fraction of the discriminator's", min=0.0,
                                  min_exclusive=True)
  generator_hidden_size: float = field(0.25, "generator width as a fraction of the discriminator's",
                                       min=0.0, min_exclusive=True)
  disallow_correct: bool = field(False, "never sample the original token")
  temperature: float = field(1.0, "generator sampling temperature", min=0.0, min_exclusive=True)

  # batches
  max_seq_length: int = field(128, "tokens per example", min=5, max=512)
  train_batch_size: int = field(128, "global training batch", min=1)
  eval_batch_size: int = field(128, "global evaluation batch", min=1)
  gradient_accumulation_steps: int = field(1, ACCUMULATION_HELP, min=1)
  per_example_dropout: bool = field(True, PER_EXAMPLE_DROPOUT_HELP)

  # paths (derived from data_dir / model_name unless given)
  pretrain_tfrecords: typing.Optional[str] = field(None, "comma-separated TFRecord globs")
  vocab_file: typing.Optional[str] = field(None, "WordPiece vocab (or a SentencePiece .model)")
  model_dir: typing.Optional[str] = field(None, "checkpoints and results")
  results_txt: typing.Optional[str] = field(None, "evaluation results, text")
  results_pkl: typing.Optional[str] = field(None, "evaluation results, pickle")

  # additions of this port (not in the reference)
  seed: int = field(0, "seed for initialisation, masking, sampling and dropout", min=0)
  init_checkpoint: typing.Optional[str] = field(None, "initialise weights only (fresh optimizer and step)")
  eval_every_steps: int = field(0, "also evaluate on the held-out split every N steps (0 = never)", min=0)
  log_every_steps: int = field(0, "extra log lines within a loop (0 = one per loop)", min=0)
  stop_on_collapse: bool = field(False, "stop (exit 2, keeping the last checkpoint) when the discriminator "
                                 "collapses to a constant; it is always reported (docs/short_runs.md)")
  # Opt-in: by default a corrupt record stops the run naming its shard, so bad data is never trained on
  # silently; this trades the lost records (counted from metadata.json) for finishing the run.
  skip_bad_records: bool = field(False, "skip TFRecords that cannot be read or parsed (the rest of their shard "
                                 "too) instead of stopping; each shard that loses records is reported")
  max_predictions_per_seq: int = field(19, "derived: int((mask_prob + 0.005) * max_seq_length)", min=1)

  @classmethod
  def create(cls, model_name: str = "electra_small", data_dir: str = "", preset: typing.Optional[str] = None,
             **overrides) -> "PretrainingConfig":
    """Builds a config the reference's way: overrides, size/debug defaults, overrides again."""
    if "max_predictions_per_seq" in overrides:
      raise HParamError("hparam 'max_predictions_per_seq' is derived from mask_prob and max_seq_length "
                        "and cannot be set")
    if preset is not None and preset not in PRESETS:
      raise HParamError(f"model size {preset!r} is not one of {', '.join(PRESETS)}")
    cfg = cls(model_name=model_name, data_dir=data_dir)
    if preset is not None:
      cfg.model_size = "small" if preset == "small++" else preset
    cfg.update(overrides)
    if cfg.debug:
      cfg.train_batch_size, cfg.num_train_steps, cfg.eval_batch_size = 8, 20, 4
      cfg.iterations_per_loop, cfg.num_eval_steps = 1, 2
    presets.apply_pretraining_size_defaults(cfg, preset or cfg.model_size)
    cfg.update(overrides)
    if cfg.short_run_recipe:
      presets.apply_short_run_recipe(cfg, given=overrides)
    if cfg.electric_objective:
      cfg.two_tower_generator = True
    cfg.max_predictions_per_seq = int((cfg.mask_prob + 0.005) * cfg.max_seq_length)
    cfg._derive_paths()
    check_accumulation(cfg)
    cfg.generator_config()  # model_hparam_overrides checked now, not when the networks are built
    return cfg.check_runtime()

  def _derive_paths(self):
    self.pretrain_tfrecords = self.pretrain_tfrecords or os.path.join(
        self.data_dir, "pretrain_tfrecords", "pretrain_data.tfrecord*")
    self.vocab_file = self.vocab_file or os.path.join(self.data_dir, "vocab.txt")
    self.model_dir = self.model_dir or os.path.join(self.data_dir, "models", self.model_name)
    results = os.path.join(self.model_dir, "results")
    self.results_txt = self.results_txt or os.path.join(results, "unsup_results.txt")
    self.results_pkl = self.results_pkl or os.path.join(results, "unsup_results.pkl")

  def discriminator_config(self) -> ModelConfig:
    overrides = dict(self.model_hparam_overrides)
    if self.debug:  # the reference's debug model
      overrides = {"num_hidden_layers": 3, "hidden_size": 144, "intermediate_size": 576,
                   "num_attention_heads": 4, **overrides}
    return model_config_for_size(self.model_size, self.vocab_size, self.embedding_size, overrides)

  def generator_config(self) -> ModelConfig:
    disc = self.discriminator_config()
    if not self.untied_generator or not (self.electra_objective or self.electric_objective):
      return disc  # one full-size network does both jobs
    gen = generator_model_config(disc, self.generator_hidden_size, self.generator_layers)
    if self.untied_generator_embeddings:  # its own tables at its own width, so no projection
      gen.embedding_size = gen.hidden_size
    return gen


@dataclasses.dataclass
class FinetuningConfig(RuntimeConfig):
  """Every fine-tuning option of the reference (section 5 of the spec) plus this port's additions."""
  model_name: str = field("electra_small", "pre-trained model name under <data_dir>/models", per_run=True)
  data_dir: str = field("", "root holding finetuning_data/, vocab.txt and models/", per_run=True)
  debug: bool = field(False, "tiny runs")
  log_examples: bool = field(False, "log the first featurized example of each task and split (on in debug)",
                             per_run=True)
  num_trials: int = field(1, "runs with different seeds (negative = forever)", per_run=True)
  keep_all_models: bool = field(True, "keep every trial's model", per_run=True)
  do_train: bool = field(True, "fine-tune")
  do_eval: bool = field(True, "evaluate on dev", per_run=True)

  model_size: str = field("small", "transformer size", choices=MODEL_SIZES)
  model_hparam_overrides: dict = field(None, "overrides of ModelConfig fields", default_factory=dict)
  embedding_size: typing.Optional[int] = field(None, "embedding width (null = hidden; 128 for small)", min=1)
  vocab_size: int = field(30522, "vocabulary size", min=1)
  do_lower_case: bool = field(True, "lowercase input text")

  learning_rate: float = field(1e-4, "peak learning rate", min=0.0, per_run=True)
  weight_decay_rate: float = field(0.01, "decoupled weight decay", min=0.0)
  layerwise_lr_decay: float = field(0.8, "per-layer LR decay (0 disables)", min=0.0, max=1.0)
  num_train_epochs: float = field(3.0, "epochs", min=0.0, min_exclusive=True, per_run=True)
  warmup_proportion: float = field(0.1, "warmup as a fraction of steps", min=0.0, max=1.0)
  save_checkpoints_steps: int = field(1000000, "also save the trial's model every N steps (it is always saved "
                                      "at the end)", min=1)
  iterations_per_loop: int = field(1000, "training steps per compiled call (1 in debug)", min=1)
  use_tfrecords_if_existing: bool = field(False, "the reference's TFRecord cache: features are built in memory "
                                          "for each run here, so only false is accepted")

  write_test_outputs: bool = field(False, "write test-set predictions", per_run=True)
  n_writes_test: int = field(5, "trials that write test predictions", min=0, per_run=True)

  task_names: typing.List[str] = field(None, "tasks to train jointly", default_factory=lambda: ["chunk"])
  max_seq_length: int = field(128, "tokens per example", min=5, max=512)
  train_batch_size: int = field(32, "global training batch", min=1)
  gradient_accumulation_steps: int = field(1, ACCUMULATION_HELP, min=1)
  per_example_dropout: bool = field(True, PER_EXAMPLE_DROPOUT_HELP)
  eval_batch_size: int = field(32, "evaluation batch", min=1)
  predict_batch_size: int = field(32, "prediction batch", min=1)
  double_unordered: bool = field(True, "add swapped pairs for MRPC and STS")

  max_query_length: int = field(64, "QA question tokens", min=1)
  doc_stride: int = field(128, "QA document stride", min=1)
  n_best_size: int = field(20, "QA n-best", min=1)
  max_answer_length: int = field(30, "QA longest answer (tokens)", min=1)
  answerable_classifier: bool = field(True, "QA answerability head")
  answerable_uses_start_logits: bool = field(True, "answerability head reads the start distribution")
  answerable_weight: float = field(0.5, "weight of the answerability loss", min=0.0)
  joint_prediction: bool = field(True, "end prediction conditioned on the start")
  beam_size: int = field(20, "QA beam over starts and ends", min=1)
  qa_na_threshold: float = field(-2.75, "SQuAD 2.0 no-answer threshold on null odds")

  # paths
  vocab_file: typing.Optional[str] = field(None, "vocab (default models/<model>/vocab.txt, else vocab.txt)",
                                           per_run=True)
  init_checkpoint: typing.Optional[str] = field(None, "checkpoint to start from (default models/<model>)", per_run=True)
  reinit_embeddings: bool = field(False, "keep the encoder's embedding layer (word, position and token-type "
                                  "embeddings, their LayerNorm) at its fresh initialisation instead of loading "
                                  "it from init_checkpoint; for short pre-training runs (docs/short_runs.md)",
                                  per_run=True)
  raw_data_dir: typing.Optional[str] = field(None, "default <data_dir>/finetuning_data", per_run=True)

  # additions of this port
  seed: int = field(0, "base seed; trial t uses seed + t", min=0, per_run=True)
  data_source: str = field("files", "where task data comes from", choices=("files", "tfds"))
  eval_every_epoch: bool = field(False, "evaluate on dev after every epoch", per_run=True)
  length_bucket_width: int = field(0, "opt-in: batch training examples of similar length together, each batch "
                                   "cut to a multiple of this many tokens (0: the reference's batches of "
                                   "max_seq_length tokens in stream order; docs/finetuning.md)", min=0)
  tfds_data_dir: typing.Optional[str] = field(None, "tensorflow-datasets data_dir (null = its default)", per_run=True)
  skip_bad_rows: bool = field(False, "log and skip malformed data rows (the reference's behaviour) "
                              "instead of stopping with the file and line", per_run=True)

  # a task from the user's own files (docs/your_task.md)
  train_file: typing.Optional[str] = field(None, "your training file (.csv, .tsv, .jsonl, SQuAD .json or CoNLL "
                                           ".txt); the task is then the one task_names names")
  dev_file: typing.Optional[str] = field(None, "your dev file, scored and reported (same format as train_file)")
  test_file: typing.Optional[str] = field(None, "your test file: predictions written, labels optional")
  task_type: str = field("auto", "what your task is (auto: inferred from the training file)",
                         choices=USER_TASK_TYPES)
  text_column: typing.Optional[str] = field(None, "the text column (default 'text' or 'sentence')")
  text_pair_column: typing.Optional[str] = field(None, "the second text of a pair task")
  label_column: typing.Optional[str] = field(None, "the label column (default 'label')")
  label_separator: typing.Optional[str] = field(None, "multi-label: the separator between a cell's labels")
  tokens_column: typing.Optional[str] = field(None, "tagging in JSON Lines: the word-list column (default "
                                              "'tokens')")
  tags_column: typing.Optional[str] = field(None, "tagging in JSON Lines: the tag-list column (default 'tags')")
  id_column: typing.Optional[str] = field(None, "a column copied into each prediction (default: the line "
                                          "number)")
  validation_size: float = field(0.1, "the validation split carved from the training data (a fraction below 1, "
                                 "else a count): what keep_best_model, search and the baselines choose on",
                                 min=0.0, min_exclusive=True)
  validation_seed: int = field(0, "seed of the validation carving (the same for every trial)", min=0)
  evaluate_on: str = field("dev", "score dev, or the validation split carved from training (the network then "
                           "trains on the rest)", choices=("dev", "validation"))
  keep_best_model: bool = field(False, "evaluate on the validation split after every epoch, keep the best "
                                "epoch's weights (the network trains on the rest of the training data)")
  early_stopping_patience: int = field(0, "with keep_best_model: stop after this many evaluations without "
                                       "improvement (0: train every epoch)", min=0)
  baselines: bool = field(True, "fit the majority class and TF-IDF + logistic regression (classification), or a "
                          "most-frequent-tag lookup (tagging), beside the network on a task from your files")

  @classmethod
  def create(cls, model_name: str = "electra_small", data_dir: str = "", **overrides) -> "FinetuningConfig":
    cfg = cls(model_name=model_name, data_dir=data_dir)
    cfg.update(overrides)
    presets.apply_finetuning_defaults(cfg)
    if cfg.debug:
      cfg.num_train_epochs, cfg.train_batch_size, cfg.eval_batch_size = 1.0, 8, 8
      cfg.iterations_per_loop, cfg.log_examples = 1, True  # as the reference's debug mode
    cfg.update(overrides)
    if cfg.use_tfrecords_if_existing:
      raise HParamError("use_tfrecords_if_existing: fine-tuning keeps no TFRecord cache to reuse (features are "
                        "built in memory for each run, a few seconds at GLUE scale); drop it or set it false")
    cfg.raw_data_dir = cfg.raw_data_dir or os.path.join(data_dir, "finetuning_data")
    pretrained = os.path.join(data_dir, "models", model_name)
    if cfg.vocab_file is None:
      own_vocab = os.path.join(pretrained, "vocab.txt")
      cfg.vocab_file = own_vocab if os.path.exists(own_vocab) else os.path.join(data_dir, "vocab.txt")
    cfg.init_checkpoint = cfg.init_checkpoint or pretrained
    if cfg.early_stopping_patience and not cfg.keep_best_model:
      raise HParamError("early_stopping_patience needs keep_best_model (it counts evaluations on the validation "
                        "split); set keep_best_model true or drop it")
    check_accumulation(cfg)
    cfg.model_config()  # model_hparam_overrides checked now, not when the model is built
    return cfg.check_runtime()

  @property
  def model_dir(self) -> str:
    return os.path.join(self.data_dir, "models", self.model_name)

  @property
  def results_dir(self) -> str:
    """``<tasks>_results.{txt,json,pkl}`` and QA outputs (the reference's ``results_dir``)."""
    return os.path.join(self.model_dir, "results")

  def model_config(self) -> ModelConfig:
    return model_config_for_size(self.model_size, self.vocab_size, self.embedding_size,
                                 self.model_hparam_overrides)


# --- parameter counts and the start-up summary -------------------------------------------------------------

def embedding_parameters(cfg: ModelConfig) -> int:
  e = cfg.embedding_size
  return (cfg.vocab_size + cfg.max_position_embeddings + cfg.type_vocab_size) * e + 2 * e


def encoder_parameters(cfg: ModelConfig, include_embeddings: bool = True) -> int:
  """Parameters of the transformer (plus the E->H projection; plus the embeddings if asked)."""
  h, i, e = cfg.hidden_size, cfg.intermediate_size, cfg.embedding_size
  per_layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
  total = cfg.num_hidden_layers * per_layer + (e * h + h if e != h else 0)
  return total + (embedding_parameters(cfg) if include_embeddings else 0)


def discriminator_head_parameters(cfg: ModelConfig) -> int:
  return cfg.hidden_size * cfg.hidden_size + cfg.hidden_size + cfg.hidden_size + 1


def generator_head_parameters(gen: ModelConfig, embedding_size: int) -> int:
  return gen.hidden_size * embedding_size + embedding_size + 2 * embedding_size + gen.vocab_size


def pretraining_summary(cfg: PretrainingConfig) -> str:
  """The start-up lines: generator and discriminator dimensions and parameter counts."""
  disc, gen = cfg.discriminator_config(), cfg.generator_config()

  def dims(c: ModelConfig) -> str:
    return (f"L={c.num_hidden_layers} H={c.hidden_size} heads={c.num_attention_heads} "
            f"FFN={c.intermediate_size} E={c.embedding_size} vocab={c.vocab_size}")

  d_params = encoder_parameters(disc) + discriminator_head_parameters(disc)
  lines = [f"discriminator: {dims(disc)}  params={d_params:,}"]
  if not cfg.electra_objective and not cfg.electric_objective:
    mlm = encoder_parameters(disc) + generator_head_parameters(disc, disc.embedding_size)
    lines = [f"MLM model (BERT objective): {dims(disc)}  params={mlm:,}"]
  elif not cfg.untied_generator:
    lines.append("generator: shares the discriminator's transformer (untied_generator=false)")
  else:
    towers = 2 if cfg.two_tower_generator else 1
    g_own = towers * encoder_parameters(gen, include_embeddings=cfg.untied_generator_embeddings)
    g_own += generator_head_parameters(gen, gen.embedding_size)
    lines.append(f"generator: L={gen.num_hidden_layers} H={gen.hidden_size} heads={gen.num_attention_heads} "
                 f"FFN={gen.intermediate_size}{' x2 (two towers)' if towers == 2 else ''}  own params={g_own:,}"
                 f"{'' if cfg.untied_generator_embeddings else ' (embeddings shared with the discriminator)'}")
  if cfg.short_run_recipe:
    used = {k: getattr(cfg, k) for k in presets.short_run_settings(cfg.num_train_steps, cfg.model_size)}
    lines.append(f"short-run recipe: {presets.describe_short_run_settings(used)} (docs/short_runs.md)")
  note = presets.short_run_note(cfg)
  if note:
    lines.append(note)
  return "\n".join(lines)
