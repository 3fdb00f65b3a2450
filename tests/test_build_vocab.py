"""build_vocab.py: WordPiece and SentencePiece with the special tokens at the reference's ids."""

import os
import sys

import pytest

from electra_tf import tokenization

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "data_prep"))
import build_vocab  # pylint: disable=wrong-import-position


@pytest.fixture
def small_corpus(tmp_path, data_dir):
  import gzip
  with gzip.open(data_dir / "corpus" / "wikitext-2" / "valid.raw.gz", "rt", encoding="utf-8") as f:
    lines = f.read().split("\n")[:300]
  d = tmp_path / "corpus"
  d.mkdir()
  (d / "a.txt").write_text("\n".join(lines), encoding="utf-8")
  return d


@pytest.mark.parametrize("sentencepiece", [False, True])
def test_build_vocab_special_tokens_at_reference_ids(tmp_path, small_corpus, sentencepiece):
  out = tmp_path / ("sp" if sentencepiece else "vocab.txt")
  argv = ["--corpus-dir", str(small_corpus), "--output", str(out), "--vocab-size", "400"]
  assert build_vocab.main(argv + (["--sentencepiece"] if sentencepiece else [])) == 0
  path = f"{out}.model" if sentencepiece else out
  tok = tokenization.load_tokenizer(path, do_lower_case=True)
  assert [tok.vocab[t] for t in tokenization.SPECIAL_TOKENS] == [0, 100, 101, 102, 103]
  ids = tok.convert_tokens_to_ids(tok.tokenize("The game was released in Japan."))
  assert ids and tok.vocab["[UNK]"] not in ids


def test_build_vocab_errors(tmp_path, capsys):
  assert build_vocab.main(["--output", str(tmp_path / "v.txt")]) == 2
  assert capsys.readouterr().err.startswith("error: no corpus given")


@pytest.mark.parametrize("sentencepiece", [False, True])
def test_build_vocab_checks_its_output_before_learning(tmp_path, capsys, monkeypatch, sentencepiece):
  from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset
  import sentencepiece as spm

  def learning_started(*args, **kwargs):
    raise AssertionError("the vocab was learnt before its output was checked")

  monkeypatch.setattr(bert_vocab_from_dataset, "bert_vocab_from_dataset", learning_started)
  monkeypatch.setattr(spm.SentencePieceTrainer, "train", learning_started)
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text("The cat sat on the mat.\n", encoding="utf-8")
  base = ["--corpus-dir", str(corpus), "--vocab-size", "400"] + (["--sentencepiece"] if sentencepiece else [])
  missing = tmp_path / "no" / "such" / "dir"
  out = missing / ("sp" if sentencepiece else "vocab.txt")
  assert build_vocab.main(base + ["--output", str(out)]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  what = f"SentencePiece model {out}.model" if sentencepiece else f"vocab {out}"
  assert err == [f"error: cannot write the {what}: directory {missing} does not exist; create it "
                 f"(mkdir -p {missing}) or choose another path"]
  assert build_vocab.main(base + ["--output", str(corpus / "a.txt" / "vocab")]) == 2
  assert "a.txt is a file, not a directory" in capsys.readouterr().err
  if not sentencepiece:
    assert build_vocab.main(base + ["--output", str(corpus)]) == 2
    assert "it is a directory; name a file" in capsys.readouterr().err
  assert not (tmp_path / "no").exists()
