"""Why a short run's discriminator slides to "everything is original": a measurement, per checkpoint.

Hypothesis: early in a run the generator samples close to uniformly, so a replaced token is usually a
rare one, and the token's identity alone tells a replacement apart. Once the generator has learnt the
unigram distribution (masked-LM accuracy ~0.045: it predicts "the"), a token v shows up as a replacement
in proportion to how often it occurs anyway, P(replaced | v) is the same for every v, and only context
can tell. A discriminator that has not yet learnt contextual features then falls to the constant.

For each checkpoint of a ``run_pretraining.py`` run (and the networks at initialisation, step 0) this
script evaluates on held-out data:

* ``identity_auc``: the AUC of the best context-free detector, which scores a token by the replaced rate
  of its id (estimated on half of the batches, scored on the other half): how much the token's identity
  alone tells, given that checkpoint's generator;
* ``disc_auc_real``: the discriminator's AUC over real tokens, as in the evaluation;
* both again with uniform replacements in place of the generator's (``*_uniform``): whether the
  discriminator can still spot replacements that its identity cue does give away.

    .venv/bin/python experiments/identity_cue_check.py --model-dir sample_run/models/electra_sample \\
        --batches 20 --out docs/experiments/identity_cue.json
"""

import argparse
import dataclasses
import glob
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

# pylint: disable=wrong-import-position
import numpy as np
import tensorflow as tf
from sklearn.metrics import roc_auc_score

from electra_tf.convert import checkpoints as ckpt
from electra_tf.pretrain_data import dataset, inputs
from electra_tf.pretraining import masking, objective


def checkpoints(model_dir: str):
  """(step, prefix) of every checkpoint the run kept, oldest first; step 0 is initialisation (prefix None)."""
  found = []
  for index in glob.glob(os.path.join(model_dir, "ckpt-*.index")):
    prefix = index[:-len(".index")]
    found.append((int(prefix.rsplit("-", 1)[1]), prefix))
  return [(0, None)] + sorted(found)


def identity_auc(token_ids: np.ndarray, labels: np.ndarray, halves: np.ndarray) -> float:
  """Cross-fitted AUC of scoring a token by its id's replaced rate on the other half of the batches."""
  scores = np.zeros(len(labels))
  for h in (0, 1):
    fit, score = halves != h, halves == h
    replaced = np.bincount(token_ids[fit], weights=labels[fit], minlength=token_ids.max() + 1)
    seen = np.bincount(token_ids[fit], minlength=token_ids.max() + 1)
    prior = labels[fit].mean()
    rate = (replaced + prior) / (seen + 1.0)  # an unseen id gets the base rate
    scores[score] = rate[token_ids[score]]
  return float(roc_auc_score(labels, scores))


def measure(cfg, prefix, batches, seed):
  special = masking.SpecialIds.from_vocab_file(cfg.vocab_file, cfg.vocab_size)
  tf.keras.utils.set_random_seed(cfg.seed)  # step 0 = the run's own initialisation
  model = objective.PretrainingModel(cfg, special)
  uniform = objective.PretrainingModel(dataclasses.replace(cfg, uniform_generator=True), special)
  uniform.networks.discriminator = model.networks.discriminator  # the same discriminator, other samples
  nets = model.networks
  if prefix is not None:
    tf.train.Checkpoint(**nets.checkpoint_objects()).read(prefix).expect_partial()
  data = dataset.pretraining_dataset(inputs.heldout_patterns(cfg), cfg.max_seq_length, cfg.eval_batch_size,
                                     is_training=False, repeat=False)
  rows = {"generator": [], "uniform": []}
  for i, features in enumerate(data.take(batches)):
    for name, m in (("generator", model), ("uniform", uniform)):
      out = m.forward(features, seed, i, training=False)
      real = out["input_mask"].numpy().astype(bool)
      rows[name].append((out["fake_ids"].numpy()[real], out["disc_labels"].numpy()[real],
                         out["disc_probs"].numpy()[real], np.full(real.sum(), i % 2)))
  result = {}
  for name, parts in rows.items():
    ids, labels, probs, halves = (np.concatenate(p) for p in zip(*parts))
    suffix = "" if name == "generator" else "_uniform"
    result["replaced_share" + suffix] = round(float(labels.mean()), 4)
    result["identity_auc" + suffix] = round(identity_auc(ids, labels.astype(float), halves), 4)
    result["disc_auc_real" + suffix] = round(float(roc_auc_score(labels, probs)), 4)
  return result


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--model-dir", required=True, help="a run_pretraining.py model directory")
  parser.add_argument("--batches", type=int, default=20, help="held-out batches per checkpoint")
  parser.add_argument("--seed", type=int, default=1234, help="masking and sampling seed of the evaluation")
  parser.add_argument("--out", help="also write the rows as JSON here")
  args = parser.parse_args(argv)
  cfg = ckpt.read_pretraining_config(args.model_dir)
  cfg.model_dir = args.model_dir
  rows = []
  print("| step | replaced share | identity AUC | disc AUC (real) | identity AUC, uniform | disc AUC (real), uniform |")
  print("|---:|---:|---:|---:|---:|---:|")
  for step, prefix in checkpoints(args.model_dir):
    r = {"step": step, **measure(cfg, prefix, args.batches, args.seed)}
    rows.append(r)
    print(f"| {step} | {r['replaced_share']} | {r['identity_auc']} | {r['disc_auc_real']} | "
          f"{r['identity_auc_uniform']} | {r['disc_auc_real_uniform']} |", flush=True)
  if args.out:
    with open(args.out, "w", encoding="utf-8") as f:
      json.dump(rows, f, indent=2)


if __name__ == "__main__":
  main()
