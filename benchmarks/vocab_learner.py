"""WordPiece vocab learning speed (MB of text per minute) on 1, 10 and 100 copies of WikiText-2 train.

  nice -n 10 python benchmarks/vocab_learner.py [--copies 1,10,100] [--learners hf,tf-text]
      [--vocab-size 30522] [--timeout-min 20] [--tmp-dir /tmp]

Each learner runs `vocab_learning.learn_wordpiece_vocab` (what `build_vocab.py --learner L` runs) in a fresh process on
a corpus directory of N copies of WikiText-2 train (10.94 MB each; written under --tmp-dir and deleted after),
timed around the library call (TensorFlow's import left out). A run still going after --timeout-min is
stopped and reported as "did not finish". Prints, per run: wall time, MB/min (MB = 10^6 bytes of UTF-8
text), CPU time of the process (all its threads), its peak RSS, the vocab's size, and the [UNK] rate of
WikiText-2 valid (held out) tokenized with the learned vocab by our FullTokenizer: the fraction of word
pieces that are [UNK] and of words (BasicTokenizer words) that became [UNK].

A learner written "tf-text:40000" learns from the first 40,000 sentences only (`--max-sentences`): the
sample setup's setting, and a way round tf-text's speed. Copies of one text keep its distinct
words (what the learners' later stages work on) fixed: a real corpus of the same size has more.
"""

import argparse
import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The child: one learner run on one corpus, its figures as JSON on the last line of stdout.
_CHILD = r"""
import json, os, resource, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from electra_tf.pretrain_data import corpus, vocab_learning
corpus_dir, output, vocab_size, learner, max_sentences = sys.argv[1:6]
before = resource.getrusage(resource.RUSAGE_SELF)
start = time.perf_counter()
size = vocab_learning.learn_wordpiece_vocab(corpus.iter_text_dir(corpus_dir), output, int(vocab_size),
                                   learner=learner, max_sentences=int(max_sentences) or None)
wall = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
print(json.dumps(dict(wall=wall, cpu=cpu, peak_rss_mb=after.ru_maxrss / 1024, size=size)))
"""


def write_corpus(source_gz, directory, copies):
  """``copies`` files, each the whole of ``source_gz`` uncompressed; returns the bytes written."""
  directory.mkdir(parents=True)
  with gzip.open(source_gz, "rb") as f:
    text = f.read()
  for i in range(copies):
    (directory / f"train-{i:04d}.txt").write_bytes(text)
  return len(text) * copies


def sampled_bytes(corpus_dir, num_sentences):
  """UTF-8 bytes of the first ``num_sentences`` sentences (non-empty lines) of ``corpus_dir``."""
  total = 0
  for path in sorted(corpus_dir.iterdir()):
    with path.open(encoding="utf-8") as f:
      for line in f:
        if line.strip():
          total += len(line.encode("utf-8"))
          num_sentences -= 1
          if num_sentences == 0:
            return total
  return total


def unk_rates(vocab_file, lines):
  """(fraction of word pieces that are [UNK], fraction of words that are [UNK]) of ``lines``."""
  from electra_tf import tokenization  # pylint: disable=import-outside-toplevel
  tok = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
  pieces = [p for line in lines for p in tok.tokenize(line)]
  words = [w for line in lines for w in tok.basic_tokenizer.tokenize(line)]
  unk_words = sum(tok.wordpiece_tokenizer.tokenize(w) == ["[UNK]"] for w in words)
  return pieces.count("[UNK]") / len(pieces), unk_words / len(words)


def run_one(corpus_dir, output, vocab_size, learner, timeout_s):
  name, _, max_sentences = learner.partition(":")
  cmd = [sys.executable, "-c", _CHILD, str(corpus_dir), str(output), str(vocab_size), name,
         max_sentences or "0"]
  try:
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s, check=False)
  except subprocess.TimeoutExpired:
    return None
  if done.returncode != 0:
    raise RuntimeError(f"{learner} failed:\n{done.stderr[-3000:]}")
  return json.loads(done.stdout.strip().splitlines()[-1])


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--data-dir", default=os.environ.get("ELECTRA_TEST_DATA", str(ROOT.parent / "shared" / "data")))
  p.add_argument("--copies", default="1,10,100", help="corpus sizes, in copies of WikiText-2 train")
  p.add_argument("--learners", default="hf,tf-text",
                 help="comma-separated: hf, tf-text, or NAME:N to learn from the first N sentences")
  p.add_argument("--vocab-size", type=int, default=30522)
  p.add_argument("--timeout-min", type=float, default=20.0, help="per run, learning and TF import")
  p.add_argument("--max-tf-text-copies", type=int, default=1,
                 help="tf-text (without :N) only runs on corpora of at most this many copies")
  p.add_argument("--tmp-dir", default=tempfile.gettempdir())
  args = p.parse_args()
  source = pathlib.Path(args.data_dir) / "corpus" / "wikitext-2" / "train.raw.gz"
  with gzip.open(pathlib.Path(args.data_dir) / "corpus" / "wikitext-2" / "valid.raw.gz", "rt",
                 encoding="utf-8") as f:
    held_out = [line for line in f.read().split("\n") if line.strip()]
  work = pathlib.Path(tempfile.mkdtemp(prefix="vocab_learner_", dir=args.tmp_dir))
  print(f"vocab size {args.vocab_size}; load average at start {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores", flush=True)
  try:
    for copies in (int(c) for c in args.copies.split(",")):
      corpus_dir = work / f"corpus-{copies}"
      num_bytes = write_corpus(source, corpus_dir, copies)
      mb = num_bytes / 1e6
      for learner in args.learners.split(","):
        if learner.startswith("tf-text") and copies > args.max_tf_text_copies:
          continue
        output = work / f"vocab-{copies}-{learner.replace(':', '-')}.txt"
        load = os.getloadavg()[0]
        fig = run_one(corpus_dir, output, args.vocab_size, learner, args.timeout_min * 60)
        used_mb = mb
        if ":" in learner:  # MB/min of the text it learnt from: the first N sentences
          used_mb = sampled_bytes(corpus_dir, int(learner.partition(":")[2])) / 1e6
        head = f"{learner:>14} {used_mb:8.1f} MB"
        if fig is None:
          print(f"{head}: did not finish in {args.timeout_min:g} min (load average {load:.1f} at its start)",
                flush=True)
          continue
        unk_pieces, unk_words = unk_rates(output, held_out)
        print(f"{head}: {fig['wall']:7.1f} s  {used_mb / fig['wall'] * 60:7.1f} MB/min  CPU {fig['cpu']:7.1f} s  "
              f"peak RSS {fig['peak_rss_mb']:6.0f} MB  {fig['size']} entries  valid [UNK] "
              f"{unk_pieces:.4%} of pieces, {unk_words:.4%} of words  (load {load:.1f})", flush=True)
      shutil.rmtree(corpus_dir)
  finally:
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
  main()
