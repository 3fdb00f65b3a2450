"""Result files as the reference writes them, plus JSON, trial summaries and GLUE submission files.

All writes are atomic (write to a temporary file, then rename), so an interrupted run never leaves a
half-written results file.
"""

import collections
import json
import os
import pickle
import statistics
import typing

import numpy as np

from electra_tf.runtime.atomic_files import atomic_write


def _jsonable(x):
  if isinstance(x, dict):
    return {str(k): _jsonable(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [_jsonable(v) for v in x]
  if isinstance(x, np.generic):
    return x.item()
  if isinstance(x, np.ndarray):
    return x.tolist()
  return x


def write_json(path: str, obj):
  atomic_write(path, (json.dumps(_jsonable(obj), indent=2) + "\n").encode("utf-8"))


def write_pickle(path: str, obj):
  atomic_write(path, pickle.dumps(obj))


def write_text(path: str, text: str):
  atomic_write(path, text.encode("utf-8"))


def format_results(trial_results: typing.Sequence[dict]) -> str:
  """The reference's results.txt: one line per trial and task, ``task: k: v - k: v`` (2 decimals)."""
  lines = []
  for trial in trial_results:
    for task, metrics in trial.items():
      if task in ("time", "global_step", "trial", "seed", "best"):
        continue
      lines.append(task + ": " + " - ".join(f"{k}: {v:.2f}" for k, v in metrics.items()))
  return "\n".join(lines) + ("\n" if lines else "")


def summarize(trial_results: typing.Sequence[dict]) -> dict:
  """{task: {metric: {median, mean, std, min, max, n}}} over trials (std: sample std, 0 for one)."""
  values = collections.defaultdict(lambda: collections.defaultdict(list))
  for trial in trial_results:
    for task, metrics in trial.items():
      if isinstance(metrics, dict):
        for k, v in metrics.items():
          if isinstance(v, (int, float)):
            values[task][k].append(float(v))
  summary = {}
  for task, metrics in values.items():
    summary[task] = {}
    for k, vs in metrics.items():
      summary[task][k] = {"median": statistics.median(vs), "mean": statistics.fmean(vs),
                          "std": statistics.stdev(vs) if len(vs) > 1 else 0.0,
                          "min": min(vs), "max": max(vs), "n": len(vs)}
  return summary


def format_summary(summary: dict) -> str:
  lines = []
  for task, metrics in summary.items():
    parts = [f"{k}: median {s['median']:.2f} mean {s['mean']:.2f} std {s['std']:.2f}"
             for k, s in metrics.items()]
    n = next(iter(metrics.values()))["n"] if metrics else 0
    lines.append(f"{task} ({n} trial{'s' if n != 1 else ''}): " + " | ".join(parts))
  return "\n".join(lines) + ("\n" if lines else "")


def write_results(results_dir: str, tasks_key: str, trial_results: typing.Sequence[dict],
                  baselines: typing.Optional[dict] = None):
  """``<tasks>_results.txt`` (reference format), ``.pkl`` (list of per-trial dicts) and ``.json``
  (trials plus the median/mean/std summary, and the classical baselines of a task from the user's files)."""
  base = os.path.join(results_dir, f"{tasks_key}_results")
  write_text(base + ".txt", format_results(trial_results))
  write_pickle(base + ".pkl", list(trial_results))
  summary = summarize(trial_results)
  document = {"trials": list(trial_results), "summary": summary}
  if baselines:
    document["baselines"] = baselines
  write_json(base + ".json", document)
  return summary


def write_glue_submission(path: str, eids: typing.Sequence[int], labels: typing.Sequence[str]):
  """A GLUE-server TSV: ``index<TAB>prediction`` sorted by index."""
  rows = sorted(zip((int(e) for e in eids), labels))
  write_text(path, "index\tprediction\n" + "".join(f"{e}\t{label}\n" for e, label in rows))
