"""Fine-tuning under MultiWorkerMirroredStrategy: two local worker processes (``strategy: auto`` reads the
cluster from TF_CONFIG) train and evaluate exactly like one process, dropout on, and only the chief writes.

Every worker reads the same global batches and keeps its replica's rows; evaluation gathers every replica's
rows, so each worker scores the whole dev set; results, models, TensorBoard and the resume checkpoints are
the chief's, while the other worker's checkpoints go to a throw-away directory of its own outside the job's.
MirroredStrategy on two logical CPU devices of one process gives the same results, weights and files as well.
"""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from tests._finetuning_testlib import rt_polarity_as_sst

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "_finetuning_dist_worker.py")
# Checkpoints every 5 steps (the resume state every worker must take part in), dev after the first epoch too.
HPARAMS = json.dumps({"save_checkpoints_steps": 5, "eval_every_epoch": True, "keep_all_models": True})


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _start(mode, root, vocab, out, env=None):
  out.mkdir(parents=True, exist_ok=True)
  return subprocess.Popen([sys.executable, WORKER, mode, str(root), str(vocab), str(out), HPARAMS],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})})


def _result(proc, out, timeout=600):
  stdout, stderr = proc.communicate(timeout=timeout)
  assert proc.returncode == 0, stderr[-3000:]
  result = json.loads(stdout.strip().splitlines()[-1])
  result["weights"] = dict(np.load(out / "weights.npz"))
  return result


def _files(models):
  """The files under ``models``, TensorBoard's events files (named by host, process and time) as one name."""
  found = set()
  for directory, _, names in os.walk(models):
    for name in names:
      rel = os.path.relpath(os.path.join(directory, name), models)
      found.add(os.path.join(os.path.dirname(rel), "events") if name.startswith("events.out.") else rel)
  return found


@pytest.fixture(scope="module")
def one_process(tmp_path_factory, data_dir, bert_vocab):
  """The one-process run the distributed runs are compared with: (its data root, its result)."""
  root = rt_polarity_as_sst(tmp_path_factory.mktemp("single"), data_dir, 120, 64)
  out = root / "out"
  return root, _result(_start("single", root, bert_vocab, out), out)


@pytest.mark.slow
def test_two_workers_fine_tune_like_one_process_and_only_the_chief_writes(tmp_path, data_dir, bert_vocab,
                                                                          one_process):
  single_root, one = one_process
  multi_root = rt_polarity_as_sst(tmp_path / "multi", data_dir, 120, 64)
  cluster = {"worker": [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]}
  outs = [tmp_path / f"out_{i}" for i in range(2)]
  workers = [_start("worker", multi_root, bert_vocab, outs[i], {"TF_CONFIG": json.dumps(
      {"cluster": cluster, "task": {"type": "worker", "index": i}})}) for i in range(2)]
  chief, other = (_result(w, out) for w, out in zip(workers, outs))

  assert (one["replicas"], chief["replicas"], other["replicas"]) == (1, 2, 2)
  assert (chief["chief"], other["chief"]) == (True, False)
  # The same dev results on both workers as in one process (each worker scores the whole dev set) ...
  assert chief["results"] == other["results"]
  assert chief["results"]["accuracy"] == one["results"]["accuracy"]
  assert chief["results"] == pytest.approx(one["results"], rel=1e-5, abs=1e-6)
  # ... from the same weights: float rounding of sums in another order (one Adam step moves a weight ~1e-3).
  assert sorted(chief["weights"]) == sorted(other["weights"]) == sorted(one["weights"])
  for name, value in one["weights"].items():
    np.testing.assert_array_equal(other["weights"][name], chief["weights"][name], err_msg=name)
    np.testing.assert_allclose(chief["weights"][name], value, rtol=0, atol=1e-5, err_msg=name)
  results = json.loads((multi_root / "models/tiny/results/sst_results.json").read_text())
  assert [t["sst"] for t in results["trials"]] == [chief["results"]]

  # Only the chief writes into the model directory: the other worker wrote, created and removed nothing there,
  # and its checkpoints went to a directory of its own, removed at the end.
  assert other["writes"] == [], other["writes"]
  assert any(path.endswith("sst_results.json") for path in chief["writes"])  # the record sees the chief's
  assert any("finetuning_resume" in path for path in chief["writes"])
  assert other["checkpoint_dirs"] and all(
      not os.path.realpath(d).startswith(str(multi_root)) and not exists for d, exists in other["checkpoint_dirs"])
  assert _files(multi_root / "models") == _files(single_root / "models")


def test_two_replicas_on_one_machine_fine_tune_like_one_device(tmp_path, data_dir, bert_vocab, one_process):
  """MirroredStrategy on two logical CPU devices (configured in a fresh process, before TensorFlow starts):
  the same dev results, weights and files as one device on the same global batch."""
  single_root, one = one_process
  root = rt_polarity_as_sst(tmp_path / "mirrored", data_dir, 120, 64)
  out = tmp_path / "out"
  mirrored = _result(_start("mirrored", root, bert_vocab, out), out)
  assert (one["replicas"], mirrored["replicas"]) == (1, 2)
  assert mirrored["results"] == pytest.approx(one["results"], rel=1e-5, abs=1e-6)
  assert sorted(mirrored["weights"]) == sorted(one["weights"])
  for name, value in one["weights"].items():
    np.testing.assert_allclose(mirrored["weights"][name], value, rtol=0, atol=1e-5, err_msg=name)
  assert _files(root / "models") == _files(single_root / "models")
