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
  for method in ("electra", "mlm", "no_pretrain"):
    acc = summary["finetuning"][method]["accuracy"]
    assert acc["n"] == 1
    for key in ("median", "mean", "std", "min", "max"):
      assert math.isfinite(acc[key]), (method, key, acc)
    assert 0.0 <= acc["median"] <= 100.0
  pre = summary["pretraining"]
  # equal compute: MLM gets more (cheaper) steps so that both used about the same FLOPs
  assert pre["mlm"]["steps"] > pre["electra"]["steps"]
  ratio = pre["mlm"]["total_flops"] / pre["electra"]["total_flops"]
  assert abs(ratio - 1.0) < 0.15, ratio
  for method in ("electra", "mlm"):
    final = pre[method]["final_heldout_eval"]
    assert final is not None and math.isfinite(final["masked_lm_accuracy"])
  assert math.isfinite(pre["electra"]["final_heldout_eval"]["disc_auc"])
  assert os.path.getsize(summary["plot"]) > 1000
  # rerunning skips every finished stage
  again = subprocess.run(cmd, cwd=str(REPO_ROOT), env=env, capture_output=True, text=True, timeout=600)
  assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
  for tool in ("run_pretraining.py", "run_finetuning.py", "build_vocab.py"):
    assert tool not in again.stdout, again.stdout
