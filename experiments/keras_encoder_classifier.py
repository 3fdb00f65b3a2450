"""The docs/interop.md example: a sentence classifier built in plain Keras around ``electra_tf.load_encoder``
and trained with ``model.fit``, on Rotten Tomatoes (the GLUE SST-2 layout under ``$ELECTRA_TEST_DATA``).

    python experiments/keras_encoder_classifier.py MODEL [--epochs 1] [--max-seq-length 64]
    python experiments/keras_encoder_classifier.py --fresh-tiny VOCAB    # the tiny preset, random weights

MODEL: anything ``load_encoder`` reads (a pre-training run's model directory, a model directory, a TF1 or
Hugging Face checkpoint, a keras-hub preset). ``--fresh-tiny VOCAB`` writes the sample model's network (the
tiny preset) with the reference's initialisation to a temporary model directory and uses that: the API
without a pre-trained checkpoint, so its one model row is the random-weights baseline itself. The recipe is the project's fine-tuning default for the sample
task (peak LR 3e-4, layer-wise decay 0.8, warmup 10%, weight decay 0.01, batch 32, length 64, one epoch), not
tuned here. Printed beside it: the majority class, TF-IDF + logistic regression, and the same Keras model
from random weights of the same sizes (``load_weights=False``) with the same recipe.
"""

import argparse
import csv
import os
import pathlib
import tempfile
import time

import keras
import numpy as np

import electra_tf
from electra_tf import presets
from electra_tf.configs import PretrainingConfig
from electra_tf.convert import source_from_networks, write_model_dir
from electra_tf.keras_encoder import INPUT_NAMES, encode_texts, layerwise_optimizer
from electra_tf.modeling import build_pretraining_networks
from electra_tf.tokenization import load_tokenizer, read_vocab

DATA = pathlib.Path(os.environ.get("ELECTRA_TEST_DATA", pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"))


def read_split(split):
  with open(DATA / "glue-style" / "rt_polarity" / f"{split}.tsv", encoding="utf-8", newline="") as f:
    rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
  return [r["sentence"] for r in rows], np.array([int(r["label"]) for r in rows])


def keras_classifier(encoder, num_labels=2):
  """The user's own model: the encoder's [CLS] vector -> dropout -> dense."""
  inputs = {n: keras.Input(shape=(None,), dtype="int32", name=n) for n in INPUT_NAMES}
  cls = encoder(inputs)[:, 0]
  logits = keras.layers.Dense(num_labels, name="classifier")(keras.layers.Dropout(0.1)(cls))
  return keras.Model(inputs, logits)


def fine_tune(model_path, load_weights, train, dev, args):
  keras.utils.set_random_seed(args.seed)
  encoder = electra_tf.load_encoder(model_path, load_weights=load_weights)
  tokenizer = load_tokenizer(encoder.vocab_file, encoder.do_lower_case)
  model = keras_classifier(encoder)
  steps = int(np.ceil(len(train[0]) / args.batch_size)) * args.epochs
  model.compile(optimizer=layerwise_optimizer(model, args.learning_rate, steps, layerwise_lr_decay=0.8),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
  model.fit(encode_texts(tokenizer, train[0], args.max_seq_length), train[1], epochs=args.epochs,
            batch_size=args.batch_size, verbose=0)
  _, accuracy = model.evaluate(encode_texts(tokenizer, dev[0], args.max_seq_length), dev[1], verbose=0)
  return 100 * accuracy


def tfidf_baseline(train, dev):
  from sklearn.feature_extraction.text import TfidfVectorizer  # pylint: disable=g-import-not-at-top
  from sklearn.linear_model import LogisticRegression  # pylint: disable=g-import-not-at-top
  vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
  classifier = LogisticRegression(max_iter=1000).fit(vectorizer.fit_transform(train[0]), train[1])
  return 100 * float((classifier.predict(vectorizer.transform(dev[0])) == dev[1]).mean())


def fresh_tiny_model(vocab: str, out_dir: str) -> str:
  cfg = PretrainingConfig.create(**presets.sample_model_hparams(read_vocab(vocab).size))
  return write_model_dir(out_dir, source_from_networks(build_pretraining_networks(cfg), vocab, True))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("model", nargs="?")
  parser.add_argument("--fresh-tiny", metavar="VOCAB", help="the tiny preset with random weights over this vocab")
  parser.add_argument("--epochs", type=int, default=1)
  parser.add_argument("--max-seq-length", type=int, default=64)
  parser.add_argument("--batch-size", type=int, default=32)
  parser.add_argument("--learning-rate", type=float, default=presets.TINY_FINETUNING_LR)
  parser.add_argument("--seed", type=int, default=1)
  args = parser.parse_args()
  if (args.model is None) == (args.fresh_tiny is None):
    parser.error("pass MODEL or --fresh-tiny VOCAB")
  train, dev = read_split("train"), read_split("dev")
  majority = 100 * max(dev[1].mean(), 1 - dev[1].mean())
  head = f"rt_polarity dev accuracy ({len(train[0])} train / {len(dev[0])} dev sentences, seed {args.seed}): "
  tail = f"  |  TF-IDF + LR {tfidf_baseline(train, dev):.1f}  |  majority class {majority:.1f}"
  start = time.time()
  if args.fresh_tiny:
    with tempfile.TemporaryDirectory() as tmp:
      accuracy = fine_tune(fresh_tiny_model(args.fresh_tiny, os.path.join(tmp, "model")), True, train, dev, args)
    print(f"{head}load_encoder + fit, tiny preset from random weights {accuracy:.1f} "
          f"({(time.time() - start) / 60:.1f} min){tail}")
    return
  pretrained = fine_tune(args.model, True, train, dev, args)
  minutes = (time.time() - start) / 60
  random_weights = fine_tune(args.model, False, train, dev, args)
  print(f"{head}load_encoder + fit {pretrained:.1f} ({minutes:.1f} min)  |  same model from random weights "
        f"{random_weights:.1f}{tail}")


if __name__ == "__main__":
  main()
