"""``electra-convert`` or ``python -m electra_tf.convert`` {inspect, import-tf1, import-hf, import-keras-hub,
export-tf1, export-hf, export-keras-hub, export-savedmodel}.

Every input may be a reference TF1 checkpoint (prefix, ``.index`` or directory), a ``run_pretraining.py``
model directory (or one of its ``ckpt-<step>`` checkpoints), this project's model directory, a Hugging
Face directory, or a keras-hub ElectraBackbone preset; the format is detected. Outputs are written to a temporary
directory beside the destination and renamed into place. Bad input prints one ``error: ...`` line to
stderr and exits with status 2. See ``docs/interop.md``.
"""

import argparse
import json
import os
import typing

from electra_tf import fileio
from electra_tf.cli import common
from electra_tf.configs import FinetuningConfig
from electra_tf.convert import hf_mapping
from electra_tf.convert.formats import detect_format, holds, read_source
from electra_tf.convert.keras_hub_preset import write_preset
from electra_tf.convert.layout import HF, KERAS_HUB, TF1
from electra_tf.convert.vocab_files import SPM_FILE, VOCAB_FILE, check_vocab, vocab_kind
from electra_tf.convert.writers import hf_config, write_hf, write_model_dir, write_tf1
from electra_tf.errors import ConversionError, OutputExistsError
from electra_tf.finetuning import head_families
from electra_tf.serving import savedmodel


def _continue_hint(out: str, arch) -> str:
  hparams = dict(init_checkpoint=fileio.abspath(out), num_train_steps=10000,
                 learning_rate=2e-4, num_warmup_steps=0)
  if arch.size_name == "small++":
    hparams["generator_hidden_size"] = 1.0
  return ("continue pre-training (weights only; fresh optimizer and step) with e.g. --hparams '"
          + json.dumps(hparams) + "' plus the hparams above; fine-tune with --init-checkpoint " + out)


def cmd_inspect(args, log):
  source = read_source(args.path, args.generator)
  log(f"format: {source.format} ({source.path})")
  log(source.architecture.describe())
  log(f"pre-training hparams: {json.dumps(source.architecture.pretraining_hparams(), sort_keys=True)}")
  log(f"weights: {len(source.arrays)} pre-training, {len(source.extra)} task-specific; "
      f"ignored: {len(source.ignored)}" + (" (optimizer slots etc.)" if source.ignored else ""))
  for task, info in sorted(savedmodel.task_heads(source.extra).items()):
    log(f"fine-tuned head: {task} ({info['type']}, {info['num_outputs'] or '-'} outputs)")
  if source.global_step is not None:
    log(f"global_step: {source.global_step}")
  log(f"vocab: {source.vocab_file or 'none found'}")


def _import(args, log, generator=None):
  source = read_source(args.path, generator)
  if args.vocab:
    source.vocab_file = args.vocab
  if args.lower_case is not None:
    source.do_lower_case = args.lower_case
  write_model_dir(args.output, source, args.overwrite)
  arch = source.architecture
  log(arch.describe())
  if arch.size_name == "small++":
    log("note: the released ELECTRA-Small's generator is as wide as the discriminator (generator_hidden_size "
        "1.0, google-research/electra issue #39)")
  log(f"pre-training hparams: {json.dumps(arch.pretraining_hparams(), sort_keys=True)}")
  if source.vocab_file is None:
    log("warning: no vocab.txt or spiece.model found beside the checkpoint; pass --vocab to bundle it")
  log(f"wrote {args.output}")
  log(_continue_hint(args.output, arch))


def cmd_import_tf1(args, log):
  fmt, _ = detect_format(args.path)
  if fmt != TF1:
    raise ConversionError(f"{args.path} is a {fmt} checkpoint, not a reference TF1 one "
                               "(use import-hf for Hugging Face directories)")
  _import(args, log)


def cmd_import_hf(args, log):
  fmt, _ = detect_format(args.path)
  if fmt != HF:
    raise ConversionError(f"{args.path} is not a Hugging Face directory (config.json + model.safetensors)")
  _import(args, log, args.generator)


def cmd_import_keras_hub(args, log):
  if not holds(args.path, KERAS_HUB):
    raise ConversionError(f"{args.path} is not a keras-hub preset directory (config.json + model.weights.h5 "
                          "as backbone.save_to_preset writes them)")
  log("note: keras-hub's pooler (pooled_dense) has no ELECTRA counterpart and is left out; keras-hub computes "
      "GELU with the tanh approximation, electra-tf exactly as the reference (docs/interop.md)")
  _import(args, log)


def cmd_export_tf1(args, log):
  source = read_source(args.path)
  vocab = args.vocab or source.vocab_file
  check_vocab(vocab, source.architecture)
  prefix = write_tf1(args.output, {**source.arrays, **source.extra}, source.global_step or 0, vocab,
                     args.overwrite, architecture=source.architecture)
  log(f"wrote {prefix} ({len(source.arrays) + len(source.extra)} variables + global_step, no optimizer slots)")


def _hf_tokenizer_note(source) -> str:
  """Which transformers tokenizer the export's files load as (said once, since SentencePiece has no
  ELECTRA tokenizer class of its own)."""
  if not source.vocab_file:
    return "warning: no vocab bundled (none found beside the input); pass --vocab for the tokenizer files"
  if vocab_kind(source.vocab_file) == "sentencepiece":
    return (f"tokenizer: {SPM_FILE} with tokenizer_class AlbertTokenizer (transformers' SentencePiece "
            "tokenizer that builds ELECTRA's [CLS] a [SEP] b [SEP]; AutoTokenizer.from_pretrained loads it, with "
            "the sentencepiece library's ids; docs/interop.md)")
  return f"tokenizer: {VOCAB_FILE} with ElectraTokenizer"


def cmd_export_hf(args, log):
  source = read_source(args.path)
  if args.vocab:
    source.vocab_file = args.vocab
  log(_hf_tokenizer_note(source))
  arch, what = source.architecture, args.what
  heads = savedmodel.task_heads(source.extra)
  if what == "auto":
    what = "task" if heads and not arch.has_discriminator_head else "both"
  if what == "task":
    if not heads:
      raise ConversionError(f"{args.path} holds no fine-tuned head (task_specific/<task>/...)")
    task = args.task or (next(iter(heads)) if len(heads) == 1 else None)
    if task not in heads:
      raise ConversionError(f"choose a task with --task ({', '.join(sorted(heads))})")
    info = dict(name=task, **heads[task])
    info.update(savedmodel.task_defaults(task, info["type"], info["num_outputs"] or 1,
                                         FinetuningConfig.create(task_names=[task])))
    state, config, note = head_families.export_hf(source, task, info)
    write_hf(args.output, source, hf_mapping.DISCRIMINATOR, args.overwrite, state=state, config=config)
    log(f"wrote {args.output}: {note}")
    return
  if what == "encoder":
    state = {k: v for k, v in hf_mapping.to_hf_state_dict(source.arrays, hf_mapping.DISCRIMINATOR).items()
             if k.startswith("electra.")}
    write_hf(args.output, source, hf_mapping.DISCRIMINATOR, args.overwrite, state=state,
             config=hf_config(arch.discriminator, "ElectraModel"))
    log(f"wrote {args.output} (ElectraModel: the encoder only)")
    return
  targets = {"discriminator": [hf_mapping.DISCRIMINATOR], "generator": [hf_mapping.GENERATOR],
             "both": [hf_mapping.DISCRIMINATOR, hf_mapping.GENERATOR]}[what]
  if what == "both" and arch.generator is None:
    targets = [hf_mapping.DISCRIMINATOR]
    log("note: no generator weights in the source; exporting the discriminator only")
  outs = {t: os.path.join(args.output, t) if what == "both" else args.output for t in targets}
  for out in outs.values():  # all before any: never a discriminator written and then a generator refused
    if not args.overwrite and fileio.exists(out):
      raise OutputExistsError(f"{out} already exists; pass --overwrite to replace it")
  for target in targets:
    out = outs[target]
    write_hf(out, source, target, args.overwrite)
    cls = "ElectraForPreTraining" if target == hf_mapping.DISCRIMINATOR else "ElectraForMaskedLM"
    cfg = arch.discriminator if target == hf_mapping.DISCRIMINATOR else arch.generator
    log(f"wrote {out} ({cls}, L={cfg.num_hidden_layers} H={cfg.hidden_size} E={cfg.embedding_size})")


def cmd_export_keras_hub(args, log):
  source = read_source(args.path)
  if args.vocab:
    source.vocab_file = args.vocab
  if args.lower_case is not None:
    source.do_lower_case = args.lower_case
  info = write_preset(args.output, source, args.what, args.overwrite)
  cfg = info["config"]
  log(f"wrote {args.output}: keras-hub ElectraBackbone ({args.what}, L={cfg.num_hidden_layers} "
      f"H={cfg.hidden_size} E={cfg.embedding_size} heads={cfg.num_attention_heads}) and ElectraTokenizer "
      f"(lowercase and strip_accents {info['lowercase']}); pooled_output is tanh of the [CLS] vector "
      "(identity pooler, docs/interop.md)")


def cmd_export_savedmodel(args, log):
  labels = [l.strip() for l in args.labels.split(",")] if args.labels else None
  info = savedmodel.export_savedmodel(args.path, args.output, args.task, args.vocab, args.lower_case, args.max_seq_length,
                           labels, args.overwrite)
  inputs = ", ".join(info["inputs"])
  log(f"wrote {args.output}: task {info['name']} ({info['type']}), serving_default({inputs}) on raw strings, "
      f"max_seq_length {info['max_seq_length']}, lower_case {info['do_lower_case']}")


def build_parser(prog: typing.Optional[str] = None) -> argparse.ArgumentParser:
  parser = common.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
  sub = parser.add_subparsers(dest="command", required=True)

  def add(name, fn, help_, output=True):
    p = sub.add_parser(name, help=help_, description=help_)
    p.add_argument("path", help="input checkpoint or directory")
    if output:
      p.add_argument("--output", "-o", required=True, help="destination directory")
      p.add_argument("--overwrite", action="store_true", help="replace an existing destination")
    p.set_defaults(fn=fn)
    return p

  def casing(p):
    p.add_argument("--vocab", help="vocab.txt or SentencePiece .model (default: the one beside the input)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--lower-case", dest="lower_case", action="store_true", default=None,
                   help="the model is uncased (the released models are)")
    g.add_argument("--no-lower-case", dest="lower_case", action="store_false", help="the model is cased")

  p = add("inspect", cmd_inspect, "say what a checkpoint holds (format, sizes, heads, step)", output=False)
  p.add_argument("--generator", help="a Hugging Face generator directory to read with the discriminator")
  casing(add("import-tf1", cmd_import_tf1, "reference / Google-released TF1 checkpoint -> model directory"))
  p = add("import-hf", cmd_import_hf, "Hugging Face discriminator (+ --generator) -> model directory")
  p.add_argument("--generator", help="the matching ElectraForMaskedLM directory")
  casing(p)
  casing(add("import-keras-hub", cmd_import_keras_hub, "keras-hub ElectraBackbone preset -> model directory"))
  p = add("export-tf1", cmd_export_tf1, "any input -> the reference's TF1 layout (model.ckpt-<step>)")
  p.add_argument("--vocab", help="vocab.txt or SentencePiece .model to copy beside the checkpoint")
  p = add("export-hf", cmd_export_hf, "any input -> Hugging Face config.json + model.safetensors")
  p.add_argument("--what", default="auto", choices=("auto", "both", "discriminator", "generator", "encoder", "task"),
                 help="auto: a fine-tuned task head if there is one, else discriminator/ and generator/")
  p.add_argument("--task", help="which fine-tuned task (when the checkpoint holds several)")
  p.add_argument("--vocab", help="vocab.txt or SentencePiece .model to bundle (default: the one beside the "
                 "input)")
  p = add("export-keras-hub", cmd_export_keras_hub,
          "any input -> keras-hub preset (ElectraBackbone + ElectraTokenizer, from_preset loads it)")
  p.add_argument("--what", default="discriminator", choices=("discriminator", "generator"),
                 help="which encoder the preset holds (keras-hub has no pre-training heads)")
  casing(p)
  p = add("export-savedmodel", cmd_export_savedmodel, "fine-tuned classifier/QA -> SavedModel serving raw strings")
  p.add_argument("--task", help="which fine-tuned task (when the checkpoint holds several)")
  p.add_argument("--max-seq-length", type=int, help="default: the task's (128; 512 for QA)")
  p.add_argument("--labels", help="comma-separated label names (default: the task's label list)")
  casing(p)
  return parser


def main(argv=None, prog: typing.Optional[str] = None) -> int:
  """``prog``: the command's name in usage lines (default: the program run, e.g. ``electra-convert``)."""
  args = build_parser(prog).parse_args(argv)
  return common.run_cli(lambda: args.fn(args, lambda msg: print(msg, flush=True)))
