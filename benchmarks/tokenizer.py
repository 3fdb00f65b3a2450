"""Word pieces/s of ``FullTokenizer.tokenize`` against the reference's pure-Python tokenizer, same process.

Both tokenize the same WikiText-2 lines (train by default) one line at a time, as ported fine-tuning code
calls them; the output of every line must be identical or the script exits non-zero. Timed too: our
uncached per-character composition (``_tokenize_per_char``, the reference's steps) and, with ``--compare``,
any other ``tokenization.py`` (e.g. a previous commit's, to measure a change).

The reference is not part of electra-tf: pass its file,
  git show <google-research/electra commit>:model/tokenization.py > /tmp/ref_tokenization.py
  python benchmarks/tokenizer.py --reference /tmp/ref_tokenization.py
(it imports ``six`` and ``tensorflow.compat.v1``). Each tokenizer is timed ``--repeats`` times on a fresh
instance (ours starts with an empty word cache every time) and the best run is reported.
"""

import argparse
import gzip
import importlib.util
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
# pylint: disable=wrong-import-position
from electra_tf import tokenization


def _load_module(path, name):
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _time(make, lines, repeats):
  """Best-of-``repeats`` seconds of tokenizing every line with a fresh tokenizer, and its output."""
  best, out = float("inf"), None
  for _ in range(repeats):
    tok = make()
    t = time.perf_counter()
    out = [tok(line) for line in lines]
    best = min(best, time.perf_counter() - t)
  return best, out


def main():
  root = pathlib.Path(__file__).resolve().parent.parent
  p = argparse.ArgumentParser()
  p.add_argument("--data-dir", default=os.environ.get("ELECTRA_TEST_DATA", root.parent / "shared" / "data"))
  p.add_argument("--split", default="train", choices=["train", "valid", "test"])
  p.add_argument("--reference", help="the reference's model/tokenization.py")
  p.add_argument("--compare", action="append", default=[], help="another tokenization.py to time")
  p.add_argument("--cased", action="store_true", help="do_lower_case=False")
  p.add_argument("--repeats", type=int, default=2)
  args = p.parse_args()
  data = pathlib.Path(args.data_dir)
  vocab = str(data / "vocab" / "bert-base-uncased-vocab.txt")
  with gzip.open(data / "corpus" / "wikitext-2" / f"{args.split}.raw.gz", "rt", encoding="utf-8") as f:
    lines = f.read().split("\n")
  lower = not args.cased

  runs = [("ours: FullTokenizer.tokenize", lambda: tokenization.FullTokenizer(vocab, lower).tokenize),
          ("ours, uncached per-character steps",
           lambda: tokenization.FullTokenizer(vocab, lower)._tokenize_per_char)]  # pylint: disable=protected-access
  if args.reference:
    ref = _load_module(args.reference, "reference_tokenization")
    runs.insert(0, ("reference FullTokenizer.tokenize", lambda: ref.FullTokenizer(vocab, lower).tokenize))
  for i, path in enumerate(args.compare):
    other = _load_module(path, f"compare_tokenization_{i}")
    runs.append((f"{path}: FullTokenizer.tokenize", lambda m=other: m.FullTokenizer(vocab, lower).tokenize))

  expected, base_wps, ok = None, None, True
  print(f"{len(lines):,} WikiText-2 {args.split} lines, do_lower_case={lower}, best of {args.repeats}")
  for name, make in runs:
    secs, out = _time(make, lines, args.repeats)
    n = sum(len(x) for x in out)
    if expected is None:
      expected = out
    same = out == expected
    ok &= same
    wps = n / secs
    base_wps = base_wps or wps
    print(f"{name}: {n:,} word pieces in {secs:.2f} s = {wps:,.0f} wp/s ({wps / base_wps:.2f}x the first); "
          f"output identical to the first: {same}")
  if not ok:
    sys.exit("tokenizer outputs differ")


if __name__ == "__main__":
  main()
