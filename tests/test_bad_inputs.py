"""Every case of tests/bad_input_cases.py (the table scripts/bad_input_tour.py prints): the command exits with
status 2, prints exactly one ``error:`` line containing the case's message and no traceback, and leaves
nothing behind. Cases that need nothing run first; those on the shared test data next; those on a tiny
pre-trained model (built once for this file) are ``slow``. The commands run in children forked from one
process that imported TensorFlow once (the ``command_server`` fixture); the first test shows that a fresh
process does the same."""

import pytest

import bad_input_cases as cases


@pytest.fixture(scope="module", autouse=True)
def forked_commands(command_server):
  cases.commands = command_server
  try:
    yield command_server
  finally:
    cases.commands = None


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


@pytest.mark.parametrize("name", ["missing_corpus", "wrongly_typed_hparam", "convert_random_bytes"])
def test_a_forked_command_does_what_a_fresh_process_does(name, forked_commands, inputs, tmp_path):
  """Exit status, the ``error:`` line, no traceback and nothing left behind, both ways (a data-prep script, the
  fine-tuning script on its hparams, ``-m electra_tf.convert`` on a file)."""
  case = cases.by_name(name)
  outcomes, lines = [], []
  for kind, server in (("fresh", None), ("forked", forked_commands)):
    cases.commands = server
    try:
      root = tmp_path / kind
      root.mkdir()
      outcomes.append(cases.run_case(case, cases.Scene(root, inputs(cases.NOTHING))))
      lines.append([line.replace(str(root), "$S") for line in outcomes[-1].error_lines])
    finally:
      cases.commands = forked_commands
  fresh, forked = outcomes
  assert not fresh.problems(case) and not forked.problems(case), fresh.report(case) + forked.report(case)
  assert lines[0] == lines[1] and len(lines[0]) == 1
  assert forked.returncode == fresh.returncode == 2 and forked.left_behind == fresh.left_behind == []


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
