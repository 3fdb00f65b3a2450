"""The validation split and label subsets (real rt_polarity and oanc_pos files), and model selection: the grid's
tie-breaking and convergence rule, and a real fine-tuning selection that never reads dev."""

import collections
import json

import pytest

from electra_tf.errors import FinetuningError, HParamError
from electra_tf.finetuning import selection, splits
from electra_tf.finetuning.tagging import read_conll
from electra_tf.finetuning.tasks import get_task


def _texts(path, fmt="tsv"):
  return splits.read_units(str(path), fmt).texts


def test_validation_never_overlaps_dev_or_the_training_subset(data_dir, tmp_path):
  task_dir = data_dir / "glue-style" / "rt_polarity"
  small = splits.write_subset(str(task_dir), "sst", str(tmp_path / "s250"), "tsv", 500, 250, seed=3)
  big = splits.write_subset(str(task_dir), "sst", str(tmp_path / "s1000"), "tsv", 500, 1000, seed=3)
  assert (small["train"], small["validation"], small["dev"], small["pool"]) == (250, 500, 1000, 7030)
  assert big["train_indexes"][:250] == small["train_indexes"]  # nested, the same for every method
  assert big["validation_indexes"] == small["validation_indexes"]
  train = _texts(tmp_path / "s1000" / "validation" / "sst" / "train.tsv")
  validation = _texts(tmp_path / "s1000" / "validation" / "sst" / "dev.tsv")
  dev = _texts(tmp_path / "s1000" / "dev" / "sst" / "dev.tsv")
  assert len(train) == 1000 and len(validation) == 500 and len(dev) == 1000
  assert not set(train) & set(validation) and not set(validation) & set(dev)
  assert dev == _texts(task_dir / "dev.tsv")  # the real dev, untouched
  assert _texts(tmp_path / "s1000" / "dev" / "sst" / "train.tsv") == train
  original = _texts(task_dir / "train.tsv")
  assert set(train) | set(validation) <= set(original)
  other_seed = splits.write_subset(str(task_dir), "sst", str(tmp_path / "o"), "tsv", 500, 250, seed=4)
  assert other_seed["validation_indexes"] != small["validation_indexes"]


def test_the_library_reads_the_written_splits(data_dir, tmp_path):
  from electra_tf.configs import FinetuningConfig
  out = splits.write_subset(str(data_dir / "glue-style" / "rt_polarity"), "sst", str(tmp_path), "tsv", 100, 50, 0)
  for root, n in ((out["validation_root"], 100), (out["dev_root"], 1000)):
    cfg = FinetuningConfig.create("m", str(tmp_path), task_names=["sst"], raw_data_dir=root)
    task = get_task(cfg, "sst", None)
    assert len(task.get_examples("train")) == 50 and len(task.get_examples("dev")) == n


def test_rewriting_a_subset_leaves_equal_files_alone(data_dir, tmp_path):
  """Shards sharing a work dir write the same subset before every trial: equal files keep their inode and
  mtime (never truncated under a reader), a changed one is replaced whole, and no temporary file stays."""
  task_dir, out = str(data_dir / "glue-style" / "rt_polarity"), tmp_path / "s"
  splits.write_subset(task_dir, "sst", str(out), "tsv", 500, 250, seed=3)
  files = sorted(p for p in out.rglob("*") if p.is_file())
  before = {p: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in files}
  splits.write_subset(task_dir, "sst", str(out), "tsv", 500, 250, seed=3)
  assert {p: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in files} == before
  train = out / "validation" / "sst" / "train.tsv"
  train.write_text("stale\n")
  splits.write_subset(task_dir, "sst", str(out), "tsv", 500, 250, seed=3)
  assert train.read_bytes() == before[train][2]
  assert sorted(p for p in out.rglob("*") if p.is_file()) == files


def test_units_that_occur_in_dev_stay_out_of_the_validation_split(tmp_path):
  rows = [f"sentence {i}\t{i % 2}" for i in range(20)]
  (tmp_path / "t").mkdir()
  (tmp_path / "t" / "train.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
  (tmp_path / "t" / "dev.tsv").write_text("sentence\tlabel\n" + "\n".join(rows[:10]) + "\n")
  out = splits.write_subset(str(tmp_path / "t"), "sst", str(tmp_path / "o"), "tsv", 10, None, seed=0)
  assert sorted(out["validation_indexes"]) == list(range(10, 20))
  with pytest.raises(HParamError, match="smaller validation size"):
    splits.write_subset(str(tmp_path / "t"), "sst", str(tmp_path / "o"), "tsv", 11, None, seed=0)


def test_conll_sentences_are_dealt_whole(data_dir, tmp_path):
  out = splits.write_subset(str(data_dir / "tagging" / "oanc_pos"), "chunk", str(tmp_path), "conll", 200, 300, 0)
  train = read_conll(str(tmp_path / "validation" / "chunk" / "train.txt"))
  validation = read_conll(str(tmp_path / "validation" / "chunk" / "dev.txt"))
  original = read_conll(str(data_dir / "tagging" / "oanc_pos" / "train.txt"))
  assert len(train) == out["train"] == 300 and len(validation) == 200
  assert train == [original[i] for i in out["train_indexes"]]
  assert len(read_conll(str(tmp_path / "dev" / "chunk" / "dev.txt"))) == 2000


@pytest.mark.parametrize("size", [300, 2500, None])
def test_repeated_sentences_never_put_a_training_sentence_in_validation(data_dir, tmp_path, size):
  """oanc_pos repeats sentences within its training file (215 texts, 2,597 sentences): a repeated one stays in the
  pool, so no validation sentence is one a subset trains on (dealt by position alone, 9-12 would be)."""
  task_dir = data_dir / "tagging" / "oanc_pos"
  train_units = splits.read_units(str(task_dir / "train.txt"), "conll")
  repeated = {t for t, n in collections.Counter(train_units.texts).items() if n > 1}
  assert len(repeated) == 215
  out = splits.write_subset(str(task_dir), "chunk", str(tmp_path), "conll", 500, size, 0)
  words = lambda path: [" ".join(w) for w, _ in read_conll(str(path))]
  train, validation = (words(tmp_path / "validation" / "chunk" / f"{s}.txt") for s in ("train", "dev"))
  assert len(train) == (size or 17500) and len(validation) == 500
  assert not set(validation) & set(train) and not set(validation) & repeated
  assert not set(validation) & set(words(task_dir / "dev.txt"))
  by_position = [i for i in out["train_indexes"] if train_units.texts[i] in repeated]
  assert by_position  # the subsets do hold repeated sentences: the rule above has something to keep apart


PAIR_LAYOUTS = {  # the official GLUE files: name, header, a row from (label, a, b), the dev file's stem
    "mrpc": ("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String", lambda i, y, a, b: f"{y}\t{i}\t{i + 1}\t{a}\t{b}",
             "dev"),
    "mnli": ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
             "sentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label",
             lambda i, y, a, b: f"{i}\t{i}\t{i}n\tfiction\t( x )\t( y )\t(ROOT x)\t(ROOT y)\t{a}\t{b}\t{y}\t{y}",
             "dev_matched"),
}


@pytest.mark.parametrize("task_name", sorted(PAIR_LAYOUTS))
def test_sentence_pair_tasks_are_carved_and_scored_by_tfidf_with_c_chosen_on_validation(data_dir, tmp_path,
                                                                                         task_name):
  """Pairs of real rt_polarity sentences in the task's official layout, labelled by whether the two share a
  polarity: the carving reads both sentences (a repeated pair and a pair also in dev stay out of validation),
  the library's reader reads what it writes, and TF-IDF + LR with C chosen on validation equals scikit-learn
  fitted here on dense [v(a), v(b), v(a) v(b)] features."""
  import numpy as np
  from sklearn.feature_extraction.text import TfidfVectorizer
  from sklearn.linear_model import LogisticRegression
  from electra_tf.configs import FinetuningConfig
  from electra_tf.finetuning import baselines

  header, row, dev_stem = PAIR_LAYOUTS[task_name]
  sst = splits.read_units(str(data_dir / "glue-style" / "rt_polarity" / "train.tsv"), "tsv").units
  sentences, polarity = [u.split("\t")[0] for u in sst], [u.split("\t")[1] for u in sst]
  rng = np.random.RandomState(0)
  pairs = [(int(i), int(j)) for i, j in zip(rng.randint(0, 3000, 700), rng.randint(0, 3000, 700))]
  labels = {"mrpc": ("0", "1"), "mnli": ("contradiction", "entailment")}[task_name]
  lines = [row(k, labels[polarity[i] == polarity[j]], sentences[i], sentences[j]) for k, (i, j) in enumerate(pairs)]
  # a repeated pair (5 and 600), a pair also in dev (7), a pair that shares only its first sentence with a
  # training pair (601), and 602: pair 9 swapped, one text for MRPC, whose reader also trains on swapped pairs
  i5, i9, j9 = pairs[5][0], *pairs[9]
  extra = [lines[5], row(601, labels[0], sentences[i5], "another second sentence"),
           row(602, labels[0], sentences[j9], sentences[i9])]
  train_lines, dev_lines = lines[:600] + extra, lines[600:] + [lines[7]]
  src = tmp_path / "src"
  src.mkdir()
  (src / "train.tsv").write_text(header + "\n" + "\n".join(train_lines) + "\n")
  (src / f"{dev_stem}.tsv").write_text(header + "\n" + "\n".join(dev_lines) + "\n")
  layout = splits.tsv_layout(task_name)
  units = splits.read_units(str(src / "train.tsv"), "tsv", layout.header, layout.text_columns, layout.unordered)
  pair_text = lambda a, b: "\t".join(sorted([a, b]) if task_name == "mrpc" else [a, b])
  assert units.texts[601] == pair_text(sentences[i5], "another second sentence")  # both sentences, not one
  assert (units.texts[602] == units.texts[9]) == (task_name == "mrpc")
  excluded = {5, 600, 7} | ({9, 602} if task_name == "mrpc" else set())
  ever = set()
  for seed in range(1, 40):
    out = splits.write_subset(str(src), task_name, str(tmp_path / "o"), "tsv", 150, 300, seed=seed)
    assert not excluded & set(out["validation_indexes"])
    ever |= set(out["validation_indexes"])
  assert 601 in ever  # sharing one sentence is no repeat
  out = splits.write_subset(str(src), task_name, str(tmp_path / "o"), "tsv", 150, 300, seed=1)
  data = {}
  for split, root in (("train", out["validation_root"]), ("validation", out["validation_root"]),
                      ("dev", out["dev_root"])):
    cfg = FinetuningConfig.create("m", str(tmp_path), task_names=[task_name], raw_data_dir=root)
    examples = get_task(cfg, task_name, None).get_examples("train" if split == "train" else "dev")
    data[split] = baselines.glue_examples(examples)
  if task_name == "mrpc":  # the reader adds each training pair swapped (the reference's double_unordered)
    assert len(data["train"].labels) == 600
    data["train"] = baselines.Examples(*(part[:300] for part in data["train"]))
  assert [len(data[s].labels) for s in ("train", "validation", "dev")] == [300, 150, 101]
  assert all(b is not None for b in data["validation"].texts_b)
  grid = (1.0, 100.0)
  got = baselines.tfidf_logreg(data["train"], data["validation"], data["dev"], c_grid=grid)

  train = data["train"]
  vec = TfidfVectorizer(ngram_range=(1, 2)).fit(train.texts_a + train.texts_b)
  dense = lambda d: np.hstack([vec.transform(d.texts_a).toarray(), vec.transform(d.texts_b).toarray(),
                               vec.transform(d.texts_a).toarray() * vec.transform(d.texts_b).toarray()])
  acc = lambda c, d: 100 * np.mean(LogisticRegression(C=c, max_iter=1000).fit(dense(train), train.labels)
                                   .predict(dense(d)) == np.array(d.labels))
  expected = {c: acc(c, data["validation"]) for c in grid}
  best = max(grid, key=lambda c: (expected[c], -c))
  assert got["validation"] == pytest.approx(expected)
  assert got["C"] == best and got["dev_accuracy"] == pytest.approx(acc(best, data["dev"]))


def test_choice_ties_and_convergence():
  grid = selection.grid([1e-3, 3e-4], [20, 10])
  assert grid[0] == selection.Setting(3e-4, 10) and grid[-1] == selection.Setting(1e-3, 20)
  scores = {grid[0]: [70, 71], grid[1]: [71, 71], grid[2]: [69, 70], grid[3]: [71, 71]}
  assert selection.choose(scores, grid) == grid[1]  # 71 ties with grid[3]: the earlier (lower LR) wins
  assert selection.epoch_curve(scores, grid[3]) == [(10, 69.5), (20, 71)]
  assert selection.converged([(10, 70.0), (20, 71.0), (40, 70.5)], 20) is True
  assert selection.converged([(10, 70.0), (20, 71.0), (40, 71.5)], 20) is False
  assert selection.converged([(10, 70.0), (20, 71.0)], 20) is None  # no longer run: not shown
  assert selection.Setting(3e-4, 20, 0.8).key() == "lr3e-4_ep20_lwd0.8"
  assert [selection.learning_rate_label(lr) for lr in (1e-3, 0.0003, 2e-5, 1.5e-4, 2e-4, 0.1, 1.0)] == [
      "1e-3", "3e-4", "2e-5", "1.5e-4", "2e-4", "1e-1", "1e0"]
  calls = []
  result = selection.select(lambda s, seed: calls.append((s, seed)) or s.epochs + seed, grid, [0, 1])
  assert len(calls) == 8 and result["chosen"] == selection.Setting(3e-4, 20) and result["converged"] is None


def test_extension_runs_longer_until_the_curve_turns():
  """The best grid point is the longest at its LR: twice the epochs run next, again while longer wins, up to
  the cap; a longer run that ties or loses ends it, and other LRs never get longer runs."""
  grid = selection.grid([3e-4, 1e-3], [10, 20])
  peak = {10: 60.0, 20: 62.0, 40: 64.0, 80: 63.0, 160: 70.0}  # rises to 40 epochs, then falls at 80
  calls = []

  def score(s, seed):
    calls.append(s)
    return peak[s.epochs] - (5 if s.learning_rate == 1e-3 else 0)

  result = selection.select(score, grid, [0], max_epochs=200)
  assert calls[4:] == [selection.Setting(3e-4, 40), selection.Setting(3e-4, 80)]  # 160 is never run
  assert result["chosen"] == selection.Setting(3e-4, 40) and result["converged"] is True
  assert result["curve"] == [(10, 60.0), (20, 62.0), (40, 64.0), (80, 63.0)]
  capped = selection.select(score, grid, [0], max_epochs=79)  # 80 epochs would pass the cap
  assert capped["chosen"] == selection.Setting(3e-4, 40) and capped["converged"] is None
  assert len(selection.select(score, grid, [0])["scores"]) == 4  # no cap given: the grid alone
  scores = {s: [61.0] for s in grid}
  assert selection.extension(scores, grid, 100) is None  # every point ties: the first (10 epochs) wins
  scores[selection.Setting(1e-3, 20)] = [61.5]
  assert selection.extension(scores, grid, 100) == selection.Setting(1e-3, 40)
  assert selection.extension({**scores, selection.Setting(1e-3, 40): [61.5]}, grid + [selection.Setting(1e-3, 40)],
                             100) is None  # the tie keeps the cheaper 20 epochs: converged


@pytest.mark.slow
def test_fine_tuning_selection_never_reads_dev(data_dir, bert_vocab, tmp_path):
  """Two grid points fine-tuned for real (tiny model, random weights): the chosen setting and every validation
  score are the same when dev's labels are garbage; the dev scores of the chosen setting differ."""
  from _finetuning_testlib import tiny_config
  chosen, dev_scores = [], []
  for garbage in (False, True):
    root = tmp_path / ("garbage" if garbage else "clean")
    out = splits.write_subset(str(data_dir / "glue-style" / "rt_polarity"), "sst", str(root), "tsv", 64, 96, 0)
    dev = root / "dev" / "sst" / "dev.tsv"
    if garbage:
      lines = dev.read_text().splitlines()
      dev.write_text("\n".join([lines[0]] + [f"{l.split(chr(9))[0]}\t{i % 2}" for i, l in enumerate(lines[1:])])
                     + "\n")
    factory = lambda **kw: tiny_config(root, ["sst"], bert_vocab, **kw)
    score = lambda s, seed: selection.finetune_score(factory, s, seed, out["validation_root"], "sst", "accuracy")
    result = selection.select(score, selection.grid([1e-4, 3e-3], [1]), [0])
    chosen.append((result["chosen"], result["scores"]))
    dev_scores.append(selection.finetune_score(factory, result["chosen"], 1, out["dev_root"], "sst", "accuracy"))
  assert chosen[0] == chosen[1]
  assert dev_scores[0] != dev_scores[1]


def test_a_stopped_trial_ends_the_selection_with_the_rerun_line(monkeypatch):
  """A stop signal during a scored trial (the run saves the trial's checkpoint and returns no result for it):
  ``finetune_score`` exits with the line that says to rerun (``run.run_every_trial``), instead of an IndexError
  or a score."""

  class StoppedRun:
    stopped = True

    def __init__(self, cfg, progress, trainers):
      del cfg, progress, trainers

    def run(self):
      return []

  from electra_tf.finetuning import run as run_lib
  monkeypatch.setattr(run_lib, "FinetuningRun", StoppedRun)
  with pytest.raises(FinetuningError, match=r"peak LR 0.001, 2 epochs, seed 1 stopped by a signal; rerun the same command"):
    selection.finetune_score(lambda **kw: kw, selection.Setting(1e-3, 2), 1, "root", "sst", "accuracy")


def test_the_imdb_task_is_a_seeded_draw_of_the_packages_labelled_reviews(tmp_path):
  """sample_data.write_imdb_task: 3,000 train / 500 dev reviews, disjoint, each with the label the package
  gives it (read here with csv), the same files again for the same seed, read by the sst reader."""
  import csv
  from electra_tf import sample_data
  from electra_tf.configs import FinetuningConfig
  out = sample_data.write_imdb_task(tmp_path / "imdb" / "sst")
  with open(sample_data._reviews_csv(), encoding="utf-8", newline="") as f:  # pylint: disable=protected-access
    labels = {}
    for row in csv.DictReader(f):
      if row["source"] == "imdb":
        labels.setdefault(" ".join(sample_data.review_to_paragraphs(row["text"]).split()), set()).add(row["label"])
  rows = {s: [line.split("\t") for line in (out / f"{s}.tsv").read_text().splitlines()[1:]] for s in ("train", "dev")}
  assert [len(rows["train"]), len(rows["dev"])] == [3000, 500]
  assert not {r[0] for r in rows["train"]} & {r[0] for r in rows["dev"]}
  assert all(labels[text] == {label} for text, label in rows["train"] + rows["dev"])
  assert 0.4 < sum(label == "1" for _, label in rows["dev"]) / 500 < 0.6
  again = sample_data.write_imdb_task(tmp_path / "again")
  assert (again / "train.tsv").read_bytes() == (out / "train.tsv").read_bytes()
  first = (out / "train.tsv").read_bytes()
  other = sample_data.write_imdb_task(tmp_path / "imdb" / "sst", seed=1)  # another draw replaces the files
  assert other == out and (out / "train.tsv").read_bytes() != first
  assert json.loads((out / "task.json").read_text())["seed"] == 1
  sample_data.write_imdb_task(tmp_path / "imdb" / "sst")
  cfg = FinetuningConfig.create("m", str(tmp_path), task_names=["sst"], raw_data_dir=str(tmp_path / "imdb"))
  assert len(get_task(cfg, "sst", None).get_examples("dev")) == 500
