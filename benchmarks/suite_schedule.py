"""Replays a test run's durations through pytest-xdist's ``--dist loadfile`` hand-out, in the order the suite's
conftest gives the files now: how long each worker would take.

    CI=true bash scripts/test.sh --durations=0 > run.log      # a run with every test's time
    python benchmarks/suite_schedule.py run.log                 # the replay: seconds per worker

The rule replayed (xdist's LoadScopeScheduling): each worker starts with one file, and is sent the next file
in the queue whenever two or fewer of its tests are left. A test missing from the log counts as 0 s.
"""

import argparse
import collections
import re
import subprocess
import sys

DURATION = re.compile(r"\s*([\d.]+)s (?:call|setup|teardown)\s+(\S+)")


def read_durations(log_path: str) -> dict:
  """``{test id: seconds}``, its setup, call and teardown summed, from pytest's ``--durations=0`` lines."""
  seconds = collections.defaultdict(float)
  with open(log_path, encoding="utf-8") as f:
    for line in f:
      m = DURATION.match(line)
      if m:
        seconds[m.group(2)] += float(m.group(1))
  return dict(seconds)


def collected_ids(pytest_args=()) -> list:
  """The test ids in the order the suite's conftest puts them (what xdist hands out with --no-loadscope-reorder)."""
  out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        *pytest_args], capture_output=True, text=True, check=True).stdout
  return [line.strip() for line in out.splitlines() if "::" in line]


def replay(test_ids: list, seconds: dict, workers: int = 2, refill_at: int = 2) -> list:
  """Seconds each worker is busy when whole files are handed out in ``test_ids``' order."""
  files = collections.OrderedDict()
  for test_id in test_ids:
    files.setdefault(test_id.split("::")[0], []).append(seconds.get(test_id, 0.0))
  queue = list(files.values())
  clocks, pending = [0.0] * workers, [[] for _ in range(workers)]

  def refill(w, at):
    if queue and len(pending[w]) <= at:
      pending[w] += queue.pop(0)

  for at in (0, refill_at):  # one file each, then a second where the first leaves few tests pending
    for w in range(workers):
      refill(w, at)
  while any(pending):
    w = min((w for w in range(workers) if pending[w]), key=lambda w: clocks[w] + pending[w][0])
    clocks[w] += pending[w].pop(0)
    refill(w, refill_at)
  return clocks


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
  p.add_argument("log", help="output of a run with --durations=0")
  p.add_argument("--workers", type=int, default=2)
  p.add_argument("pytest_args", nargs="*", help="what the run was given besides the durations (e.g. -m 'not long')")
  args = p.parse_args(argv)
  seconds = read_durations(args.log)
  ids = collected_ids(args.pytest_args)
  clocks = replay(ids, seconds, args.workers)
  print(f"{len(ids)} tests, {sum(seconds.get(i, 0.0) for i in ids):,.0f} test-seconds; replayed per worker: "
        + ", ".join(f"{c:,.0f} s" for c in clocks) + f"; the run: {max(clocks):,.0f} s")
  return 0


if __name__ == "__main__":
  sys.exit(main())
