"""Wikipedia dumps wherever they are given: recognised by content inside --corpus-dir (never packed as
text), and a truncated or corrupt dump stops the build with one line naming the file."""

import bz2
import json
import re
import shutil

import pytest

from conftest import require_module
from _data_prep_testlib import benchmark_module, dump, one_error_line  # pylint: disable=unused-import
from electra_tf.cli import build_data
from electra_tf.errors import DataPrepError
from electra_tf.pretrain_data import corpus

tf = require_module("tensorflow")


def _tokens(out_dir, vocab_file):
  vocab = vocab_file.read_text(encoding="utf-8").splitlines()
  spec = {"input_ids": tf.io.FixedLenFeature([128], tf.int64)}
  tokens = []
  for path in sorted(out_dir.glob("pretrain_data.tfrecord*")):
    for record in tf.data.TFRecordDataset(str(path)):
      tokens.extend(vocab[i] for i in tf.io.parse_single_example(record, spec)["input_ids"].numpy())
  return tokens


def test_dump_in_corpus_dir_is_read_as_a_dump(tmp_path, dump, bert_vocab, capsys):
  articles = list(corpus.iter_wikipedia_dump(str(dump)))
  corpus_dir = tmp_path / "corpus"
  corpus_dir.mkdir()
  shutil.copy(dump, corpus_dir / "enwiki.xml.bz2")
  # Recognised by content, not name: the same dump uncompressed under a text file's name.
  (corpus_dir / "pages.txt").write_bytes(bz2.decompress(dump.read_bytes()))
  (corpus_dir / "notes.txt").write_text("A plain sentence.\nAnother one.\n", encoding="utf-8")

  assert list(corpus.iter_text_dir(str(corpus_dir))) == articles + [["A plain sentence.", "Another one."]] + articles
  capsys.readouterr()

  out = tmp_path / "out"
  assert build_data.main(["--corpus-dir", str(corpus_dir), "--vocab-file", str(bert_vocab), "--output-dir",
                          str(out), "--num-shards", "1", "--no-progress"]) == 0
  err = capsys.readouterr().err
  assert err.count("is a MediaWiki XML dump") == 2 and "enwiki.xml.bz2" in err and "pages.txt" in err
  meta = json.loads((out / "metadata.json").read_text())
  assert meta["num_documents"] == 2 * len(articles) + 1
  assert meta["num_sentences"] == 2 * sum(len(a) for a in articles) + 2
  tokens = set(_tokens(out, bert_vocab))
  # Packed as text, every page would carry its XML: <page>, <title>, <revision>, xmlns=...
  assert not {"<", ">", "xml", "xmlns"} & tokens, {"<", ">", "xml", "xmlns"} & tokens
  assert {"constructive", "vote", "confidence"} <= tokens


def test_dump_in_books_dir_is_read_as_a_dump(tmp_path, dump):
  shutil.copy(dump, tmp_path / "book.bz2")
  assert list(corpus.iter_books(str(tmp_path))) == list(corpus.iter_wikipedia_dump(str(dump)))


def test_xml_that_is_not_a_dump_stays_text(tmp_path):
  (tmp_path / "a.xml").write_text("<doc>\n<p>Some text.</p>\n</doc>\n", encoding="utf-8")
  assert not corpus.is_wikipedia_dump(str(tmp_path / "a.xml"))
  assert list(corpus.iter_text_dir(str(tmp_path))) == [["<doc>", "<p>Some text.</p>", "</doc>"]]


def test_truncated_dump_is_one_line_naming_the_file(tmp_path, dump, bert_vocab, capsys):
  data = dump.read_bytes()
  truncated = tmp_path / "enwiki-truncated.xml.bz2"
  truncated.write_bytes(data[:len(data) // 2])
  out = tmp_path / "out"
  base = ["--vocab-file", str(bert_vocab), "--output-dir", str(out), "--num-shards", "1", "--no-progress"]
  line = one_error_line(capsys, base + ["--wikipedia-dump", str(truncated)])
  assert str(truncated) in line and "truncated or corrupt" in line and "download it again" in line, line
  assert not out.exists() and not list(tmp_path.glob("out.tmp-*"))

  # A damaged block (bz2 "Invalid data stream", an OSError) and a cut uncompressed dump (bad XML).
  corrupt = tmp_path / "enwiki-corrupt.xml.bz2"
  corrupt.write_bytes(data[:1000] + b"0123456789" + data[1010:])
  line = one_error_line(capsys, base + ["--wikipedia-dump", str(corrupt)])
  assert str(corrupt) in line and "truncated or corrupt" in line and "OSError" in line, line
  cut_xml = tmp_path / "enwiki-cut.xml"
  text = bz2.decompress(data)
  cut_xml.write_bytes(text[:len(text) // 2])
  with pytest.raises(DataPrepError, match="truncated or corrupt .*not valid XML"):
    list(corpus.iter_wikipedia_dump(str(cut_xml)))

  notes = tmp_path / "notes.txt"
  notes.write_text("Just a sentence.\n", encoding="utf-8")
  line = one_error_line(capsys, base + ["--wikipedia-dump", str(notes)])
  assert "is not a MediaWiki XML dump" in line and "--corpus-dir" in line, line


def test_wikitext_cleanup_drops_markup_and_keeps_link_text():
  """Top-level refs, file/category/interwiki links, headings, tables, math and divs go (their nested links
  with them); visible link text, bold and italics stay."""
  wikitext = """{{Infobox thing|name=X}}'''Alpha''' is a [[beta|Beta]] thing.<ref>A [[cited]] source.</ref> It is [[gamma]].
[[File:Pic.jpg|thumb|A [[caption link]] here.]]
== History ==
The [[de:Alpha]] past began in 1900.<ref name="a"/> It had a <math>x^2</math> form.
{| class="wikitable"
|-
| cell one || cell two
|}
<div>hidden box</div>
* a list item
Final [[Category:Things]] sentence with ''italics'' and <b>bold</b>.
=== Sub ===
Last words.<references/>
[[Category:Alphas]]"""
  assert corpus.wikitext_to_text(wikitext) == (
      "Alpha is a Beta thing. It is gamma.\nThe  past began in 1900. It had a  form.\na list item\n"
      "Final  sentence with italics and bold.\nLast words.")


def test_benchmark_dump_excerpt_has_n_distinct_articles(tmp_path, dump):
  """benchmarks/data_prep.py --wikipedia's excerpt: N pages with distinct titles and ids, read as N
  documents, copy k of a page giving the page's own document."""
  data_prep = benchmark_module("data_prep")
  out = tmp_path / "excerpt.xml.bz2"
  data_prep.make_dump_excerpt(dump, out, 7)
  with bz2.open(out, "rt", encoding="utf-8") as f:
    xml = f.read()
  titles = re.findall(r"<title>(.*?)</title>", xml)
  ids = re.findall(r"</ns>\s*<id>(\d+)</id>", xml)
  assert len(titles) == len(set(titles)) == 7 and len(ids) == len(set(ids)) == 7
  assert titles[5] == titles[0] + " (1)"
  docs = list(corpus.iter_wikipedia_dump(str(out)))
  assert len(docs) == 7 and docs[5] == docs[0] and docs[6] == docs[1] and docs[0] != docs[1]
