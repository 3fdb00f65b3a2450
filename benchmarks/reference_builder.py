"""The text path from the command line against the reference's own builder, measured in the same run.

  git clone https://github.com/google-research/electra /tmp/electra_ref   # never committed here
  nice -n 10 python benchmarks/reference_builder.py --reference-dir /tmp/electra_ref [--rounds 3]

Both commands build WikiText-2 train ($ELECTRA_TEST_DATA/corpus/wikitext-2/train.raw.gz, written out as
one plain text file: the reference reads no .gz) with one process, length 128, 1000 output files (the
reference's fixed count), lower-cased BERT vocab: the reference's ``build_pretraining_dataset.py`` and
``data_prep/build_pretraining_dataset.py``. Rounds alternate the two. Each command is timed as a whole
(wall, and CPU of the child from ``getrusage``), as a user sees it. ``python -c "import tensorflow"`` is
timed in each round too: the reference's command pays it, ours does not import TensorFlow, so "reference
processing" is the reference's time minus that import, against our whole command (on a shared machine the
wall clock is mostly waiting for a core: compare CPU there; ours also reports its own library time,
metadata.json's build_seconds).
"""

import argparse
import gzip
import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run(cmd, cwd):
  before = resource.getrusage(resource.RUSAGE_CHILDREN)
  start = time.perf_counter()
  subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                 env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  wall = time.perf_counter() - start
  after = resource.getrusage(resource.RUSAGE_CHILDREN)
  return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--reference-dir", required=True, help="a checkout of google-research/electra")
  p.add_argument("--data-dir", default=os.environ.get("ELECTRA_TEST_DATA", ROOT.parent / "shared" / "data"))
  p.add_argument("--rounds", type=int, default=5)
  args = p.parse_args()
  data = pathlib.Path(args.data_dir)
  vocab = data / "vocab" / "bert-base-uncased-vocab.txt"
  ref_dir = pathlib.Path(args.reference_dir).resolve()
  tmp = pathlib.Path(tempfile.mkdtemp(prefix="electra_bench_ref_"))
  try:
    (tmp / "corpus").mkdir()
    with gzip.open(data / "corpus" / "wikitext-2" / "train.raw.gz", "rb") as f:
      (tmp / "corpus" / "train.txt").write_bytes(f.read())
    common = ["--corpus-dir", str(tmp / "corpus"), "--vocab-file", str(vocab), "--max-seq-length", "128",
              "--num-processes", "1"]
    reference = [sys.executable, "build_pretraining_dataset.py", *common]
    ours = [sys.executable, str(ROOT / "data_prep" / "build_pretraining_dataset.py"), *common, "--num-shards", "1000",
            "--no-progress"]
    importing = [sys.executable, "-c", "import tensorflow"]
    print("| round | import tensorflow wall s (CPU s) | reference wall s (CPU s) | ours wall s (CPU s) | "
          "ours library s | wall ratio | CPU ratio | reference processing / ours, wall / CPU |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for r in range(args.rounds):
      # Each command writes a directory that does not exist yet, and nothing is deleted until the end: on
      # ext4, creating files soon after thousands were deleted scans past the recently freed inodes.
      ref_out, our_out = tmp / f"ref{r}", tmp / f"ours{r}"
      imp, imp_cpu = run(importing, tmp)
      if r % 2 == 0:  # alternate which goes first, so a drift of the machine's speed falls on both
        ref_wall, ref_cpu = run(reference + ["--output-dir", str(ref_out)], ref_dir)
        our_wall, our_cpu = run(ours + ["--output-dir", str(our_out)], ROOT)
      else:
        our_wall, our_cpu = run(ours + ["--output-dir", str(our_out)], ROOT)
        ref_wall, ref_cpu = run(reference + ["--output-dir", str(ref_out)], ref_dir)
      meta = json.loads((our_out / "metadata.json").read_text())
      ratios.append((ref_wall / our_wall, ref_cpu / our_cpu))
      print(f"| {r + 1} | {imp:.1f} ({imp_cpu:.1f}) | {ref_wall:.1f} ({ref_cpu:.1f}) | {our_wall:.2f} "
            f"({our_cpu:.2f}) | {meta['build_seconds']:.2f} | {ref_wall / our_wall:.1f}x | {ref_cpu / our_cpu:.1f}x | "
            f"{(ref_wall - imp) / our_wall:.1f}x / {(ref_cpu - imp_cpu) / our_cpu:.1f}x |", flush=True)
    n_ref = len(list((tmp / "ref0").glob("pretrain_data.tfrecord-*")))
    print(f"\nmedian over {args.rounds} rounds: wall {statistics.median(w for w, _ in ratios):.1f}x, CPU "
          f"{statistics.median(c for _, c in ratios):.1f}x; {meta['num_word_pieces']:,} word pieces; reference wrote "
          f"{n_ref} files, ours {meta['splits']['train']['num_shards']}; ours processes "
          f"{meta['num_word_pieces'] / meta['build_seconds']:,.0f} wp/s inside the library")
  finally:
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
  main()
