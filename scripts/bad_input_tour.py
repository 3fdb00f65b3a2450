"""Every bad input we know of, tried as a user would: sets each case of tests/bad_input_cases.py (the table the
tests run too) up in a scratch directory, runs the command and prints a markdown table of what happened.

  .venv/bin/python scripts/bad_input_tour.py [--scratch DIR] [--only 1,2,...] [--keep]

For each row: the exit status, how many stderr lines start with ``error:``, how many non-blank stderr lines
there are (TensorFlow's start-up lines included), the first ``error:`` line (else the last stderr line), and
the files and directories the command left behind that were not there before. The promise is one ``error:``
line holding the case's message, exit 2 and nothing half-written. Data: $ELECTRA_TEST_DATA (default
../shared/data). New cases go in tests/bad_input_cases.py, not here.
"""

import argparse
import pathlib
import shutil
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
import bad_input_cases as cases  # noqa: E402  pylint: disable=wrong-import-position


def _short(argv, root):
  parts = []
  for a in argv:
    s = str(a).replace(str(root), "$S").replace(str(REPO) + "/", "")
    parts.append(s)
  text = " ".join(parts)
  return text if len(text) <= 110 else text[:107] + "..."


def _cell(s):
  return s.replace("|", "\\|").replace("\n", " ")


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--scratch", help="scratch directory (default: a new temporary one)")
  p.add_argument("--only", help="comma-separated row numbers")
  p.add_argument("--keep", action="store_true", help="keep the scratch directory")
  args = p.parse_args()
  root = pathlib.Path(args.scratch or tempfile.mkdtemp(prefix="bad_input_tour_")).resolve()
  root.mkdir(parents=True, exist_ok=True)
  (root / "out").mkdir(exist_ok=True)
  scene = cases.Scene(root)
  try:
    if not scene.ckpt.is_dir():
      print(f"setting up good inputs in {root} ...", file=sys.stderr, flush=True)
      cases.prepare(root, cases.MODEL)
    only = {int(x) for x in args.only.split(",")} if args.only else None
    print("| # | bad input | command | exit | `error:` lines | stderr lines | the line printed | left behind |")
    print("|---|---|---|---|---|---|---|---|")
    problems = []
    for i, case in enumerate(cases.CASES, 1):
      if only and i not in only:
        continue
      r = cases.run_case(case, scene)
      err_lines, tail = r.error_lines, r.stderr_lines
      line = err_lines[0] if err_lines else ("(last stderr line) " + tail[-1] if tail else "(nothing)")
      line = line.replace(str(root), "$S")
      new = r.left_behind
      left = ", ".join(n for n in new[:3]) + (f" (+{len(new) - 3})" if len(new) > 3 else "") if new else "nothing"
      if r.problems(case):
        problems.append((i, case.name, r.problems(case)))
      print(f"| {i} | {_cell(case.what)} | `{_cell(_short(r.argv, root))}` | {r.returncode} | {len(err_lines)} | "
            f"{len(tail)} | `{_cell(line)}` | {_cell(left)} |", flush=True)
  except cases.SetupError as e:
    sys.exit(str(e))
  print(f"\n{len(problems)} row(s) not one `error:` line + exit 2 + nothing left behind: "
        f"{[i for i, _, _ in problems] or 'none'}; scratch: {root}", file=sys.stderr)
  for i, name, found in problems:
    print(f"  row {i} ({name}): {'; '.join(found)}", file=sys.stderr)
  if not args.keep and not args.scratch:
    shutil.rmtree(root, ignore_errors=True)
  return 1 if problems else 0


if __name__ == "__main__":
  sys.exit(main())
