"""benchmarks/suite_schedule.py: pytest's duration lines read back, and xdist's loadfile hand-out replayed on
small cases worked out by hand."""

import pytest

from _data_prep_testlib import benchmark_module


@pytest.fixture(scope="module")
def schedule():
  return benchmark_module("suite_schedule")


def test_durations_sum_each_tests_phases(schedule, tmp_path):
  log = tmp_path / "run.log"
  log.write_text("============ slowest durations ============\n"
                 "12.50s call     tests/test_a.py::test_one[x]\n"
                 "0.25s setup    tests/test_a.py::test_one[x]\n"
                 "3.00s teardown tests/test_b.py::test_two\n"
                 "(40 durations < 0.005s hidden.)\n551 passed in 1600.56s (0:26:40)\n", encoding="utf-8")
  assert schedule.read_durations(str(log)) == {"tests/test_a.py::test_one[x]": 12.75, "tests/test_b.py::test_two": 3.0}


def test_a_worker_gets_the_next_file_when_two_or_fewer_of_its_tests_are_left(schedule):
  seconds = {"a::t1": 100, "a::t2": 1, "a::t3": 1, "a::t4": 1, "b::u1": 10, "b::u2": 10, "b::u3": 10, "c::v1": 50}
  # a (4 tests) to worker 0, b (3) to worker 1; at 10 s worker 1 has two tests left and takes c
  assert schedule.replay(list(seconds), seconds) == [103, 80]
  # the rule's cost: a worker with a long test among its last two takes the next file before the other is free
  seconds = {"a::t1": 1, "a::t2": 1, "a::t3": 100, "b::u1": 10, "b::u2": 10, "b::u3": 10, "c::v1": 50}
  assert schedule.replay(list(seconds), seconds) == [152, 30]
  # a single-test file leaves its worker with one test pending at the start: it takes c at once
  seconds = {"a::t1": 5, "b::u1": 10, "b::u2": 10, "b::u3": 10, "c::v1": 50}
  assert schedule.replay(list(seconds), seconds) == [55, 30]
  assert schedule.replay(list(seconds), {}, workers=3) == [0, 0, 0]  # tests missing from the log count 0 s
