"""Every case of tests/bad_input_cases.py (the table scripts/bad_input_tour.py prints): the command exits with
status 2, prints exactly one ``error:`` line containing the case's message and no traceback, and leaves
nothing behind. Cases that need nothing run first; those on the shared test data next; those on a tiny
pre-trained model (built once for this file, about a minute on 2 cores) are ``slow``."""

import pytest

import bad_input_cases as cases


def _params(needs, *marks):
  return [pytest.param(case, id=case.name, marks=marks) for case in cases.CASES if case.needs == needs]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
  """The good inputs for each level of ``needs``, prepared once for the cases of this file (a failed set-up
  fails the level's other cases at once, without trying again)."""
  made = {}

  def get(needs, data=None):
    if needs not in made:
      path = tmp_path_factory.mktemp(f"good_inputs_{needs}")
      try:
        cases.prepare(path, needs, data)
        made[needs] = path
      except Exception as e:  # pylint: disable=broad-except
        made[needs] = e
        raise
    if isinstance(made[needs], Exception):
      pytest.fail(f"the good inputs could not be set up: {made[needs]}")
    return made[needs]
  return get


def _check(case, scene):
  outcome = cases.run_case(case, scene, timeout=600)
  assert not outcome.problems(case), outcome.report(case)


@pytest.mark.parametrize("case", _params(cases.NOTHING))
def test_a_bad_input_is_one_error_line_and_exit_2(case, inputs, tmp_path):
  _check(case, cases.Scene(tmp_path, inputs(cases.NOTHING)))


@pytest.mark.parametrize("case", _params(cases.DATA))
def test_a_bad_input_made_from_the_test_data_is_one_error_line_and_exit_2(case, inputs, data_dir, bert_vocab,
                                                                         tmp_path):
  del bert_vocab  # required: prepare copies it
  _check(case, cases.Scene(tmp_path, inputs(cases.DATA, data_dir), data_dir))


@pytest.mark.parametrize("case", _params(cases.MODEL, pytest.mark.slow))
def test_a_bad_input_on_a_pre_trained_model_is_one_error_line_and_exit_2(case, inputs, data_dir, bert_vocab,
                                                                        tmp_path):
  del bert_vocab
  _check(case, cases.Scene(tmp_path, inputs(cases.MODEL, data_dir), data_dir))


def test_every_case_is_a_test_once():
  """No case can drop out of the tests: each has a unique name and one of the levels the tests above take."""
  names = [case.name for case in cases.CASES]
  assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
  assert {case.needs for case in cases.CASES} <= set(cases.NEEDS)
  assert sum(len(_params(needs)) for needs in cases.NEEDS) == len(cases.CASES)
  assert all(case.exit == 2 and case.message and "MESSAGE" not in case.message for case in cases.CASES)
