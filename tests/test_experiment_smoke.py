"""Smoke test of experiments/electra_vs_mlm.py --quick: every stage through the real CLIs, tiny sizes."""

import json
import math
import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

pytest.importorskip("matplotlib")


@pytest.mark.slow
def test_electra_vs_mlm_quick(tmp_path):
  work = tmp_path / "evm"
  env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
  cmd = [sys.executable, str(REPO_ROOT / "experiments" / "electra_vs_mlm.py"), "--work-dir", str(work), "--quick",
         "--seeds", "1"]
  proc = subprocess.run(cmd, cwd=str(REPO_ROOT), env=env, capture_output=True, text=True, timeout=600)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  summary = json.loads((work / "summary.json").read_text())
  dev = (work / "data" / "finetuning_data" / "sst" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]
  for method in ("electra", "mlm", "no_pretrain"):
    acc = summary["finetuning"][method]["accuracy"]
    (value,) = acc["values"]  # one seed: every statistic is that trial's accuracy
    assert acc["n"] == 1 and summary["finetuning"][method]["seeds"] == [1]
    assert (acc["median"], acc["mean"], acc["min"], acc["max"], acc["std"]) == (value, value, value, value, 0.0)
    correct = value * len(dev) / 100  # a share of the dev rows it was evaluated on
    assert math.isfinite(value) and correct == pytest.approx(round(correct), abs=1e-6), (method, value, len(dev))
    printed = (f"sst dev accuracy median {value:.2f}  mean {value:.2f}  std 0.00  min {value:.2f}  max {value:.2f}"
               "  (n=1)")
    assert sum(printed in line for line in proc.stdout.splitlines()) >= 1, (method, printed)
  pre = summary["pretraining"]
  # equal compute: MLM gets more (cheaper) steps so that both used about the same FLOPs
  assert pre["mlm"]["steps"] > pre["electra"]["steps"]
  ratio = pre["mlm"]["total_flops"] / pre["electra"]["total_flops"]
  assert abs(ratio - 1.0) < 0.15, ratio
  for method in ("electra", "mlm"):
    final = pre[method]["final_heldout_eval"]  # the held-out evaluation at the last step, as written by the run
    assert final["step"] == pre[method]["steps"] and final == pre[method]["eval_history"][-1]
    assert math.isfinite(final["masked_lm_accuracy"])
  assert ("disc_auc" in pre["electra"]["final_heldout_eval"]) and "disc_auc" not in pre["mlm"]["final_heldout_eval"]
  assert math.isfinite(pre["electra"]["final_heldout_eval"]["disc_auc"])
  assert os.path.getsize(summary["plot"]) > 1000
  # rerunning skips every finished stage
  again = subprocess.run(cmd, cwd=str(REPO_ROOT), env=env, capture_output=True, text=True, timeout=600)
  assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
  for tool in ("run_pretraining.py", "run_finetuning.py", "build_vocab.py"):
    assert tool not in again.stdout, again.stdout


def test_short_run_sweep_plans_stages_from_its_rows_and_tabulates_them(tmp_path):
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
  env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
  script = str(REPO_ROOT / "experiments" / "short_run_sweep.py")

  def run(*args):
    proc = subprocess.run([sys.executable, script, "--out", str(out), *args], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout + proc.stderr

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
