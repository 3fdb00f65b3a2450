"""Wikitext cleanup alternatives on the same real pages: speed, and markup left in the packed examples.

  pip install mwparserfromhell   # the baseline; not a dependency of electra-tf
  nice -n 10 python benchmarks/wikitext_cleanup.py [--dump DUMP.xml.bz2] [--repeat 5] [--wtp-path DIR]

Reads the main-namespace pages of a MediaWiki dump (default: $ELECTRA_TEST_DATA/wikipedia/
enwiki-table-markup.xml.bz2) and runs each cleaner over them ``--repeat`` times, timing CPU seconds:

* mwparserfromhell tree walk: a parse-tree cleanup (parse, drop top-level refs,
  tables, file/category links and headings, ``strip_code``), kept here as the baseline;
* mwparserfromhell's C tokenizer alone: the floor of anything built on that parser (gives no text);
* wikitextparser ``plain_text()`` (when importable; ``--wtp-path`` adds a directory holding it);
* electra_tf.pretrain_data.wikitext: the regular-expression cleaner the dump reader uses.

Each text-giving cleaner's output then goes through the dump path's own sentence split, tokenizer (BERT
uncased vocab) and packing (length 128, seed 0): word pieces kept, examples, and the share of examples
that still hold markup (``{{``/``}}``, ``[[``/``]]``, table edges ``{|``/``|}``, ``|-`` rows, ``||`` cell
pipes, ``<ref``, table attributes ``colspan``/``rowspan``/``bgcolor``/``class=``/``style=``), read from
the examples' word pieces. "shared sentences" is the share of the baseline's sentences that a cleaner's
output also holds (whitespace-normalised), a check that a faster cleaner does not simply drop prose.
"""

import argparse
import bz2
import os
import pathlib
import re
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# pylint: disable=g-import-not-at-top,wrong-import-position
import mwparserfromhell
from electra_tf import tokenization
from electra_tf.pretrain_data import build, corpus, wikitext

_NON_TEXT_LINK = wikitext._NON_TEXT_LINK  # pylint: disable=protected-access
_MARKUP = re.compile(r"\{ \{|\} \}|\[ \[|\] \]|\{ \||\| \}|\| -|\| \||< ref|< / ref|colspan|rowspan|bgcolor|"
                     r"class =|style =")


def mwparserfromhell_tree_walk(text):
  """A parse-tree cleanup with mwparserfromhell (the regular-expression cleaner's rules)."""
  code = mwparserfromhell.parse(text)
  drop = {id(n) for n in code.filter_wikilinks(recursive=False) if _NON_TEXT_LINK.match(str(n.title))}
  drop.update(id(n) for n in code.filter_tags(recursive=False)
              if str(n.tag).lower() in ("ref", "table", "gallery", "math", "timeline", "references", "div"))
  drop.update(id(n) for n in code.filter_headings(recursive=False))
  code.nodes = [n for n in code.nodes if id(n) not in drop]
  out = code.strip_code(normalize=True, collapse=True, keep_template_params=False)
  return "\n".join(line.strip() for line in out.split("\n")
                   if line.strip() and not line.strip().startswith(("{|", "|", "!", "*", "#", ";", ":")))


def mwparserfromhell_tokenizer(text):
  mwparserfromhell.parser.Parser()._tokenizer.tokenize(text, 0, False)  # pylint: disable=protected-access
  return None


def read_pages(dump):
  pages = []
  with bz2.open(dump, "rb") as f:
    for _, elem in ET.iterparse(f, events=("end",)):
      if elem.tag.rsplit("}", 1)[-1] == "page":
        ns = elem.findtext("{*}ns") or elem.findtext("ns")
        text = elem.findtext("{*}revision/{*}text") or elem.findtext("revision/text") or ""
        if ns == "0" and text and not text.lstrip().lower().startswith("#redirect"):
          pages.append(text)
        elem.clear()
  return pages


def measure(name, clean, pages, repeat, tokenizer, baseline_sentences):
  start = time.process_time()
  for _ in range(repeat):
    out = [clean(p) for p in pages]
  cpu = (time.process_time() - start) / repeat
  row = {"cleaner": name, "cpu_s": cpu, "articles_s": len(pages) / cpu,
         "mb_s": sum(len(p.encode("utf-8")) for p in pages) / cpu / 1e6}
  if out[0] is None:
    return row, None
  docs = [d for d in (corpus.text_to_document(t) for t in out) if d]
  result = build.process_chunk(tokenizer, 0, docs, 0, 128, 0.0, "bench")
  ids, _, lengths = result.splits["train"]
  inv = {i: t for t, i in tokenizer.vocab.items()}
  marked = 0
  for r in range(ids.shape[0]):
    text = " ".join(inv[int(i)] for i in ids[r, :lengths[r]]).replace(" ##", "")
    marked += bool(_MARKUP.search(text))
  sentences = {" ".join(s.split()) for d in docs for s in d}
  row.update(pieces=result.num_pieces, examples=ids.shape[0], marked=marked,
             shared=len(sentences & baseline_sentences) / max(1, len(baseline_sentences)) if baseline_sentences
             else 1.0)
  return row, sentences


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  data = pathlib.Path(os.environ.get("ELECTRA_TEST_DATA", pathlib.Path(__file__).resolve().parents[2] /
                                     "shared" / "data"))
  p.add_argument("--dump", default=str(data / "wikipedia" / "enwiki-table-markup.xml.bz2"))
  p.add_argument("--vocab", default=str(data / "vocab" / "bert-base-uncased-vocab.txt"))
  p.add_argument("--repeat", type=int, default=5)
  p.add_argument("--wtp-path", default=None, help="a directory holding the wikitextparser package")
  args = p.parse_args()
  if args.wtp_path:
    sys.path.append(args.wtp_path)
  pages = read_pages(args.dump)
  tokenizer = tokenization.load_tokenizer(args.vocab, True, None)
  cleaners = [("mwparserfromhell tree walk (baseline)", mwparserfromhell_tree_walk),
              ("mwparserfromhell tokenizer alone", mwparserfromhell_tokenizer)]
  try:
    import wikitextparser  # pylint: disable=import-outside-toplevel
    cleaners.append((f"wikitextparser {wikitextparser.__version__} plain_text()",
                     lambda t: wikitextparser.parse(t).plain_text()))
  except ImportError:
    print("wikitextparser not importable: pass --wtp-path", file=sys.stderr)
  cleaners.append(("regular expressions (wikitext.py, now)", wikitext.wikitext_to_text))
  print(f"{len(pages)} pages, {sum(map(len, pages)):,} characters of wikitext, {args.repeat} repeats")
  print("| cleaner | CPU s per pass | articles/s | MB of wikitext/s | word pieces kept | examples | "
        "examples with markup | baseline sentences kept |")
  print("|---|---|---|---|---|---|---|---|")
  baseline = None
  for name, clean in cleaners:
    row, sentences = measure(name, clean, pages, args.repeat, tokenizer, baseline)
    if baseline is None:
      baseline = sentences
    cells = [name, f"{row['cpu_s']:.4f}", f"{row['articles_s']:,.1f}", f"{row['mb_s']:.2f}"]
    if "pieces" in row:
      cells += [f"{row['pieces']:,}", str(row["examples"]),
                f"{row['marked']} ({100 * row['marked'] / max(1, row['examples']):.1f}%)",
                f"{100 * row['shared']:.1f}%"]
    else:
      cells += ["—"] * 4
    print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
  main()
