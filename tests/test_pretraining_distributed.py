"""tf.distribute: two replicas (Mirrored on two logical CPUs, MultiWorkerMirrored with two local processes)
train exactly like one device on the same global batch, dropout on (masking, sampling and dropout are keyed
by the example's row in the global batch, so they agree too)."""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import _pretraining_testlib as lib

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "_pretraining_dist_worker.py")


@pytest.fixture(scope="module")
def wiki_dir(tmp_path_factory, data_dir, bert_vocab):
  return lib.build_tfrecords(tmp_path_factory.mktemp("wiki"), data_dir, bert_vocab)


# Max |difference| allowed between the same weight of two runs after 6 steps: float rounding of sums taken in
# another order (measured 2.5e-7 single vs mirrored, 2026-11-25). An Adam step at learning rate 2e-3 moves
# every weight by about 1e-3, so a wrong mask, sample, gradient reduction or step count is 100 times over.
ATOL = 1e-5


def _start(mode, root, name, env=None, hparams=None):
  env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}
  return subprocess.Popen([sys.executable, WORKER, mode, str(root), name, str(root / f"{name}_weights.npz"),
                           json.dumps(hparams or {})], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env)


def _result(proc, timeout=400):
  out, err = proc.communicate(timeout=timeout)
  assert proc.returncode == 0, err[-3000:]
  result = json.loads(out.strip().splitlines()[-1])
  with np.load(proc.args[-2]) as weights:
    result["weights"] = dict(weights)
  return result


def _assert_same(a, b, atol=ATOL):
  """Every weight element by element, and the per-step losses."""
  assert sorted(a["weights"]) == sorted(b["weights"])
  worst = max((float(np.abs(a["weights"][k] - b["weights"][k]).max()), k) for k in a["weights"])
  print(f"max |weight difference| {worst[0]:.2e} ({worst[1]})")
  assert worst[0] <= atol, worst
  np.testing.assert_allclose(a["losses"], b["losses"], rtol=2e-4, atol=1e-5)


@pytest.fixture(scope="module")
def one_device(wiki_dir):
  """The one-device run both tests compare with (the same settings in each)."""
  result = _result(_start("single", wiki_dir, "single"))
  assert len(result["losses"]) == 6
  return result


def test_mirrored_two_replicas_equal_one_device(wiki_dir, one_device):
  _assert_same(one_device, _result(_start("mirrored", wiki_dir, "mirrored")))


@pytest.mark.slow
def test_two_replicas_stopped_and_resumed_equal_one_device_straight(wiki_dir, one_device):
  """Exact resuming on several replicas: 3 steps, a new trainer restores that checkpoint and runs to 6."""
  _assert_same(one_device, _result(_start("mirrored_resumed", wiki_dir, "mirrored_resumed")))


def test_float16_on_two_replicas_equals_one_device_in_two_micro_batches(wiki_dir):
  """float16 with its dynamic loss scale on two replicas trains like one device that computes the same two
  halves of the batch one after the other (whether a float16 gradient overflows depends on the rows it sums).
  The first step overflows and is skipped: the skip is no branch around the cross-replica update, which
  TensorFlow refuses under several replicas."""
  # float16's rounding moves a few weights whose early Adam steps hang on tiny gradients (measured 3.7e-4 on the
  # embeddings, 2026-12-07; float32 2.3e-7); a step skipped in one run and not the other changes the later
  # losses by 15-20% (measured against one device in one batch, which skips two steps)
  float16 = {"mixed_precision": "float16"}
  runs = [_start("single", wiki_dir, "single_float16", hparams={**float16, "gradient_accumulation_steps": 2}),
          _start("mirrored", wiki_dir, "mirrored_float16", hparams=float16)]
  single, mirrored = [_result(run) for run in runs]
  _assert_same(single, mirrored, atol=2e-3)
  assert single["loss_scales"] == mirrored["loss_scales"] and mirrored["loss_scales"][0] < 2.0 ** 15


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


@pytest.mark.slow
def test_multi_worker_two_processes_agree_with_one_device(wiki_dir, one_device):
  cluster = {"worker": [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]}
  workers = [_start("worker", wiki_dir, "multi", {"TF_CONFIG": json.dumps(
      {"cluster": cluster, "task": {"type": "worker", "index": i}})}) for i in range(2)]
  results = [_result(w) for w in workers]
  _assert_same(results[0], results[1])
  _assert_same(results[0], one_device)


@pytest.mark.slow
def test_multi_worker_with_xla_compiles_each_workers_update(wiki_dir, one_device):
  """use_xla on two processes: each compiles its gradients and its own optimizer update, with the all-reduce
  between the processes outside them; the two agree, and both agree with the one-device run."""
  cluster = {"worker": [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]}
  workers = [_start("worker_xla", wiki_dir, f"multi_xla{i}", {"TF_CONFIG": json.dumps(
      {"cluster": cluster, "task": {"type": "worker", "index": i}})}) for i in range(2)]
  results = [_result(w) for w in workers]
  assert all(r["update_compiled"] for r in results) and not one_device["update_compiled"]
  _assert_same(results[0], results[1])
  _assert_same(results[0], one_device)
