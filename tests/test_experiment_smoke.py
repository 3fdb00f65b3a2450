"""Smoke tests of the experiments (the ``experiments`` package, run as ``python -m experiments.<name>``):
paper_claim --quick (every stage, tiny sizes, two shards), label_efficiency (--quick, its grid extensions and
selection seeds, its work-dir check), and the planning of short_run_sweep."""

import importlib
import itertools
import json
import math
import os
import statistics
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, require_module
from electra_tf import flops, presets, reporting
from electra_tf.configs import PretrainingConfig

METHODS = ("electra", "mlm", "none")


def _load_experiment(name: str):
  """``experiments.<name>`` (the checkout's root is on pytest's path, as it is for ``python -m``)."""
  return importlib.import_module(f"experiments.{name}")


def _command(name: str) -> list:
  """What follows ``python`` to run ``experiments.<name>`` (as ``command_server.run`` takes it)."""
  return ["-m", f"experiments.{name}"]


def _paper_claim():
  return _load_experiment("paper_claim")


def _u_statistic(x, y):
  """Mann-Whitney U of x: pairs where x wins, ties counted half."""
  return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(x, y))


def _exact_two_sided_p(x, y):
  """Two-sided exact Mann-Whitney p of untied samples: every split of the pooled values into len(x) and len(y)
  is equally likely under the null; p = 2 x the smaller tail of U, at most 1."""
  pooled = list(x) + list(y)
  u = _u_statistic(x, y)
  null = [_u_statistic([pooled[i] for i in c], [pooled[i] for i in range(len(pooled)) if i not in c])
          for c in itertools.combinations(range(len(pooled)), len(x))]
  tail = min(sum(v >= u for v in null), sum(v <= u for v in null)) / len(null)
  return min(1.0, 2 * tail)


def _assert_drawn(path):
  """A PNG with drawn content: many colours, and a few percent of the pixels not background."""
  import matplotlib.image  # pylint: disable=import-outside-toplevel
  image = matplotlib.image.imread(str(path))[..., :3]
  assert image.shape[0] > 200 and image.shape[1] > 200
  assert len({tuple(p) for p in image.reshape(-1, 3)[::7].tolist()}) > 20
  assert (image.reshape(-1, 3).min(axis=1) < 0.9).mean() > 0.02


@pytest.mark.slow
def test_paper_claim_quick(tmp_path, data_dir, command_server):
  require_module("matplotlib")
  work = tmp_path / "pc"
  data_env = {"ELECTRA_TEST_DATA": str(data_dir)}
  env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **data_env}
  cmd = _command("paper_claim") + ["--work-dir", str(work), "--quick"]
  # two shards on one work dir, as the full run is meant to be started on 2 cores: each unit runs exactly once
  shards = [subprocess.Popen([sys.executable, *cmd, "--shard", f"{k}/2"], cwd=str(REPO_ROOT), env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in (0, 1)]
  outputs = [p.communicate(timeout=1500) for p in shards]
  for p, (out, err) in zip(shards, outputs):
    assert p.returncode == 0, out[-3000:] + err[-3000:]
  ran = [line.split("] run: ")[1] for out, _ in outputs for line in out.splitlines() if "] run: " in line]
  assert len(ran) == len(set(ran)), sorted(ran)
  kinds = {prefix: sum(r.startswith(prefix) for r in ran) for prefix in
           ("data", "pretrain_sweep_", "validation_sst_sweep_", "pretrain_pt_", "baseline_", "select_", "final_")}
  # the quick grid: one point on sst (160 sentences), two on POS (80); 2 lengths x 2 methods + random weights,
  # which get each point twice (with the preset's decay and without). The 6-step length is the sweep's length,
  # so its runs at the chosen LRs are the sweep's: 2 new pre-trainings
  assert kinds == {"data": 1, "pretrain_sweep_": 4, "validation_sst_sweep_": 4, "pretrain_pt_": 2, "baseline_": 2,
                   "select_": 4 * 1 + 4 * 2 + 2 * (1 + 2), "final_": 2 * 5 * 2} and len(ran) == sum(kinds.values()), \
      sorted(ran)
  assert all(out.count("] run: ") >= 10 for out, _ in outputs)  # dealt out, not all taken by one
  assert "summary: " in outputs[0][0] and "summary: " not in outputs[1][0]  # shard 0 writes it
  summary = json.loads((work / "summary.json").read_text())

  # POS through the chunk reader: the documented cut of oanc_pos, counted independently in the written files
  pos_dir = work / "data" / "finetuning_data" / "chunk"
  for split, n in (("train", 120), ("dev", 60)):
    blocks = [b for b in (pos_dir / f"{split}.txt").read_text(encoding="utf-8").split("\n\n") if b.strip()]
    assert summary["data"]["pos"][split]["sentences"] == len(blocks) == n
  sst_dev = (work / "data" / "finetuning_data" / "sst" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]

  # selection never reads dev: the sweep's fine-tunes and every grid point are scored on the validation split
  stages = {f.stem: json.loads(f.read_text()) for d in (work / "stages", work / "finetune" / "stages")
            for f in d.glob("*.json")}
  for name, record in stages.items():
    if name.startswith(("validation_", "select_", "final_")):
      assert record["on"] == ("dev" if name.startswith("final_") else "validation"), name
  lengths = summary["lengths"]
  assert [length["steps"] for length in lengths] == [6, 12]
  cells = {(c["task"], c["steps"]["electra"]): c for c in summary["cells"]}
  assert set(cells) == {("sst", 6), ("sst", 12), ("pos", 6), ("pos", 12)}
  for (task, steps), cell in cells.items():
    assert cell["size"] == {"sst": 160, "pos": 80}[task]  # all training sentences but the 40 of validation
    base = stages[f"baseline_{task}_all"]
    assert cell["baselines"] == base
    for method in METHODS:
      m = cell["methods"][method]
      assert len(m["dev"]) == 2 and all(math.isfinite(v) for v in m["dev"])
      assert (m["median"], m["min"], m["max"]) == (statistics.median(m["dev"]), min(m["dev"]), max(m["dev"]))
      name = "none" if method == "none" else f"{method}_s{cell['steps'][method]}"
      chosen = selection_key(m["chosen"])
      assert m["dev"] == [stages[f"final_{task}_{name}_all_{chosen}_seed{seed}"]["value"] for seed in (1, 2)]
      if task == "sst":  # accuracies are shares of the dev rows
        for v in m["dev"]:
          assert v * len(sst_dev) / 100 == pytest.approx(round(v * len(sst_dev) / 100), abs=1e-6)
    assert cell["methods"]["none"] == cells[(task, 6)]["methods"]["none"]  # random weights: one set of runs
    tests = cell["tests"]
    assert set(tests) == {"electra_vs_mlm", "electra_vs_none", "mlm_vs_none"}
    for pair, t in tests.items():
      a, b = (cell["methods"][x]["dev"] for x in pair.split("_vs_"))
      assert t["U"] == _u_statistic(a, b) and t["n_pairs"] == 4
      if len(set(a + b)) == 4:  # without ties: the exact null, enumerated here
        assert t["p"] == pytest.approx(_exact_two_sided_p(a, b))
    assert summary["target"]["sst" if task == "sst" else "pos"]
  sst_longest = [c for c in summary["cells"] if c["task"] == "sst" and c["steps"]["electra"] == 12][0]
  assert summary["target"]["sst"]["electra_above_tfidf"]["all@12"] == (
      sst_longest["methods"]["electra"]["median"] > sst_longest["baselines"]["tfidf"])

  # equal FLOPs at every length: the chosen MLM step count is ELECTRA's FLOPs in MLM steps, within one step
  for runs in [length["runs"] for length in lengths] + [{p["method"]: p for p in summary["sweep"]["points"]}]:
    e, m = runs["electra"], runs["mlm"]
    assert abs(m["total_flops"] - e["total_flops"]) <= m["total_flops"] / m["steps"]
    assert m["steps"] > e["steps"]
  pc = _paper_claim()
  for method in ("electra", "mlm"):  # the reused sweep runs: the chosen point's model
    point = [p for p in summary["sweep"]["points"] if p["method"] == method
             and p["learning_rate"] == summary["sweep"]["chosen"][method]["learning_rate"]][0]
    assert lengths[0]["runs"][method]["name"] == pc.run_name(pc.parse_args(["--quick"]), "sweep", method,
                                                                 point["learning_rate"], point["steps"])
    assert lengths[0]["runs"][method]["heldout"] == point["heldout"]
    assert lengths[1]["runs"][method]["name"].startswith(f"pt_{method}_")
  for length in lengths:
    for method in ("electra", "mlm"):
      run = length["runs"][method]
      assert run["heldout_history"][-1]["step"] == run["steps"]  # the final held-out evaluation
      assert run["learning_rate"] == summary["sweep"]["chosen"][method]["learning_rate"]
      recipe = presets.short_run_settings(run["steps"])  # the tiny preset's recipe supplies warmup and BC
      assert run["learning_rate"] in (3e-4, 1e-3) and run["num_warmup_steps"] == recipe["num_warmup_steps"]
      assert run["adam_bias_correction"] == recipe["adam_bias_correction"]
      # the train-loop seconds and the steady rate, recounted from the trainer's own per-loop rates
      rates = reporting.read_scalars(os.path.join(run["model_dir"], "train"))["sequences_per_sec"]
      steps = [0] + [step for step, _ in rates]
      seconds = sum((b - a) * run["train_batch_size"] / rate for a, b, (_, rate) in zip(steps, steps[1:], rates))
      assert run["loop_seconds"] == pytest.approx(seconds, abs=0.06) and steps[-1] == run["steps"]
      steady = [r for _, r in rates[1:]] or [r for _, r in rates]  # the first loop includes tracing
      assert run["steady_seq_per_sec"] == pytest.approx(statistics.median(steady), abs=0.006)
    assert length["compute"]["flops_equal_mlm_steps"] == length["runs"]["mlm"]["steps"]
    assert length["compute"]["wallclock_equal_mlm_steps"] >= 1
  # the sweep picks each method's LR by its validation score (ties: the lower LR)
  for method in ("electra", "mlm"):
    points = [p for p in summary["sweep"]["points"] if p["method"] == method]
    best = max(points, key=lambda p: (p["sst_validation_accuracy"], -p["learning_rate"]))
    assert summary["sweep"]["chosen"][method]["learning_rate"] == best["learning_rate"]
  preset = PretrainingConfig.create("t", str(tmp_path), **presets.sample_pretraining_hparams(100, 12))
  pre = lengths[-1]["runs"]
  assert pre["electra"]["temperature"] == preset.temperature  # the tiny preset's, wherever it sets it
  assert "disc_auc_real" in pre["electra"]["heldout"] and "disc_auc_real" not in pre["mlm"]["heldout"]
  base = summary["data"]["heldout_unigram_baseline"]
  assert base["token"] not in ("[CLS]", "[SEP]", "[MASK]", "[PAD]")
  top = base["accuracy"] * base["maskable_tokens"]  # a count of held-out tokens, at least the mean count per id
  assert top == pytest.approx(round(top), abs=1e-3) and round(top) >= base["maskable_tokens"] / summary["data"][
      "vocab_size"]
  _assert_drawn(summary["plot"])
  assert "| ELECTRA / MLM steps |" in outputs[0][0] and "| 12 / 22 |" in outputs[0][0]  # shard 0 prints the tables

  # rerunning skips every finished unit
  again = command_server.run(cmd, REPO_ROOT, timeout=600, env=data_env)
  assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
  assert "] run: " not in again.stdout and again.stdout.count("skip (done): ") >= len(ran)


def selection_key(chosen: dict) -> str:
  from electra_tf.finetuning.selection import Setting  # pylint: disable=import-outside-toplevel
  return Setting(**chosen).key()


def test_short_run_sweep_plans_stages_from_its_rows_and_tabulates_them(tmp_path, monkeypatch, capsys):
  """experiments/short_run_sweep.py: Stage A's 8 points, Stage B from the two best A rows, resumable."""
  out = tmp_path / "sweep.jsonl"
  timing = {"pretrain_loop_seconds": 400.0, "pretrain_seconds": 420.0, "resumed": False,
            "pretrain_seq_per_sec": 46.0, "finetune_seconds": 60.0}
  rows = [{"name": "sw_lr1e-4_wu10_bc0_s600", "stage": "A", "learning_rate": 1e-4, "num_warmup_steps": 60,
           "warmup_frac": 0.1, "adam_bias_correction": False, "num_train_steps": 600, "disc_auc": 0.67,
           "disc_auc_real": 0.59, "disc_recall": 0.002, "disc_accuracy": 0.86, "masked_lm_accuracy": 0.06,
           "sst_accuracy": 69.4, **timing},
          {"name": "sw_lr3e-4_wu10_bc1_s600", "stage": "A", "learning_rate": 3e-4, "num_warmup_steps": 60,
           "warmup_frac": 0.1, "adam_bias_correction": True, "num_train_steps": 600, "disc_auc": 0.81,
           "disc_auc_real": 0.77, "disc_recall": 0.2, "disc_accuracy": 0.88, "masked_lm_accuracy": 0.05,
           "sst_accuracy": 76.0, **timing}]
  out.write_text("".join(json.dumps(r) + "\n" for r in rows))
  sweep = _load_experiment("short_run_sweep")
  monkeypatch.chdir(tmp_path)

  def run(*args):  # the script's main, in this process: planning and tables train nothing
    capsys.readouterr()
    assert sweep.main(["--out", str(out), *args]) == 0
    captured = capsys.readouterr()
    return captured.out + captured.err

  planned = run("--points", "A", "--dry-run")
  assert planned.count("todo: ") == 6 and planned.count("skip (done): ") == 2
  stage_b = run("--points", "B", "--dry-run")
  assert "todo: sw_lr3e-4_wu30_bc1_s600" in stage_b and "todo: sw_lr3e-4_wu50_bc1_s600" in stage_b
  table = run("--table")
  assert "| A | 0.0003 | 10% (60) | on | 600 |" in table and "**yes**" in table  # the 1e-4 row collapsed
  levers = run("--points", "lr=3e-4,bc=1,steps=600,temp=2;lr=3e-4,bc=1,steps=600,gen=0.25,genw=0.5", "--dry-run")
  assert "todo: sw_lr3e-4_wu10_bc1_s600_temp2" in levers
  assert "todo: sw_lr3e-4_wu10_bc1_s600_gen0.25_genw0.5" in levers
  with open(out, "a", encoding="utf-8") as f:
    f.write(json.dumps({**rows[1], "name": "sw_lr3e-4_wu10_bc1_s600_temp2", "stage": "custom",
                        "temperature": 2.0}) + "\n")
  assert "| custom (temperature 2) | 0.0003 | 10% (60) | on | 600 |" in run("--table")
  # extra fine-tuning seeds: planned for finished points only, then summarised in the table
  seeds = run("--points", "lr=3e-4,bc=1,steps=600,temp=2;lr=1e-3,bc=1,steps=600,temp=2", "--finetune-seeds",
              "0,1,2", "--dry-run")
  assert "todo: sw_lr3e-4_wu10_bc1_s600_temp2 fine-tuning seed 1" in seeds and "seed 2" in seeds
  assert "fine-tuning seed 0" not in seeds and "sw_lr1e-3_wu10_bc1_s600_temp2 fine-tuning" not in seeds
  with open(out, "a", encoding="utf-8") as f:
    for seed, acc in ((1, 74.8), (2, 75.5)):
      f.write(json.dumps({"name": f"sw_lr3e-4_wu10_bc1_s600_temp2_ft{seed}", "stage": "seed",
                          "point": "sw_lr3e-4_wu10_bc1_s600_temp2", "finetune_seed": seed, "sst_accuracy": acc,
                          "finetune_seconds": 60.0}) + "\n")
  table = run("--table")
  assert "| 76.00 | median 75.5 (74.8-76.0, n=3) |" in table and table.count("| n=1 |") == 2


@pytest.mark.slow
def test_label_efficiency_quick(tmp_path, data_dir, command_server):
  """experiments/label_efficiency.py --quick: baselines equal scikit-learn's pipeline on the written subsets,
  each setting is the best on validation, dev is scored only by the final seeds, and a rerun skips every unit."""
  from sklearn.feature_extraction.text import TfidfVectorizer  # pylint: disable=import-outside-toplevel
  from sklearn.linear_model import LogisticRegression  # pylint: disable=import-outside-toplevel
  from sklearn.pipeline import Pipeline  # pylint: disable=import-outside-toplevel
  from electra_tf.finetuning import selection  # pylint: disable=import-outside-toplevel
  work = tmp_path / "le"
  env = {"ELECTRA_TEST_DATA": str(data_dir)}
  cmd = _command("label_efficiency") + ["--work-dir", str(work), "--quick"]
  proc = command_server.run(cmd, REPO_ROOT, timeout=1200, env=env)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  summary = json.loads((work / "summary.json").read_text())
  assert not summary["pending"]
  rows = {(r["task"], r["size"]): r for r in summary["rows"]}
  assert set(rows) == {("sst", 50), ("sst", 500), ("pos", 50), ("pos", 17900)}

  def read(path):
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return [l.split("\t")[0] for l in lines], [l.split("\t")[1] for l in lines]

  for size in (50, 500):
    row, sub = rows[("sst", size)], work / "subsets" / f"sst_{50 if size == 50 else 'all'}"
    (xt, yt), (xv, yv) = read(sub / "validation" / "sst" / "train.tsv"), read(sub / "validation" / "sst" / "dev.tsv")
    xd, yd = read(sub / "dev" / "sst" / "dev.tsv")
    assert len(xt) == size and len(xv) == 100 and len(xd) == 1000 and not set(xt) & set(xv)
    fit = lambda c: Pipeline([("v", TfidfVectorizer(ngram_range=(1, 2))),
                              ("lr", LogisticRegression(C=c, max_iter=1000))]).fit(xt, yt)
    acc = lambda m, x, y: 100 * sum(a == b for a, b in zip(m.predict(x), y)) / len(y)
    grid = {c: acc(fit(c), xv, yv) for c in (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)}
    best = max(grid, key=lambda c: (grid[c], -c))
    assert row["baselines"]["tfidf_C"] == best
    assert row["baselines"]["tfidf"] == pytest.approx(acc(fit(best), xd, yd))
    none = row["methods"]["none"]
    chosen = selection.Setting(**none["chosen"])
    unit = json.loads((work / "stages" / f"select_sst_none_{50 if size == 50 else 'all'}_{chosen.key()}.json")
                      .read_text())
    assert unit["on"] == "validation" and unit["value"] == none["validation"][chosen.key()][0]
    validation = {k: v[0] for k, v in none["validation"].items()}
    assert validation[chosen.key()] == max(validation.values())
    assert len(none["dev"]) == 2 and none["median"] == statistics.median(none["dev"])
    assert row["tests"]["none_seeds_above_tfidf"] == sum(v > row["baselines"]["tfidf"] for v in none["dev"])
  from electra_tf.finetuning import splits  # pylint: disable=import-outside-toplevel
  sources = {"sst": (str(work / "data" / "finetuning_data" / "sst"), "sst", "tsv"),
             "pos": (str(data_dir / "tagging" / "oanc_pos"), "chunk", "conll")}
  carvings = {}
  for task, size in (("sst", 50), ("sst", None), ("pos", 50), ("pos", None)):
    dealt = splits.deal(*sources[task], 100, size, 0)
    carvings[(task, dealt["train"])] = dealt["fingerprint"]
  for name in os.listdir(work / "stages"):  # grid points read the validation split, final seeds dev
    record = json.loads((work / "stages" / name).read_text())
    if name.startswith(("select_", "final_")):
      assert record["on"] == ("validation" if name.startswith("select_") else "dev")
      assert record["seed"] in ((0,) if name.startswith("select_") else (1, 2))
    if name.startswith(("select_", "final_", "baseline_")):
      assert record["split"] == carvings[(record["task"], record["size"])], name
  assert rows[("pos", 17900)]["baselines"]["unknown_word_tags"] == {"number": "CD", "capitalised": "NNP",
                                                                     "other": "NN"}
  _assert_drawn(work / "plots" / "label_efficiency.png")
  _assert_drawn(work / "plots" / "validation_curves.png")
  again = command_server.run(cmd, REPO_ROOT, timeout=600, env=env)
  assert again.returncode == 0 and "] run: " not in again.stdout, again.stdout[-2000:]
  # a unit fine-tuned on another carving of its cell (another split seed, or another version of the rules)
  unit = next(p for p in sorted((work / "stages").glob("final_sst_none_50_*.json")))
  record = json.loads(unit.read_text())
  unit.write_text(json.dumps({**record, "split": "0123456789ab"}))
  stale = command_server.run(cmd, REPO_ROOT, timeout=600, env=env)
  assert stale.returncode != 0 and "] run: " not in stale.stdout
  assert (f"holds units on another carving of sst 50 ({unit.name}: split 0123456789ab, now "
          f"{record['split']}); rerun with the split settings it used, or use a new --work-dir") in stale.stderr
  unit.write_text(json.dumps(record))  # subset files from another carving (units that recorded none) stop too
  train = work / "subsets" / "sst_50" / "validation" / "sst" / "train.tsv"
  train.write_text(train.read_text().replace("\t1\n", "\t0\n", 1))
  stale = command_server.run(cmd, REPO_ROOT, timeout=600, env=env)
  assert stale.returncode != 0 and "holds sst 50 subsets dealt by another carving" in stale.stderr


def test_label_efficiency_extends_a_grid_top_choice_until_the_curve_turns():
  """The stage logic on recorded validation scores: a choice at the grid's longest run asks for twice its
  epochs, then the next while the longer run wins, up to --extend-examples; final runs are named by the
  chosen setting, so a changed choice never reuses another setting's dev scores."""
  le = _load_experiment("label_efficiency")
  from electra_tf.finetuning.selection import Setting  # pylint: disable=import-outside-toplevel
  args = le.parse_args(["--data-dir", "unused", "--grid-examples", "5000,10000", "--extend-examples", "40000",
                        "--random-weights-decays", ""])
  name = lambda lr, ep: le.select_unit_name("sst", "none", 500, Setting(lr, ep))
  stages = {name(lr, ep): {"value": v} for (lr, ep), v in {(3e-4, 10): 60.0, (3e-4, 20): 62.0, (1e-3, 10): 61.0,
                                                           (1e-3, 20): 61.5}.items()}
  chosen = lambda: le.chosen_setting(args, "sst", "none", 500, 500, stages)
  assert le.chosen_setting(args, "sst", "none", 500, 500, dict(list(stages.items())[:3])) is None  # grid unfinished
  assert chosen() == {"extend": Setting(3e-4, 40), "name": "select_sst_none_500_lr3e-4_ep40", "seed": 0}
  stages[name(3e-4, 40)] = {"value": 63.0}
  assert chosen()["extend"] == Setting(3e-4, 80)  # 80 epochs x 500 = the 40,000 cap
  stages[name(3e-4, 80)] = {"value": 62.5}
  result = chosen()
  assert result["chosen"] == Setting(3e-4, 40) and result["converged"] is True
  assert result["curve"] == [(10, 60.0), (20, 62.0), (40, 63.0), (80, 62.5)]
  assert le.final_unit_name("sst", "none", 500, result["chosen"], 1) == "final_sst_none_500_lr3e-4_ep40_seed1"
  stages[name(3e-4, 80)] = {"value": 64.0}  # still rising at the cap: chosen, convergence not shown
  assert chosen()["chosen"] == Setting(3e-4, 80) and chosen()["converged"] is None
  args.extend_examples = 0  # the grid alone
  assert chosen()["chosen"] == Setting(3e-4, 20) and chosen()["converged"] is None


def test_random_weights_also_try_no_layerwise_decay():
  """Random weights get the grid twice, with the preset's decay 0.8 and without one (``_lwd1``); pre-trained
  models keep 0.8; the better validation score chooses, and the chosen decay reaches the fine-tuning config."""
  le = _load_experiment("label_efficiency")
  from electra_tf.finetuning.selection import Setting  # pylint: disable=import-outside-toplevel
  args = le.parse_args(["--data-dir", "unused", "--grid-examples", "5000,10000", "--extend-examples", "0"])
  assert [s.key() for s in le.grid_for(args, 500, "none")] == [
      "lr3e-4_ep10", "lr3e-4_ep20", "lr3e-4_ep10_lwd1", "lr3e-4_ep20_lwd1",
      "lr1e-3_ep10", "lr1e-3_ep20", "lr1e-3_ep10_lwd1", "lr1e-3_ep20_lwd1"]
  assert [s.key() for s in le.grid_for(args, 500, "electra_s1200")] == [
      "lr3e-4_ep10", "lr3e-4_ep20", "lr1e-3_ep10", "lr1e-3_ep20"]
  scores = dict(zip(le.grid_for(args, 500, "none"), [60.0, 62.0, 63.0, 62.5, 61.0, 61.0, 50.0, 50.0]))
  stages = {le.select_unit_name("sst", "none", 500, s): {"value": v} for s, v in scores.items()}
  result = le.chosen_setting(args, "sst", "none", 500, 500, stages)
  assert result["chosen"] == Setting(3e-4, 10, 1.0) and result["curve"] == [(10, 63.0), (20, 62.5)]
  assert result["converged"] is True and result["chosen"].hparams()["layerwise_lr_decay"] == 1.0
  stages[le.select_unit_name("sst", "none", 500, Setting(3e-4, 20))] = {"value": 63.0}  # a tie: decay 0.8 first
  assert le.chosen_setting(args, "sst", "none", 500, 500, stages)["chosen"] == Setting(3e-4, 20)
  from electra_tf.configs import FinetuningConfig  # pylint: disable=import-outside-toplevel
  cfg = FinetuningConfig.create("m", "/d", model_size="tiny", task_names=["sst"], **result["chosen"].hparams())
  assert (cfg.layerwise_lr_decay, cfg.learning_rate, cfg.num_train_epochs) == (1.0, 3e-4, 10.0)


def test_label_efficiency_chooses_by_the_median_of_several_selection_seeds(capsys):
  """--extra-selection-seeds: every grid point and extension gets one fine-tune per seed (the first seed's units
  keep their names, so a finished one-seed selection is reused), the median chooses, and no selection seed may
  be a reported one."""
  le = _load_experiment("label_efficiency")
  from electra_tf.finetuning.selection import Setting  # pylint: disable=import-outside-toplevel
  args = le.parse_args(["--data-dir", "unused", "--grid-lrs", "1e-3", "--grid-examples", "500,1000",
                        "--extend-examples", "2000", "--extra-selection-seeds", "6,7"])
  assert [(s.epochs, seed, name) for s, seed, name in le.select_unit_names(args, "sst", "mlm", None, 500)] == [
      (1, 0, "select_sst_mlm_all_lr1e-3_ep1"), (1, 6, "select_sst_mlm_all_lr1e-3_ep1_seed6"),
      (1, 7, "select_sst_mlm_all_lr1e-3_ep1_seed7"), (2, 0, "select_sst_mlm_all_lr1e-3_ep2"),
      (2, 6, "select_sst_mlm_all_lr1e-3_ep2_seed6"), (2, 7, "select_sst_mlm_all_lr1e-3_ep2_seed7")]
  name = lambda ep, seed=None: le.select_unit_name("sst", "mlm", None, Setting(1e-3, ep), seed)
  # one lucky seed at 1 epoch (72.0) would have won alone; the medians are 70.0 (1 epoch) and 71.0 (2 epochs)
  stages = {name(1): {"value": 72.0}, name(1, 6): {"value": 70.0}, name(1, 7): {"value": 69.0},
            name(2): {"value": 70.6}, name(2, 6): {"value": 71.0}}
  chosen = lambda: le.chosen_setting(args, "sst", "mlm", None, 500, stages)
  assert chosen() is None  # a seed of the grid is missing
  stages[name(2, 7)] = {"value": 71.4}
  assert chosen() == {"extend": Setting(1e-3, 4), "name": "select_sst_mlm_all_lr1e-3_ep4", "seed": 0}
  stages[name(4)] = {"value": 71.8}
  assert chosen() == {"extend": Setting(1e-3, 4), "name": "select_sst_mlm_all_lr1e-3_ep4_seed6", "seed": 6}
  stages[name(4, 6)], stages[name(4, 7)] = {"value": 69.0}, {"value": 70.2}
  result = chosen()  # 4 epochs: median 70.2, below 2 epochs' 71.0
  assert result["chosen"] == Setting(1e-3, 2) and result["converged"] is True
  assert result["scores"]["lr1e-3_ep2"] == [70.6, 71.0, 71.4] and result["curve"] == [(1, 70.0), (2, 71.0), (4, 70.2)]
  one_seed = le.parse_args(["--data-dir", "unused", "--grid-lrs", "1e-3", "--grid-examples", "500,1000",
                            "--extend-examples", "2000"])
  assert le.chosen_setting(one_seed, "sst", "mlm", None, 500, stages)["chosen"] == Setting(1e-3, 1)  # 72.0 alone
  for bad in ("3", "6,6", "0", "x"):  # 3 is reported (seeds 1-5), 0 is --selection-seed
    with pytest.raises(SystemExit) as stop:
      le.parse_args(["--data-dir", "unused", "--extra-selection-seeds", bad])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--extra-selection-seeds" in err and ("e.g. 6,7" in err), err
  pc = _paper_claim()  # passes them on, and checks them before pre-training
  with pytest.raises(SystemExit) as stop:
    pc.parse_args(["--work-dir", "unused", "--extra-selection-seeds", "5"])
  assert stop.value.code == 2 and "none of them --sweep-seed 0 or a reported seed (1-5)" in capsys.readouterr().err
  given = pc.parse_args(["--work-dir", "unused", "--extra-selection-seeds", "6,7"])
  assert pc.finetuning_args(given, {}).extra_selection_seeds == [6, 7]


def test_paper_claim_sweep_chooses_by_the_median_of_its_selection_seeds(monkeypatch):
  """--extra-selection-seeds reach paper_claim's LR sweep too: each point is fine-tuned once per seed (the first
  seed's units keep their one-seed names, so a finished one-seed sweep is reused) and the median picks the LR."""
  pc = _paper_claim()
  # one lucky seed at 3e-4 (75.2) would win alone; the medians are 72.4 (3e-4) and 73.6 (1e-3)
  values = {"3e-4": {0: 75.2, 6: 72.0, 7: 72.4}, "1e-3": {0: 73.6, 6: 74.0, 7: 73.0}}

  def sweep(*extra):
    ran = []

    def fake_unit(args, name, work, *work_args, owner=True):
      ran.append(name)
      assert owner and args.work_dir.endswith("unused")
      if name.startswith("pretrain_"):
        return {"model_dir": f"models/{name}", "heldout": {}, "loop_seconds": 1.0, "total_flops": 1.0}
      seed = int(name.rsplit("_seed", 1)[1])  # the point's model, fine-tuned with the unit's seed
      assert work is pc.sweep_finetune and work_args[2:] == (f"models/pretrain_{work_args[1]}", seed)
      return {"value": values["3e-4" if "_lr3e-4_s" in name else "1e-3"][seed]}

    monkeypatch.setattr(pc, "unit", fake_unit)
    args = pc.parse_args(["--work-dir", "unused", "--sweep-lrs", "3e-4,1e-3", "--mlm-lr", "1e-3", *extra])
    return pc.stage_sweep(args, 8000), ran

  one, ran = sweep()
  assert ran == ["pretrain_sweep_electra_lr3e-4_s600", "validation_sst_sweep_electra_lr3e-4_s600_lr3e-4_ep2_seed0",
                 "pretrain_sweep_electra_lr1e-3_s600", "validation_sst_sweep_electra_lr1e-3_s600_lr3e-4_ep2_seed0"]
  assert one["chosen"]["electra"]["learning_rate"] == 3e-4 and "(seed 0," in one["chosen"]["electra"]["rule"]
  three, ran = sweep("--extra-selection-seeds", "6,7")
  assert ran[:4] == ["pretrain_sweep_electra_lr3e-4_s600"] + [
      f"validation_sst_sweep_electra_lr3e-4_s600_lr3e-4_ep2_seed{seed}" for seed in (0, 6, 7)] and len(ran) == 8
  assert [p["sst_validation_by_seed"] for p in three["points"]] == [{"0": 75.2, "6": 72.0, "7": 72.4},
                                                                    {"0": 73.6, "6": 74.0, "7": 73.0}]
  assert [p["sst_validation_accuracy"] for p in three["points"]] == [72.4, 73.6]
  assert three["chosen"]["electra"]["learning_rate"] == 1e-3
  assert "the median of seeds 0, 6, 7" in three["chosen"]["electra"]["rule"]
  assert three["chosen"]["mlm"] == {"learning_rate": 1e-3, "rule": "given on the command line"}


def test_label_efficiency_refuses_a_work_dir_of_another_pos_bucket_width(tmp_path):
  """POS units are named without the bucket width, so a work dir whose finished POS trials used another
  --pos-bucket-width stops with one line instead of mixing the two."""
  le = _load_experiment("label_efficiency")
  (tmp_path / "stages").mkdir()
  (tmp_path / "stages" / "select_sst_none_all_lr1e-3_ep1.json").write_text('{"length_bucket_width": 0}')
  args = le.parse_args(["--data-dir", "unused", "--work-dir", str(tmp_path), "--pos-bucket-width", "16"])
  le.check_bucket_width(args)  # sst units never use it
  (tmp_path / "stages" / "select_pos_none_all_lr1e-3_ep2.json").write_text('{"value": 70.0}')  # before the flag
  with pytest.raises(SystemExit, match="--pos-bucket-width 0 .*select_pos_none_all_lr1e-3_ep2.json.*"
                                       "pass --pos-bucket-width 0, or use a new --work-dir"):
    le.check_bucket_width(args)
  args.pos_bucket_width = 0
  le.check_bucket_width(args)


def test_paper_claim_fine_tunes_what_is_ready_while_another_shard_pre_trains(tmp_path, monkeypatch):
  """A shard whose own pre-training runs are done, before it waits for another shard's, runs its fine-tuning
  units of the models already there (random weights, finished runs), once; with --until pretrain it does not."""
  pc = _paper_claim()
  events = []

  def fake_unit(args, name, work, *work_args, owner=True):
    events.append((name, owner))
    done = pc.read_json(pc.stage_path(args.work_dir, name))
    if done is None:  # this shard runs it, or the other shard finishes it meanwhile
      _, _, method, steps, _, run = work_args
      done = {"name": run, "method": method, "steps": steps, "model_dir": f"/models/{run}",
              "steady_seq_per_sec": 10.0, "flops_per_step": 1.0}
      pc.write_json(pc.stage_path(args.work_dir, name), done)
    return done

  monkeypatch.setattr(pc, "unit", fake_unit)
  monkeypatch.setattr(pc.le, "run", lambda la, ready=None: events.append(("fine-tune", sorted(la.pretrained),
                                                                          sorted(ready))))
  chosen = {"electra": {"learning_rate": 1e-3}, "mlm": {"learning_rate": 1e-3}}
  for until, early in (("pretrain", False), ("summary", True)):
    work = tmp_path / until
    (work / "stages").mkdir(parents=True)
    args = pc.parse_args(["--work-dir", str(work), "--shard", "1/2", "--steps", "600,1200", "--until", until])
    m600, m1200 = (pc.equal_flop_steps(args, 8000, n) for n in (600, 1200))
    pc.write_json(pc.stage_path(str(work), "pretrain_pt_electra_lr1e-3_s600"),  # shard 0 finished its first run
                  {"name": "pt_electra_lr1e-3_s600", "method": "electra", "steps": 600, "model_dir": "/models/e600",
                   "steady_seq_per_sec": 10.0, "flops_per_step": 1.0})
    events.clear()
    lengths = pc.stage_pretrain(args, 8000, chosen)
    assert [length["steps"] for length in lengths] == [600, 1200]
    units = [(f"pretrain_pt_mlm_lr1e-3_s{m600}", True), (f"pretrain_pt_mlm_lr1e-3_s{m1200}", True),
             ("pretrain_pt_electra_lr1e-3_s600", False)]
    models = sorted(["electra_s600", "electra_s1200", f"mlm_s{m600}", f"mlm_s{m1200}"])
    ready = sorted(["none", "electra_s600", f"mlm_s{m600}", f"mlm_s{m1200}"])
    assert events == units + [("fine-tune", models, ready)] * early + [("pretrain_pt_electra_lr1e-3_s1200", False)]


def test_label_efficiency_refuses_another_model_under_a_finished_method_name(tmp_path):
  """Units are named by method (``mlm_s7988``), not by the pre-training run: a work dir whose finished trials of a
  method fine-tuned another model (another pre-training LR at the same steps) stops with one line."""
  le = _load_experiment("label_efficiency")
  (tmp_path / "stages").mkdir()
  args = le.parse_args(["--data-dir", "unused", "--work-dir", str(tmp_path), "--pretrained",
                        f"mlm_s7988={tmp_path / 'models' / 'pt_mlm_lr1e-3_s7988'}"])
  assert le.pretrained_model(args, "mlm_s7988") == "pt_mlm_lr1e-3_s7988" and le.pretrained_model(args, "none") is None
  stage = tmp_path / "stages" / "final_sst_mlm_s7988_1000_lr1e-3_ep5_seed1.json"
  stage.write_text('{"method": "mlm_s7988", "value": 70.0}')  # recorded no model: not checked
  le.check_pretrained(args)
  stage.write_text('{"method": "mlm_s7988", "pretrained": "pt_mlm_lr1e-3_s7988"}')
  le.check_pretrained(args)
  stage.write_text('{"method": "mlm_s7988", "pretrained": "pt_mlm_lr3e-4_s7988"}')
  with pytest.raises(SystemExit, match="holds fine-tunes of mlm_s7988 from the pre-trained model pt_mlm_lr3e-4_s7988 "
                                       r"\(final_sst_mlm_s7988_1000_lr1e-3_ep5_seed1.json\), not pt_mlm_lr1e-3_s7988; "
                                       "give this model another name, or use a new --work-dir"):
    le.check_pretrained(args)
  (tmp_path / "stages" / "select_sst_none_all_lr1e-3_ep1.json").write_text('{"method": "none", "pretrained": null}')
  args.pretrained = {}  # a run without that model does not read its units
  le.check_pretrained(args)


def test_paper_claim_names_a_temperature_run_apart_in_every_stage(tmp_path):
  """A run with --temperature is its own pre-training run (``_temp1``) and its own model in the fine-tuning
  stage, so it is fine-tuned, not given the default temperature's scores."""
  pc, le = (_load_experiment(n) for n in ("paper_claim", "label_efficiency"))
  args = pc.parse_args(["--work-dir", str(tmp_path), "--temperature", "1"])
  name = pc.run_name(args, "pt", "electra", 1e-3, 9600)
  assert name == "pt_electra_lr1e-3_s9600_temp1" and pc.run_name(args, "pt", "mlm", 1e-3, 15976).endswith("_s15976")
  assert pc.model_name({"name": name, "method": "electra", "steps": 9600}) == "electra_s9600_temp1"
  assert pc.model_name({"name": "pt_electra_lr1e-3_s9600", "method": "electra", "steps": 9600}) == "electra_s9600"
  assert pc.model_name({"name": "sweep_mlm_lr3e-4_s997", "method": "mlm", "steps": 997}) == "mlm_s997"
  assert le.label("electra_s9600_temp1") == "ELECTRA, 9,600 steps, temperature 1"
  assert le.label("mlm_s15976") == "MLM only, 15,976 steps" and le.label("none") == "random weights"
  assert le.color("electra_s9600_temp1") == le.color("electra_s9600") == "tab:blue"


def test_paper_claim_names_a_generator_width_run_apart_and_gives_mlm_equal_flops(tmp_path):
  """--generator-size is ELECTRA's generator_hidden_size, its own run and model (``_gen1``, before ``_temp``), and
  MLM-only's step count follows the wider generator's FLOPs; MLM-only's run keeps its name."""
  pc, le = (_load_experiment(n) for n in ("paper_claim", "label_efficiency"))
  both = pc.parse_args(["--work-dir", str(tmp_path), "--generator-size", "1", "--temperature", "1"])
  name = pc.run_name(both, "pt", "electra", 1e-3, 8314)
  assert name == "pt_electra_lr1e-3_s8314_gen1_temp1"
  assert pc.run_name(both, "pt", "mlm", 1e-3, 15976) == "pt_mlm_lr1e-3_s15976"
  assert pc.model_name({"name": name, "method": "electra", "steps": 8314}) == "electra_s8314_gen1_temp1"
  assert le.parse_model_name("electra_s8314_gen1_temp1") == ("electra", 8314, {"gen": "1", "temp": "1"})
  assert le.label("electra_s8314_gen1") == "ELECTRA, 8,314 steps, generator_hidden_size 1"
  wide = pc.parse_args(["--work-dir", str(tmp_path), "--generator-size", "1"])
  default = pc.parse_args(["--work-dir", str(tmp_path)])
  assert pc.pretrain_hparams(wide, 8000, "electra", 8314, 1e-3)["generator_hidden_size"] == 1.0
  preset = pc.pretrain_config(default, 8000, "electra", 9600, 1e-3, "x").generator_hidden_size
  assert preset != 1.0 and pc.pretrain_config(wide, 8000, "mlm", 8314, 1e-3, "x").generator_hidden_size == preset
  # the reference's FLOP count grows with the generator (its blocks and the MLM head at its width), so MLM-only
  # gets more steps for the same ELECTRA steps; counted independently from the block sizes
  per_step = [flops.flops_per_step(pc.pretrain_config(a, 8000, "electra", 9600, 1e-3, "x")) for a in (wide, default)]
  gen_wide = pc.pretrain_config(wide, 8000, "electra", 9600, 1e-3, "x").generator_config()
  gen_default = pc.pretrain_config(default, 8000, "electra", 9600, 1e-3, "x").generator_config()
  assert gen_wide.hidden_size == 2 * gen_default.hidden_size == 128
  cfg = pc.pretrain_config(wide, 8000, "electra", 9600, 1e-3, "x")
  extra = cfg.train_batch_size * (flops.train_flops_per_sequence(gen_wide, cfg.max_seq_length, False) -
                                  flops.train_flops_per_sequence(gen_default, cfg.max_seq_length, False))
  assert extra > 0 and per_step[0] == pytest.approx(per_step[1] + extra)
  assert pc.equal_flop_steps(wide, 8000, 8314) == 15976 == pc.equal_flop_steps(default, 8000, 9600)
  for bad in ("0", "-1", "nan"):
    with pytest.raises(SystemExit) as e:
      pc.parse_args(["--work-dir", str(tmp_path), "--generator-size", bad])
    assert e.value.code == 2
