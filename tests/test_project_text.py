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
    "a tracker issue number": re.compile(r"\bissues?\s+#\d+", re.IGNORECASE),  # a line break may split it
    "the tracker's words": re.compile(r"\b(the|this) issue's\b|\bas the issue asks\b|\bissue figure\b|"
                                      r"\bthe tracker\b", re.IGNORECASE),
    "a device lease": re.compile(r"\bleases?\b", re.IGNORECASE),  # not "release"
    "a development tool": re.compile(r"\bfarm-(bench|studio)\b|\bduplicates --change\b|\bsub-?agents?\b|"
                                     r"\bhelper-\d", re.IGNORECASE),
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
          "shared with other helpers' jobs\nsee google-research/electra issue #39\n(reference issue #73)\n"
          "keyed since issue\n#15\nthe issue's target\nthe lease's 15 minutes\ntimed with farm-bench\n"
          "a new release\n")
  found = list(_findings("x.md", text))
  assert [f.split(": ")[1] for f in found] == [
      "a numbered session", "'this session'", "closing notes", "a tracker item number", "other helpers",
      "a tracker issue number", "a tracker issue number", "the tracker's words", "a device lease",
      "a development tool"], found
  assert found[5].startswith("x.md:4:") and found[6].startswith("x.md:8:")


def _slug(heading: str) -> str:
  """GitHub's anchor for a Markdown heading: lower case, punctuation other than '-' dropped, spaces -> '-'."""
  return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _outside_code(text: str) -> str:
  """Markdown with its fenced code blocks removed (a '#' or '](' there is neither a heading nor a link)."""
  return re.sub(r"```.*?```", "", text, flags=re.S)


def _headings(text: str) -> set:
  found, seen = set(), {}
  for match in re.finditer(r"^#{1,6}\s+(.*)$", _outside_code(text), flags=re.M):
    slug = _slug(match.group(1))
    found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
    seen[slug] = seen.get(slug, 0) + 1
  return found


def test_markdown_links_resolve():
  """Every relative link in tracked Markdown names a file that exists and, with '#anchor', a heading in it."""
  broken, headings = [], {}  # headings: each linked file parsed once
  for name, text in _tracked_texts():
    if not name.endswith(".md"):
      continue
    for match in re.finditer(r"\]\(([^)\s]+)\)", _outside_code(text)):
      target = match.group(1)
      if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        continue  # http(s), mailto
      file, _, anchor = target.partition("#")
      dest = (REPO_ROOT / name).parent / file if file else REPO_ROOT / name
      if not dest.exists():
        broken.append(f"{name}: {target}: no such file")
        continue
      if anchor and dest.suffix == ".md":
        if dest not in headings:
          headings[dest] = _headings(dest.read_text(encoding="utf-8"))
        if anchor not in headings[dest]:
          broken.append(f"{name}: {target}: no such heading")
  assert not broken, "\n".join(broken)


def test_the_link_check_knows_githubs_anchors():
  assert _slug("1,000 labels, the same three models") == "1000-labels-the-same-three-models"
  assert _slug("The main job's cell") == "the-main-jobs-cell"
  assert _headings("# A\n```\n# not a heading\n```\n## A\n### B: c (d)\n") == {"a", "a-1", "b-c-d"}
