"""The project speaks of itself only: no tracked text (docs, code, comments, tests, benchmarks, experiments)
narrates how it was developed (numbered work sessions, "this session", closing notes, other people's jobs,
this project's tracker numbers). A figure carries its date, machine and command instead.

Upstream references stay: google-research/electra's issues ("reference issue #39", "google-research/electra
issue #25"), transformers' and other repositories' issues.
"""

import re
import subprocess

from conftest import REPO_ROOT

PATTERNS = {
    "a numbered session": re.compile(r"\bsessions?[\s-]*\d", re.IGNORECASE),
    "'this session'": re.compile(r"\bthis session\b", re.IGNORECASE),
    "closing notes": re.compile(r"\bclosing notes?\b", re.IGNORECASE),
    "a tracker item number": re.compile(r"\bitems? \d+\b|#\d+ items?\b", re.IGNORECASE),
    "other helpers": re.compile(r"\bhelpers'|\bother helpers\b", re.IGNORECASE),
    "a tracker issue number": re.compile(r"\bissues? #\d+", re.IGNORECASE),
}
# "issue #N" is an upstream reference when one of these stands just before it (same or previous line).
UPSTREAM = re.compile(r"(electra|reference|transformers|keras|tensorflow|[\w.-]+/[\w.-]+)[^.;:()]{0,12}$",
                      re.IGNORECASE)
THIS_FILE = "tests/test_project_text.py"


def _tracked_texts():
  names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, check=True,
                         capture_output=True).stdout.decode().split("\0")
  for name in names:
    path = REPO_ROOT / name
    if not name or name == THIS_FILE or not path.is_file():
      continue
    try:
      yield name, path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
      continue  # binary (images, archives)


def _findings(name, text):
  for what, pattern in PATTERNS.items():
    for match in pattern.finditer(text):
      before = text[max(0, match.start() - 40):match.start()]
      if what == "a tracker issue number" and UPSTREAM.search(before):
        continue
      line = text.count("\n", 0, match.start()) + 1
      yield f"{name}:{line}: {what}: {text.splitlines()[line - 1].strip()[:120]}"


def test_tracked_text_does_not_narrate_the_development():
  findings = [f for name, text in _tracked_texts() for f in _findings(name, text)]
  assert not findings, "tracked text that narrates the development:\n" + "\n".join(findings)


def test_the_scan_catches_each_pattern():
  text = ("measured in session 7\nin this session\nsee the closing notes\nissue #11 item 4\n"
          "shared with other helpers' jobs\nsee google-research/electra issue #39\n(reference issue #73)\n")
  found = list(_findings("x.md", text))
  assert [f.split(": ")[1] for f in found] == [
      "a numbered session", "'this session'", "closing notes", "a tracker item number", "other helpers",
      "a tracker issue number"], found
  assert found[-1].startswith("x.md:4:")
