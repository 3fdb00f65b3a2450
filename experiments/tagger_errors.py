"""Where a fine-tuned POS tagger loses to the lookup tagger: word accuracy on its own training set and on the
validation split, split into known and unknown words and proper nouns, beside the most-frequent-tag lookup on
the words as written and lowercased, and keyed by each word's first word piece (the piece the tagger's head reads:
what a model that ignored the context would know).

    python experiments/tagger_errors.py --data-dir runs/pc_1200/data \\
        --pretrained electra=runs/pc_1200/data/models/pt_electra_lr1e-3_s1200 --method electra \\
        --learning-rate 1e-3 --epochs 4 --pos-bucket-width 16
    python experiments/tagger_errors.py --quick          # smoke version (tests/test_experiment_smoke.py)

The subsets are ``experiments/label_efficiency.py``'s (``--validation-size``, ``--split-seed``, the same files);
one fine-tune with ``--seed`` (the selection seed by default), scored on the training subset and on the
validation split only (dev is never read). Every figure counts the words the model scores: a sentence longer
than ``max_seq_length`` word pieces loses its last words, for the lookups too, and their number is reported.
*Known*: the word, lowercased, occurs in the training subset. Writes ``<work>/tagger_errors_<name>.json`` and
prints a Markdown table.
"""

import argparse
import collections
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# pylint: disable=wrong-import-position
import label_efficiency as le
from electra_tf.finetuning import baselines
from electra_tf.finetuning.run import FinetuningRun, load_encoder
from electra_tf.finetuning.tagging import tokenize_and_align
from electra_tf.finetuning.trainer import Trainer, num_train_steps
from units import write_json

SPLITS = {"train": "the training subset", "dev": "validation"}  # the validation root's dev file is validation


def breakdown(sentences, guesses, known) -> dict:
  """Word accuracy (%) of ``guesses`` (a tag list per sentence) over ``sentences`` [(words, gold tags)], overall
  and on known words, unknown words and gold NNP words; with the share of known words."""
  right, count = collections.Counter(), collections.Counter()
  for (words, tags), guessed in zip(sentences, guesses):
    for word, gold, guess in zip(words, tags, guessed):
      for group in ("all", "known" if word.lower() in known else "unknown") + (("NNP",) if gold == "NNP" else ()):
        count[group] += 1
        right[group] += guess == gold
  out = {g: round(100.0 * right[g] / count[g], 2) if count[g] else None for g in ("all", "known", "unknown", "NNP")}
  out["known_share"] = round(100.0 * count["known"] / max(1, count["all"]), 2)
  out["words"] = count["all"]
  return out


def first_pieces(tokenizer, words) -> list:
  """Each word's first word piece, as the tagging task aligns them (``[CLS]`` and ``[SEP]`` dropped)."""
  return [pieces[0] if pieces else "[UNK]" for pieces in tokenize_and_align(tokenizer, words)[1:-1]]


def run(args) -> dict:
  d = le.subset_dirs(args, "pos", None)
  name = f"{args.method}_lr{args.learning_rate:g}_ep{args.epochs:g}_seed{args.seed}"
  cfg = le.config_factory(args, "pos", args.method, f"tagger_errors_{name}")(
      learning_rate=args.learning_rate, num_train_epochs=args.epochs, seed=args.seed,
      raw_data_dir=d["validation_root"], keep_all_models=False)
  job = FinetuningRun(cfg, progress=False)
  trainer = Trainer(cfg, job.tasks, job.strategy, args.seed)
  if job.init_checkpoint:
    load_encoder(trainer.model, job.init_checkpoint)
  arrays = job.data.train_arrays()
  n = len(arrays["task_id"])
  trainer.train(arrays, num_train_steps(n, cfg.train_batch_size, cfg.num_train_epochs),
                max(1, n // cfg.train_batch_size), progress=False)
  task = job.tasks[0]
  tag_of = {i: t.split("-", 1)[-1] for t, i in task.label_mapping().items()}  # one-word BIOES spans: S-NN -> NN
  train = [(e.words, e.tags) for e in task.get_examples("train")]
  known = {w.lower() for words, _ in train for w in words}
  taggers = {"lookup": baselines.MostFrequentTagger().fit(train),
             "lookup_lowercase": baselines.MostFrequentTagger(lowercase=True).fit(train)}
  by_piece = baselines.MostFrequentTagger().fit((first_pieces(task.tokenizer, w), t) for w, t in train)
  result = {"method": args.method, "setting": {"learning_rate": args.learning_rate, "epochs": args.epochs},
            "seed": args.seed, "length_bucket_width": args.pos_bucket_width, "vocab_file": cfg.vocab_file,
            "splits": {}}
  for split in SPLITS:
    outs = trainer.predict(job.data.eval_arrays(task, split, cfg.eval_batch_size), cfg.eval_batch_size)[task.name]
    examples = {e.eid: e for e in task.get_examples(split)}
    scored, model_tags, per_sentence = [], [], {}
    for eid, predicted, mask in zip(outs["eid"], outs["predictions"], outs["labels_mask"]):
      example, k = examples[int(eid)], int(mask.sum())
      scored.append((example.words[:k], example.tags[:k]))
      model_tags.append([tag_of[int(p)] for p in predicted[:k]])
      per_sentence[int(eid)] = k
    rows = {"model": breakdown(scored, model_tags, known)}
    rows.update({t: breakdown(scored, [tagger.tag(words) for words, _ in scored], known)
                 for t, tagger in taggers.items()})
    rows["lookup_first_piece"] = breakdown(
        scored, [by_piece.tag(first_pieces(task.tokenizer, words)) for words, _ in scored], known)
    result["splits"][split] = {
        "rows": rows,
        "words_beyond_max_seq_length": sum(len(e.words) for e in examples.values()) - sum(per_sentence.values()),
        "scored_words_per_sentence": [per_sentence[eid] for eid in sorted(per_sentence)]}
  result["path"] = os.path.join(args.work_dir, f"tagger_errors_{name}.json")
  write_json(result["path"], result)
  return result


def markdown(result) -> str:
  lines = ["| split | tagger | words | all | known words (share) | unknown words | NNP |",
           "|---|---|---:|---:|---:|---:|---:|"]
  names = {"model": f"{le.label(result['method'])} fine-tuned", "lookup": le.label("lookup"),
           "lookup_lowercase": le.label("lookup_lowercase"),
           "lookup_first_piece": "most-frequent tag of the first word piece"}
  fmt = lambda v: "-" if v is None else f"{v:.1f}"
  for split, data in result["splits"].items():
    for tagger, r in data["rows"].items():
      lines.append(f"| {SPLITS[split]} | {names[tagger]} | {r['words']:,} | {fmt(r['all'])} | {fmt(r['known'])} "
                   f"({r['known_share']:.1f}%) | {fmt(r['unknown'])} | {fmt(r['NNP'])} |")
  cut = ", ".join(f"{SPLITS[s]} {d['words_beyond_max_seq_length']}" for s, d in result["splits"].items())
  return "\n".join(lines) + f"\n\nWords beyond max_seq_length (not scored): {cut}.\n"


def parse_args(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--method", default="none", help="a --pretrained NAME, or none (random weights)")
  p.add_argument("--learning-rate", type=float, default=1e-3)
  p.add_argument("--epochs", type=float, default=4.0)
  p.add_argument("--seed", type=int, default=0)
  own, rest = p.parse_known_args(argv)
  quick = "--quick" in rest
  args = le.parse_args(rest + ([] if quick or "--work-dir" in rest else
                               ["--work-dir", os.path.join(REPO, "runs", "tagger_errors")]))
  args.method, args.learning_rate, args.epochs, args.seed = own.method, own.learning_rate, own.epochs, own.seed
  if args.method != "none" and args.method not in args.pretrained:
    p.error(f"--method {args.method}: give --pretrained {args.method}=MODEL_DIR, or --method none")
  if quick:  # the first 300 training and 100 dev sentences
    small = os.path.join(args.work_dir, "pos")
    os.makedirs(small, exist_ok=True)
    for split, n in (("train", 300), ("dev", 100)):
      with open(os.path.join(args.pos_dir, f"{split}.txt"), encoding="utf-8") as f:
        sentences = f.read().split("\n\n")[:n]
      with open(os.path.join(small, f"{split}.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(sentences) + "\n")
    args.pos_dir, args.validation_size, args.epochs = small, 50, 1.0
  return args


def main(argv=None) -> int:
  args = parse_args(argv)
  result = run(args)
  print(markdown(result), end="")
  print(json.dumps({"written": result["path"]}))
  return 0


if __name__ == "__main__":
  sys.exit(main())
