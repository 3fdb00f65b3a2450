"""Every bad input we know of, tried as a user would: sets each one up in a scratch directory, runs the
command and prints a markdown table of what happened.

  .venv/bin/python scripts/bad_input_tour.py [--scratch DIR] [--only 1,2,...] [--keep]

For each row: the exit status, how many stderr lines start with ``error:``, how many non-blank stderr lines
there are (TensorFlow's start-up lines included), the first ``error:`` line (else the last stderr line), and the files the command left behind that were not there before. The promise is one
``error:`` line, exit 2 and nothing half-written. Data: $ELECTRA_TEST_DATA (default ../shared/data).
"""

import argparse
import bz2
import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = pathlib.Path(os.environ.get("ELECTRA_TEST_DATA", REPO.parent / "shared" / "data"))
PY = sys.executable
BUILD_VOCAB = str(REPO / "data_prep" / "build_vocab.py")
BUILD_DATA = str(REPO / "data_prep" / "build_pretraining_dataset.py")
PRETRAIN = str(REPO / "pretrain" / "run_pretraining.py")
FINETUNE = str(REPO / "finetune" / "run_finetuning.py")
CONVERT = ["-m", "electra_tf.convert"]
SEQ = 32
TINY = {"model_size": "tiny", "vocab_size": 30522, "max_seq_length": SEQ, "train_batch_size": 8,
        "num_train_steps": 2, "save_checkpoints_steps": 2, "iterations_per_loop": 1, "do_eval": False,
        "num_warmup_steps": 0}
FT = {"model_size": "tiny", "vocab_size": 30522, "max_seq_length": SEQ, "train_batch_size": 8,
      "eval_batch_size": 8, "num_train_epochs": 0.01}


def _run(argv, cwd):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
  return subprocess.run([PY, *map(str, argv)], cwd=cwd, capture_output=True, text=True, env=env, timeout=900,
                        check=False)


def _listing(root):
  return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _ok(argv, cwd):
  r = _run(argv, cwd)
  if r.returncode != 0:
    sys.exit(f"set-up command failed: {' '.join(map(str, argv))}\n{r.stderr[-3000:]}")


def setup(root: pathlib.Path):
  """The good inputs the bad ones are made from."""
  corpus = root / "corpus"
  corpus.mkdir()
  with gzip.open(DATA / "corpus" / "wikitext-2" / "train.raw.gz", "rt", encoding="utf-8") as f:
    lines = [next(f) for _ in range(1500)]
  (corpus / "wiki.txt").write_text("".join(lines), encoding="utf-8")
  bert_vocab = DATA / "vocab" / "bert-base-uncased-vocab.txt"
  good = root / "good"
  good.mkdir()
  shutil.copy(bert_vocab, good / "vocab.txt")
  _ok([BUILD_DATA, "--corpus-dir", corpus, "--vocab-file", good / "vocab.txt", "--output-dir",
       good / "pretrain_tfrecords", "--max-seq-length", SEQ, "--num-shards", 2, "--no-progress"], root)
  _ok([PRETRAIN, "--data-dir", good, "--model-name", "tiny", "--hparams", json.dumps(TINY), "--no-progress"],
      root)
  ft = good / "finetuning_data" / "sst"
  ft.mkdir(parents=True)
  rt = DATA / "glue-style" / "rt_polarity"
  for split in ("train", "dev"):
    rows = (rt / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[:41]
    (ft / f"{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def _copy_good(root, name, shards=True):
  """A fresh data dir with the good vocab, records (if ``shards``) and sst data, but no models."""
  d = root / name
  d.mkdir()
  shutil.copy(root / "good" / "vocab.txt", d / "vocab.txt")
  if shards:
    shutil.copytree(root / "good" / "pretrain_tfrecords", d / "pretrain_tfrecords")
  shutil.copytree(root / "good" / "finetuning_data", d / "finetuning_data")
  return d


def rows(root: pathlib.Path):
  """(bad input, set-up function returning argv)."""
  good = root / "good"
  vocab = good / "vocab.txt"
  ckpt = good / "models" / "tiny"
  out = lambda name: root / "out" / name  # noqa: E731

  def corpus_with(name, data: bytes):
    d = root / name
    d.mkdir()
    (d / "file.txt").write_bytes(data)
    return d

  def r_malformed_hparams():
    return [PRETRAIN, "--data-dir", good, "--model-name", "m1", "--hparams", '{"model_size": tiny'], "pretrain"

  def r_unknown_hparam():
    return [PRETRAIN, "--data-dir", good, "--model-name", "m2", "--hparams", '{"learning_rat": 1}'], "pretrain"

  def r_out_of_range():
    return [PRETRAIN, "--data-dir", good, "--model-name", "m3", "--hparams", '{"mask_prob": 2}'], "pretrain"

  def r_bad_type():
    return [FINETUNE, "--data-dir", good, "--model-name", "m4", "--task", "sst", "--hparams",
            '{"train_batch_size": "eight"}'], "finetune"

  def r_hparams_file_missing():
    return [PRETRAIN, "--data-dir", good, "--model-name", "m5", "--hparams", root / "nope.json"], "pretrain"

  def r_missing_corpus():
    return [BUILD_VOCAB, "--corpus-dir", root / "no_such_corpus", "--output", out("v1.txt"),
            "--vocab-size", 500], "build_vocab"

  def r_empty_corpus():
    (root / "empty_corpus").mkdir()
    return [BUILD_VOCAB, "--corpus-dir", root / "empty_corpus", "--output", out("v2.txt"),
            "--vocab-size", 500], "build_vocab"

  def r_empty_corpus_data():
    (root / "empty_corpus2").mkdir()
    return [BUILD_DATA, "--corpus-dir", root / "empty_corpus2", "--vocab-file", vocab, "--output-dir",
            out("d_empty"), "--num-shards", 1, "--no-progress"], "build_data"

  def r_binary():
    d = corpus_with("binary_corpus", bytes(range(256)) * 64)
    return [BUILD_DATA, "--corpus-dir", d, "--vocab-file", vocab, "--output-dir", out("d_bin"),
            "--num-shards", 1, "--no-progress"], "build_data"

  def r_latin1():
    d = corpus_with("latin1_corpus", ("Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e is sweet.\n" * 50).encode("latin-1"))
    return [BUILD_DATA, "--corpus-dir", d, "--vocab-file", vocab, "--output-dir", out("d_latin1"),
            "--num-shards", 1, "--no-progress"], "build_data"

  def r_latin1_vocab():
    d = corpus_with("latin1_corpus_v", ("Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e is sweet.\n" * 50).encode("latin-1"))
    return [BUILD_VOCAB, "--corpus-dir", d, "--output", out("v3.txt"), "--vocab-size", 500], "build_vocab"

  def r_truncated_xml():
    xml = bz2.decompress((DATA / "wikipedia" / "enwiki-table-markup.xml.bz2").read_bytes())
    p = root / "cut.xml"
    p.write_bytes(xml[: len(xml) // 2])
    return [BUILD_DATA, "--wikipedia-dump", p, "--vocab-file", vocab, "--output-dir", out("d_xml"),
            "--num-shards", 1, "--no-progress"], "build_data"

  def r_truncated_bz2():
    raw = (DATA / "wikipedia" / "enwiki-table-markup.xml.bz2").read_bytes()
    p = root / "cut.xml.bz2"
    p.write_bytes(raw[: len(raw) // 2])
    return [BUILD_DATA, "--wikipedia-dump", p, "--vocab-file", vocab, "--output-dir", out("d_bz2"),
            "--num-shards", 1, "--no-progress"], "build_data"

  def r_missing_dump():
    return [BUILD_DATA, "--wikipedia-dump", root / "no_such.xml.bz2", "--vocab-file", vocab, "--output-dir",
            out("d_nodump"), "--num-shards", 1, "--no-progress"], "build_data"

  def r_vocab_no_specials():
    p = root / "nospecials.txt"
    p.write_text("\n".join(vocab.read_text(encoding="utf-8").splitlines()[1000:3000]) + "\n", encoding="utf-8")
    return [BUILD_DATA, "--corpus-dir", root / "corpus", "--vocab-file", p, "--output-dir", out("d_nospec"),
            "--num-shards", 1, "--no-progress"], "build_data"

  def r_missing_vocab():
    return [BUILD_DATA, "--corpus-dir", root / "corpus", "--vocab-file", root / "no_vocab.txt", "--output-dir",
            out("d_novocab"), "--num-shards", 1, "--no-progress"], "build_data"

  def r_short_seq():
    return [BUILD_DATA, "--corpus-dir", root / "corpus", "--vocab-file", vocab, "--output-dir", out("d_short"),
            "--max-seq-length", 3, "--num-shards", 1, "--no-progress"], "build_data"

  def r_vocab_output_missing_dir():
    return [BUILD_VOCAB, "--corpus-dir", root / "corpus", "--output", root / "no_such_dir" / "vocab.txt",
            "--vocab-size", 500], "build_vocab"

  def r_existing_output_convert():
    d = root / "existing_export"
    if not d.exists():  # an earlier export: the second must refuse before writing anything
      _ok([*CONVERT, "export-hf", ckpt, "--output", d], root)
      shutil.rmtree(d / "discriminator")  # generator/ exists, discriminator/ not: nothing may be added
    return [*CONVERT, "export-hf", ckpt, "--output", d], "convert"

  def r_output_is_file():
    p = root / "out_is_a_file"
    p.write_text("not a directory\n")
    return [BUILD_DATA, "--corpus-dir", root / "corpus", "--vocab-file", vocab, "--output-dir", p,
            "--num-shards", 1, "--no-progress"], "build_data"

  def r_pretrain_missing_data():
    d = root / "pt_nodata"
    d.mkdir()
    shutil.copy(vocab, d / "vocab.txt")
    return [PRETRAIN, "--data-dir", d, "--model-name", "m", "--hparams", json.dumps(TINY), "--no-progress"], \
        "pretrain"

  def r_pretrain_length_mismatch():
    d = _copy_good(root, "pt_len")
    return [PRETRAIN, "--data-dir", d, "--model-name", "m", "--hparams", json.dumps({**TINY, "max_seq_length": 64}),
            "--no-progress"], "pretrain"

  def r_pretrain_vocab_mismatch():
    d = _copy_good(root, "pt_vocab")
    (d / "vocab.txt").write_text("\n".join(vocab.read_text(encoding="utf-8").splitlines()[:5000]) + "\n",
                                 encoding="utf-8")
    return [PRETRAIN, "--data-dir", d, "--model-name", "m", "--hparams", json.dumps({**TINY, "vocab_size": 5000}),
            "--no-progress"], "pretrain"

  def _cut_shard(d):
    shard = sorted((d / "pretrain_tfrecords").glob("pretrain_data.tfrecord*"))[0]
    raw = shard.read_bytes()
    shard.write_bytes(raw[: int(len(raw) * 0.6)])
    return shard

  def r_pretrain_cut_shard():
    d = _copy_good(root, "pt_cut")
    _cut_shard(d)
    return [PRETRAIN, "--data-dir", d, "--model-name", "m", "--hparams",
            json.dumps({**TINY, "num_train_steps": 60, "save_checkpoints_steps": 60}), "--no-progress"], "pretrain"

  def r_verify_cut_shard():
    d = _copy_good(root, "verify_cut")
    _cut_shard(d)
    return [BUILD_DATA, "--verify", "--output-dir", d / "pretrain_tfrecords", "--no-progress"], "build_data"

  def r_verify_flipped_byte():
    d = _copy_good(root, "verify_flip")
    shard = sorted((d / "pretrain_tfrecords").glob("pretrain_data.tfrecord*"))[0]
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    shard.write_bytes(bytes(raw))
    return [BUILD_DATA, "--verify", "--output-dir", d / "pretrain_tfrecords", "--no-progress"], "build_data"

  def r_unknown_task():
    return [FINETUNE, "--data-dir", good, "--model-name", "ft", "--task", "nosuchtask", "--init-checkpoint", ckpt,
            "--hparams", json.dumps(FT), "--no-progress"], "finetune"

  def r_ft_missing_data():
    d = root / "ft_nodata"
    d.mkdir()
    shutil.copy(vocab, d / "vocab.txt")
    return [FINETUNE, "--data-dir", d, "--model-name", "ft", "--task", "sst", "--init-checkpoint", ckpt,
            "--hparams", json.dumps(FT), "--no-progress"], "finetune"

  def _ft_with_train(name, text):
    d = _copy_good(root, name, shards=False)
    (d / "finetuning_data" / "sst" / "train.tsv").write_text(text, encoding="utf-8")
    return [FINETUNE, "--data-dir", d, "--model-name", "ft", "--task", "sst", "--init-checkpoint", ckpt,
            "--hparams", json.dumps(FT), "--no-progress"], "finetune"

  def r_malformed_row():
    return _ft_with_train("ft_row", "sentence\tlabel\na fine film\t1\na row with no label column\nbad\t0\n")

  def r_bad_label():
    return _ft_with_train("ft_label", "sentence\tlabel\na fine film\t1\na terrible film\tnegative\n")

  def r_missing_ckpt():
    return [FINETUNE, "--data-dir", good, "--model-name", "ft", "--task", "sst", "--init-checkpoint",
            root / "no_such_ckpt", "--hparams", json.dumps(FT), "--no-progress"], "finetune"

  def r_wrong_model_size():
    d = _copy_good(root, "ft_size", shards=False)
    return [FINETUNE, "--data-dir", d, "--model-name", "ft", "--task", "sst", "--init-checkpoint", ckpt,
            "--model-size", "base", "--hparams", json.dumps(FT), "--no-progress"], "finetune"

  def r_foreign_ckpt():
    d = _copy_good(root, "ft_foreign", shards=False)
    foreign = root / "foreign"
    foreign.mkdir()
    (foreign / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    (foreign / "config.json").write_text('{"model_type": "bert", "hidden_size": 8}')
    return [FINETUNE, "--data-dir", d, "--model-name", "ft", "--task", "sst", "--init-checkpoint", foreign,
            "--hparams", json.dumps(FT), "--no-progress"], "finetune"

  def r_vocab_embedding_mismatch():
    d = _copy_good(root, "ft_vmis", shards=False)
    (d / "vocab.txt").write_text("\n".join(vocab.read_text(encoding="utf-8").splitlines()[:5000]) + "\n",
                                 encoding="utf-8")
    return [FINETUNE, "--data-dir", d, "--model-name", "ft", "--task", "sst", "--init-checkpoint", ckpt,
            "--hparams", json.dumps({**FT, "vocab_size": 5000}), "--no-progress"], "finetune"

  def r_convert_missing():
    return [*CONVERT, "inspect", root / "no_such_ckpt"], "convert"

  def r_convert_foreign():
    p = root / "random.ckpt"
    p.write_bytes(os.urandom(4096))
    return [*CONVERT, "inspect", p], "convert"

  def r_import_hf_no_config():
    d = root / "hf_empty"
    d.mkdir()
    return [*CONVERT, "import-hf", d, "--output", out("imported")], "convert"

  def r_nan_hparam():
    return [PRETRAIN, "--data-dir", good, "--model-name", "m6", "--hparams", '{"mask_prob": NaN}'], "pretrain"

  def r_infinite_hparam():
    return [FINETUNE, "--data-dir", good, "--model-name", "m7", "--task", "sst", "--hparams",
            '{"num_train_epochs": Infinity}'], "finetune"

  def r_hparams_not_utf8():
    p = root / "latin1_hparams.json"
    p.write_bytes('{"model_name_suffix": "caf\u00e9"}'.encode("latin-1"))
    return [PRETRAIN, "--data-dir", good, "--model-name", "m8", "--hparams", p], "pretrain"

  def r_negative_eval_shards():
    return [BUILD_DATA, "--corpus-dir", root / "corpus", "--vocab-file", vocab, "--output-dir", out("d_eval"),
            "--eval-fraction", 0.1, "--num-eval-shards", -1, "--no-progress"], "build_data"

  def hf_export(name):
    d = root / name
    if not d.exists():
      _ok([*CONVERT, "export-hf", ckpt, "--what", "discriminator", "--output", d], root)
    return d

  def r_hf_config_not_json():
    d = hf_export("hf_bad_config")
    (d / "config.json").write_text('{"model_type": "electra",', encoding="utf-8")
    return [*CONVERT, "import-hf", d, "--output", out("imported_bad_config")], "convert"

  def r_hf_safetensors_truncated():
    d = hf_export("hf_cut_weights")
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])
    return [FINETUNE, "--data-dir", good, "--model-name", "ft", "--task", "sst", "--init-checkpoint", d,
            "--hparams", json.dumps(FT), "--no-progress"], "finetune"

  def r_model_dir_config_not_json():
    d = root / "model_dir_bad_config"
    if not d.exists():
      _ok([*CONVERT, "import-hf", hf_export("hf_for_model_dir"), "--output", d], root)
    (d / "electra_config.json").write_text("{oops", encoding="utf-8")
    return [*CONVERT, "inspect", d], "convert"

  def r_ckpt_data_truncated():
    d = root / "ckpt_cut"
    if not d.exists():
      shutil.copytree(ckpt, d)
    for f in d.glob("*.data-*"):
      data = f.read_bytes()
      f.write_bytes(data[: len(data) // 3])
    return [FINETUNE, "--data-dir", good, "--model-name", "ft", "--task", "sst", "--init-checkpoint", d,
            "--hparams", json.dumps(FT), "--no-progress"], "finetune"

  def r_quickstart_negative_seeds():
    return ["-m", "electra_tf.quickstart", "--seeds", -1, "--sample-dir", out("qs")], "quickstart"

  def r_savedmodel_zero_length():
    return [*CONVERT, "export-savedmodel", ckpt, "--output", out("sm"), "--max-seq-length", 0], "convert"

  return [
      ("malformed --hparams JSON", r_malformed_hparams),
      ("unknown hparam (typo `learning_rat`)", r_unknown_hparam),
      ("out-of-range hparam (`mask_prob` 2)", r_out_of_range),
      ("wrongly typed hparam (`train_batch_size` \"eight\")", r_bad_type),
      ("--hparams names a .json file that does not exist", r_hparams_file_missing),
      ("missing corpus directory", r_missing_corpus),
      ("empty corpus directory (vocab)", r_empty_corpus),
      ("empty corpus directory (data)", r_empty_corpus_data),
      ("binary file in the corpus", r_binary),
      ("non-UTF-8 (Latin-1) corpus file (data)", r_latin1),
      ("non-UTF-8 (Latin-1) corpus file (vocab)", r_latin1_vocab),
      ("truncated .xml Wikipedia dump", r_truncated_xml),
      ("truncated .xml.bz2 Wikipedia dump", r_truncated_bz2),
      ("missing Wikipedia dump", r_missing_dump),
      ("vocab without [CLS]/[SEP]/[MASK]/[PAD]/[UNK]", r_vocab_no_specials),
      ("missing vocab file", r_missing_vocab),
      ("too-short --max-seq-length (3)", r_short_seq),
      ("build_vocab --output in a missing directory", r_vocab_output_missing_dir),
      ("existing output (export-hf again; generator/ already there)", r_existing_output_convert),
      ("--output-dir is an existing file", r_output_is_file),
      ("pre-training with no TFRecords (missing data)", r_pretrain_missing_data),
      ("pre-training max_seq_length 64 on 32-token records", r_pretrain_length_mismatch),
      ("pre-training vocab (5,000) differs from the records' (30,522)", r_pretrain_vocab_mismatch),
      ("TFRecord shard cut to 60% of its bytes (pre-training)", r_pretrain_cut_shard),
      ("TFRecord shard cut to 60% of its bytes (`--verify`)", r_verify_cut_shard),
      ("TFRecord shard with one flipped byte (`--verify`)", r_verify_flipped_byte),
      ("unknown fine-tuning task", r_unknown_task),
      ("fine-tuning data missing", r_ft_missing_data),
      ("malformed row (no label column)", r_malformed_row),
      ("label outside the task's labels", r_bad_label),
      ("missing --init-checkpoint", r_missing_ckpt),
      ("tiny checkpoint fine-tuned as --model-size base (mis-shaped)", r_wrong_model_size),
      ("foreign checkpoint (a BERT-typed safetensors dir)", r_foreign_ckpt),
      ("vocab (5,000) / checkpoint embedding (30,522) size mismatch", r_vocab_embedding_mismatch),
      ("convert inspect: missing checkpoint", r_convert_missing),
      ("convert inspect: random bytes as a checkpoint", r_convert_foreign),
      ("convert import-hf: directory without config.json", r_import_hf_no_config),
      ("NaN in --hparams (`mask_prob`)", r_nan_hparam),
      ("Infinity in --hparams (`num_train_epochs`)", r_infinite_hparam),
      ("--hparams file that is not UTF-8 (Latin-1)", r_hparams_not_utf8),
      ("--num-eval-shards -1 with --eval-fraction", r_negative_eval_shards),
      ("Hugging Face config.json that is not JSON (convert import-hf)", r_hf_config_not_json),
      ("truncated model.safetensors as --init-checkpoint", r_hf_safetensors_truncated),
      ("electra_config.json that is not JSON (convert inspect)", r_model_dir_config_not_json),
      ("pre-training checkpoint with a truncated .data file as --init-checkpoint", r_ckpt_data_truncated),
      ("quickstart --seeds -1", r_quickstart_negative_seeds),
      ("export-savedmodel --max-seq-length 0", r_savedmodel_zero_length),
  ]


def _short(argv, root):
  parts = []
  for a in argv:
    s = str(a).replace(str(root), "$S").replace(str(REPO) + "/", "")
    parts.append(s)
  text = " ".join(parts)
  return text if len(text) <= 110 else text[:107] + "..."


def _cell(s):
  return s.replace("|", "\\|").replace("\n", " ")


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--scratch", help="scratch directory (default: a new temporary one)")
  p.add_argument("--only", help="comma-separated row numbers")
  p.add_argument("--keep", action="store_true", help="keep the scratch directory")
  args = p.parse_args()
  root = pathlib.Path(args.scratch or tempfile.mkdtemp(prefix="bad_input_tour_")).resolve()
  root.mkdir(parents=True, exist_ok=True)
  (root / "out").mkdir(exist_ok=True)
  if not (root / "good" / "models" / "tiny").is_dir():
    print(f"setting up good inputs in {root} ...", file=sys.stderr, flush=True)
    setup(root)
  only = {int(x) for x in args.only.split(",")} if args.only else None
  print("| # | bad input | command | exit | `error:` lines | stderr lines | the line printed | left behind |")
  print("|---|---|---|---|---|---|---|---|")
  problems = []
  for i, (what, make) in enumerate(rows(root), 1):
    if only and i not in only:
      continue
    argv, _ = make()
    before = _listing(root)
    r = _run(argv, root)
    after = _listing(root)
    new = sorted(after - before)
    err_lines = [l for l in r.stderr.splitlines() if l.startswith("error:")]
    tail = [l for l in r.stderr.splitlines() if l.strip()]
    line = err_lines[0] if err_lines else ("(last stderr line) " + tail[-1] if tail else "(nothing)")
    line = line.replace(str(root), "$S")
    left = ", ".join(n for n in new[:3]) + (f" (+{len(new) - 3})" if len(new) > 3 else "") if new else "nothing"
    ok = r.returncode == 2 and len(err_lines) == 1 and not new
    if not ok:
      problems.append(i)
    print(f"| {i} | {_cell(what)} | `{_cell(_short(argv, root))}` | {r.returncode} | {len(err_lines)} | "
          f"{len(tail)} | `{_cell(line)}` | {_cell(left)} |", flush=True)
  print(f"\n{len(problems)} row(s) not one `error:` line + exit 2 + nothing left behind: "
        f"{problems or 'none'}; scratch: {root}", file=sys.stderr)
  if not args.keep and not args.scratch:
    shutil.rmtree(root, ignore_errors=True)
  return 1 if problems else 0


if __name__ == "__main__":
  sys.exit(main())
