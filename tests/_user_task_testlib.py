"""Real labelled files in a user's layouts, built from the shared test data (``ELECTRA_TEST_DATA``).

- ``write_sections_csv``: WikiText-2 paragraphs labelled with the section they stand under (History,
  Reception, Production, Background, Plot, Biography): a six-class task nobody tuned on; training rows from
  the training split, dev rows from the validation and test splits. Written as real CSV: a byte-order mark,
  ``\\r\\n`` line ends, quoted fields with commas, quotes and line breaks.
- ``write_polarity``: Rotten Tomatoes sentences (``rt_polarity``) as CSV / TSV / JSON Lines with string labels.
- ``write_pos_jsonl``: ``oanc_pos`` sentences as JSON Lines token and tag lists.
"""

import csv
import gzip
import json
import os
import pathlib
import re

SECTIONS = ("History", "Reception", "Production", "Background", "Plot", "Biography")


def data_root() -> pathlib.Path:
  return pathlib.Path(os.environ.get("ELECTRA_TEST_DATA") or
                      pathlib.Path(__file__).resolve().parents[2] / "shared" / "data")


def section_paragraphs(split: str, sections=SECTIONS):
  """[(paragraph, section)] of a WikiText-2 split, for paragraphs under one of ``sections``."""
  path = data_root() / "corpus" / "wikitext-2" / f"{split}.raw.gz"
  rows, section = [], None
  with gzip.open(path, "rt", encoding="utf-8") as f:
    for line in f:
      line = line.rstrip("\n")
      heading = re.match(r"^ = = ([^=]+) = = $", line)
      if heading:
        section = heading.group(1).strip()
        continue
      if re.match(r"^ = [^=]", line):  # an article's title
        section = None
        continue
      if line.startswith(" = "):  # a sub-section stays in its section
        continue
      if line.strip() and section in sections:
        rows.append((line.strip(), section))
  return rows


def write_csv(path, header, rows, bom=True, crlf=True):
  pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
  with open(path, "w", encoding="utf-8-sig" if bom else "utf-8", newline="") as f:
    writer = csv.writer(f, lineterminator="\r\n" if crlf else "\n")
    writer.writerow(header)
    writer.writerows(rows)
  return str(path)


def write_sections_csv(out_dir, n_train=None, n_dev=None, text_column="paragraph", label_column="section"):
  """(train.csv, dev.csv) of the six-class section task; an ``id`` column too."""
  out_dir = pathlib.Path(out_dir)
  out_dir.mkdir(parents=True, exist_ok=True)
  train = section_paragraphs("train")[:n_train]
  dev = (section_paragraphs("valid") + section_paragraphs("test"))[:n_dev]
  header = ["id", text_column, label_column]
  return (write_csv(out_dir / "train.csv", header, [(f"t{i}", t, s) for i, (t, s) in enumerate(train)]),
          write_csv(out_dir / "dev.csv", header, [(f"d{i}", t, s) for i, (t, s) in enumerate(dev)]))


def polarity_rows(split: str, n=None):
  path = data_root() / "glue-style" / "rt_polarity" / f"{split}.tsv"
  with open(path, encoding="utf-8") as f:
    lines = f.read().splitlines()[1:]
  rows = [line.split("\t") for line in lines][:n]
  return [(text, {"0": "negative", "1": "positive"}[label]) for text, label in rows]


def write_polarity(out_dir, fmt: str, n_train=None, n_dev=None):
  """(train, dev) of rt_polarity with labels ``negative`` / ``positive`` as ``fmt`` (csv, tsv or jsonl)."""
  out_dir = pathlib.Path(out_dir)
  out_dir.mkdir(parents=True, exist_ok=True)
  paths = []
  for split, n in (("train", n_train), ("dev", n_dev)):
    rows = polarity_rows(split, n)
    path = out_dir / f"{split}.{fmt}"
    if fmt == "jsonl":
      path.write_text("".join(json.dumps({"review": t, "polarity": s}) + "\n" for t, s in rows), encoding="utf-8")
    else:
      with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, delimiter="," if fmt == "csv" else "\t", lineterminator="\n").writerows(
            [("review", "polarity")] + rows)
    paths.append(str(path))
  return tuple(paths)


def pos_sentences(split: str, n=None):
  path = data_root() / "tagging" / "oanc_pos" / f"{split}.txt"
  sentences, words, tags = [], [], []
  with open(path, encoding="utf-8") as f:
    for line in f:
      cols = line.split()
      if not cols:
        if words:
          sentences.append((words, tags))
          words, tags = [], []
        continue
      words.append(cols[0])
      tags.append(cols[-1])
  if words:
    sentences.append((words, tags))
  return sentences[:n]


def write_pos_jsonl(out_dir, n_train=None, n_dev=None):
  out_dir = pathlib.Path(out_dir)
  out_dir.mkdir(parents=True, exist_ok=True)
  paths = []
  for split, n in (("train", n_train), ("dev", n_dev)):
    path = out_dir / f"{split}.jsonl"
    path.write_text("".join(json.dumps({"tokens": w, "tags": t}) + "\n" for w, t in pos_sentences(split, n)),
                    encoding="utf-8")
    paths.append(str(path))
  return tuple(paths)
