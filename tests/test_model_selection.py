"""The validation split and label subsets (real rt_polarity and oanc_pos files), and model selection: the grid's
tie-breaking and convergence rule, and a real fine-tuning selection that never reads dev."""

import pytest

from electra_tf.errors import HParamError
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
  with pytest.raises(SystemExit, match=r"peak LR 0.001, 2 epochs, seed 1 stopped by a signal; rerun the same command"):
    selection.finetune_score(lambda **kw: kw, selection.Setting(1e-3, 2), 1, "root", "sst", "accuracy")
