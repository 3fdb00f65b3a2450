"""Data-prep throughput on WikiText-2 train (2.30 M BERT word pieces): tokenize + pack + write.

  python benchmarks/data_prep.py [--data-dir ../shared/data] [--repeat-corpus 4]

Prints word pieces/s for (1) the reference-style pure-Python tokenizer alone (our FullTokenizer is the
reference's algorithm), (2) the whole build with 1 and 2 processes, and checks that the batched
tf-text ids are identical to the pure-Python ids on every line. Times the library call, after
TensorFlow is imported. "2 processes" is `--num-processes 2` as users run it: below 64 MiB of text the
builder keeps to one process (a worker's start-up, a TensorFlow runtime, costs more than it saves);
"2 processes, forced" starts the worker anyway (min_bytes_per_worker=0) to show what it would cost.
--repeat-corpus N also builds from N copies. The reference's builder figure is fixed (24.5 s on this
machine kind); "same-run" scales it by this run's pure-Python tokenizer speed against the issue's
126,000 wp/s, to take the machine's speed on the day out of the comparison.
"""

import argparse
import gzip
import os
import pathlib
import shutil
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # noqa: F401  (imported up front: not part of any timing)
from electra_tf import tokenization
from electra_tf.pretrain_data import build

REFERENCE_SECONDS = 24.5  # the reference builder on this 2-core machine kind (issue figure)
REFERENCE_TOKENIZER_WPS = 126_000  # its tokenizer alone, same machine kind (issue figure)


def main():
  root = pathlib.Path(__file__).resolve().parent.parent
  p = argparse.ArgumentParser()
  p.add_argument("--data-dir", default=os.environ.get("ELECTRA_TEST_DATA", root.parent / "shared" / "data"))
  p.add_argument("--repeat-corpus", type=int, default=4)
  args = p.parse_args()
  data = pathlib.Path(args.data_dir)
  vocab = data / "vocab" / "bert-base-uncased-vocab.txt"
  with gzip.open(data / "corpus" / "wikitext-2" / "train.raw.gz", "rt", encoding="utf-8") as f:
    text = f.read()
  lines = text.split("\n")
  tmp = pathlib.Path(tempfile.mkdtemp(prefix="electra_bench_"))
  try:
    (tmp / "corpus").mkdir()
    (tmp / "corpus" / "train.txt").write_text(text, encoding="utf-8")

    tok = tokenization.FullTokenizer(vocab, do_lower_case=True)
    t = time.perf_counter()
    slow = [tok.convert_tokens_to_ids(tok.tokenize(l)) for l in lines]
    slow_s = time.perf_counter() - t
    n = sum(len(x) for x in slow)
    print(f"reference-style pure-Python tokenizer: {n:,} word pieces in {slow_s:.2f} s = "
          f"{n / slow_s:,.0f} wp/s")
    tok.batch_ids(lines[:10])  # build + trace the graph once
    t = time.perf_counter()
    flat, splits = tok.batch_ids(lines)
    fast_s = time.perf_counter() - t
    same = all(flat[splits[i]:splits[i + 1]].tolist() == slow[i] for i in range(len(lines)))
    print(f"batched tf-text tokenizer: {fast_s:.2f} s = {n / fast_s:,.0f} wp/s "
          f"({n / fast_s / (n / slow_s):.1f}x); ids identical on all {len(lines):,} lines: {same}")

    ref_wps = n / REFERENCE_SECONDS
    same_run_ref_wps = ref_wps * (n / slow_s) / REFERENCE_TOKENIZER_WPS
    print(f"reference builder: {ref_wps:,.0f} wp/s (issue figure); scaled to this run's machine speed: "
          f"{same_run_ref_wps:,.0f} wp/s")
    outputs = {}
    runs = [(1, None), (2, None), (2, 0)]
    for procs, min_bytes, corpus_dir, label in [(p, m, "corpus", "x1") for p, m in runs] + (
        [(p, m, "big", f"x{args.repeat_corpus}") for p, m in runs] if args.repeat_corpus > 1 else []):
      if corpus_dir == "big" and not (tmp / "big").exists():
        (tmp / "big").mkdir()
        for i in range(args.repeat_corpus):
          shutil.copy(tmp / "corpus" / "train.txt", tmp / "big" / f"train{i}.txt")
      out = tmp / f"out_{procs}_{min_bytes}_{label}"
      kw = {} if min_bytes is None else {"min_bytes_per_worker": min_bytes}
      t = time.perf_counter()
      meta = build.build_pretraining_dataset(out, vocab, corpus_dir=tmp / corpus_dir,
                                             num_processes=procs, num_shards=100, seed=0,
                                             progress=False, **kw)
      secs = time.perf_counter() - t
      wps = meta["num_word_pieces"] / secs
      how = f"{procs} process(es)" + (", forced" if min_bytes == 0 else "") + (
          f" (ran {meta['num_processes']})" if meta["num_processes"] != procs else "")
      print(f"full build, WikiText-2 train {label}, {how}: "
            f"{meta['num_word_pieces']:,} wp, {meta['splits']['train']['num_examples']:,} examples in "
            f"{secs:.2f} s = {wps:,.0f} wp/s ({wps / ref_wps:.1f}x the reference's {ref_wps:,.0f} wp/s; "
            f"{wps / same_run_ref_wps:.1f}x same-run)")
      outputs[(procs, min_bytes, label)] = [f.read_bytes() for f in sorted(out.glob("pretrain_data*"))]
    for label in sorted({k[2] for k in outputs}):
      same = all(outputs[(p, m, label)] == outputs[(1, None, label)] for p, m in runs)
      print(f"{label}: outputs of every run byte-identical: {same}")
  finally:
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
  main()
