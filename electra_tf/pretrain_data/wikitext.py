"""Wikitext markup -> plain paragraphs, with regular expressions and one linear scan for nested spans.

The approach of WikiExtractor-style cleaners (written here from the markup's rules): no parse tree.
Comments, references and other tags whose content is no prose go with their content; templates
(``{{...}}``) and tables (``{|...|}``) go with everything nested in them, found by a balanced scan; links keep
their visible text, links into non-article namespaces (files, categories, interwiki) go, nested caption
links first; headings, list bullets, bold/italic quotes, magic words and remaining tags go; HTML entities
become characters. ``benchmarks/wikitext_cleanup.py`` compares it with mwparserfromhell and wikitextparser
on real pages (speed and leftover markup in the packed examples).
"""

import html
import re

# Tags dropped with their content: references, formulas, galleries, timelines, HTML tables, code, maps.
_DROP_TAGS = ("ref", "references", "math", "chem", "ce", "gallery", "timeline", "table", "score", "hiero",
              "syntaxhighlight", "source", "imagemap", "graph", "mapframe", "maplink", "templatedata", "div",
              "noinclude", "includeonly", "inputbox", "categorytree", "charinsert")
_DROP_TAG = re.compile(r"<(%s)\b[^>]*?(?:/>|>.*?</\1\s*>)" % "|".join(_DROP_TAGS), re.DOTALL | re.IGNORECASE)
_SELF_CLOSED = re.compile(r"<(?:%s)\b[^>]*/>" % "|".join(_DROP_TAGS), re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
_ANY_TAG = re.compile(r"</?[a-zA-Z][^<>\n]*>")
_BRACES = re.compile(r"\{\{|\}\}")
_TABLE_EDGES = re.compile(r"\{\||\|\}")
_INNER_LINK = re.compile(r"\[\[([^\[\]]*)\]\]")
_EXTERNAL_LINK = re.compile(r"\[(?:https?:|ftp:|//|mailto:)[^\s\]]*\s*([^\]]*)\]", re.IGNORECASE)
_QUOTES = re.compile(r"'{2,}")
_MAGIC = re.compile(r"__[A-Z]+__")
_HEADING = re.compile(r"^=+.*=+\s*$")
_BULLET = re.compile(r"^[*#:;]+\s*")
# Links into these namespaces are images, categories or interwiki links, not article text.
_NON_TEXT_LINK = re.compile(r"^\s*:?\s*(file|image|category|media|wikipedia|wp|template|help|portal|"
                            r"special|user|talk|[a-z]{2,3}(-[a-z]+)?)\s*:", re.IGNORECASE)
# A line still holding any of these after cleanup is markup, not prose (an unbalanced template or table).
_LEFTOVER = ("{{", "}}", "{|", "|}", "[[", "]]")
_TABLE_ROW = ("|", "!")


def _drop_balanced(text, pattern, opener):
  """``text`` without every outermost span between ``opener`` and its matching closer (the two tokens that
  ``pattern`` finds); an unclosed opener is left as it is (the leftover-line filter drops it)."""
  if opener not in text:
    return text
  pieces, depth, start, keep_from = [], 0, 0, 0
  for m in pattern.finditer(text):
    if m.group() == opener:
      if depth == 0:
        start = m.start()
      depth += 1
    elif depth:
      depth -= 1
      if depth == 0:
        pieces.append(text[keep_from:start])
        keep_from = m.end()
  if depth:  # unclosed: keep from its opener on
    pieces.append(text[keep_from:])
  else:
    pieces.append(text[keep_from:])
  return "".join(pieces)


def _link_text(m):
  inner = m.group(1)
  target, bar, label = inner.partition("|")
  if _NON_TEXT_LINK.match(target):
    return ""
  if bar:
    return label.rsplit("|", 1)[-1] if label else target.split("(")[0].strip()
  return target


def _replace_links(text):
  # Innermost first: a file caption's own links become text, then the file link goes as a whole.
  while "[[" in text:
    text, n = _INNER_LINK.subn(_link_text, text)
    if not n:
      break
  return text


def wikitext_to_text(wikitext):
  """One page's wikitext -> its prose as paragraphs, one per line (no empty lines)."""
  text = _COMMENT.sub("", wikitext)
  text = _DROP_TAG.sub("", text)
  text = _SELF_CLOSED.sub("", text)
  text = _drop_balanced(text, _BRACES, "{{")
  text = _drop_balanced(text, _TABLE_EDGES, "{|")
  text = _replace_links(text)
  text = _EXTERNAL_LINK.sub(r"\1", text)
  text = _ANY_TAG.sub("", text)
  text = _QUOTES.sub("", text)
  text = _MAGIC.sub("", text)
  paragraphs = []
  for line in text.split("\n"):
    line = line.strip()
    if not line or _HEADING.match(line) or line.startswith(_TABLE_ROW):
      continue
    line = _BULLET.sub("", line)
    if not line or any(token in line for token in _LEFTOVER):
      continue
    paragraphs.append(html.unescape(line).replace("\xa0", " ").strip())
  return "\n".join(p for p in paragraphs if p)
