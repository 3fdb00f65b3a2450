"""build_vocab.py: WordPiece (Hugging Face's trainer or tensorflow-text's learner) and SentencePiece, with
the special tokens at the reference's ids and pieces our tokenizer reaches."""

import collections
import gzip
import os
import sys

import pytest

from electra_tf import tokenization
from electra_tf.errors import DataPrepError
from electra_tf.pretrain_data import corpus, vocab_learning

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "data_prep"))
import build_vocab  # pylint: disable=wrong-import-position


def _wikitext(data_dir, split):
  with gzip.open(data_dir / "corpus" / "wikitext-2" / f"{split}.raw.gz", "rt", encoding="utf-8") as f:
    return f.read().split("\n")


def _corpus_dir(tmp_path, lines, name="corpus"):
  d = tmp_path / name
  d.mkdir()
  (d / "a.txt").write_text("\n".join(lines), encoding="utf-8")
  return d


@pytest.fixture
def small_corpus(tmp_path, data_dir):
  return _corpus_dir(tmp_path, _wikitext(data_dir, "valid")[:300])


def _learn(corpus_dir, path, **kwargs):
  return vocab_learning.learn_wordpiece_vocab(corpus.iter_text_dir(str(corpus_dir)), str(path), **kwargs)


def _unk_rate(vocab_file, lines, do_lower_case=True):
  """Fraction of the word pieces of ``lines`` that are [UNK], by our reference-exact FullTokenizer."""
  tok = tokenization.FullTokenizer(str(vocab_file), do_lower_case=do_lower_case)
  pieces = [p for line in lines for p in tok.tokenize(line)]
  return pieces.count("[UNK]") / len(pieces)


@pytest.mark.parametrize("kind", ["hf", "tf-text", "sentencepiece", "sentencepiece.model"])
def test_build_vocab_special_tokens_at_reference_ids(tmp_path, small_corpus, kind):
  # SentencePiece: --output sp (a prefix) or sp.model (the file) both write sp.model and sp.vocab.
  out = tmp_path / {"sentencepiece": "sp", "sentencepiece.model": "sp.model"}.get(kind, "vocab.txt")
  argv = ["--corpus-dir", str(small_corpus), "--output", str(out), "--vocab-size", "400"]
  argv += ["--sentencepiece"] if kind.startswith("sentencepiece") else ["--learner", kind]
  assert build_vocab.main(argv) == 0
  path = tmp_path / "sp.model" if kind.startswith("sentencepiece") else out
  if kind.startswith("sentencepiece"):
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["sp.model", "sp.vocab"]
  tok = tokenization.load_tokenizer(path, do_lower_case=True)
  assert [tok.vocab[t] for t in tokenization.SPECIAL_TOKENS] == [0, 100, 101, 102, 103]
  ids = tok.convert_tokens_to_ids(tok.tokenize("The game was released in Japan."))
  assert ids and tok.vocab["[UNK]"] not in ids


def test_hf_vocab_layout_and_held_out_unk_rate(tmp_path, data_dir):
  """4,000 entries from 2 MB of WikiText-2 train: BERT's layout, and held-out valid text tokenizes
  with almost no [UNK] (what remains are characters train never has)."""
  train = _wikitext(data_dir, "train")[:6000]
  out = tmp_path / "vocab.txt"
  assert _learn(_corpus_dir(tmp_path, train), out, vocab_size=4000) == 4000
  entries = out.read_text(encoding="utf-8").split("\n")
  assert entries[-1] == "" and len(entries) == 4001
  entries = entries[:-1]
  assert entries[:104] == vocab_learning.reserved_tokens()
  assert len(set(entries)) == len(entries)
  assert all(e and not any(c.isspace() for c in e) for e in entries)
  pieces = entries[104:]
  continuations = [e for e in pieces if e.startswith("##")]
  assert len(continuations) > 500 and all(len(e) > 2 for e in continuations)
  # Every '##' piece continues a word: its characters are pieces of their own, lowercased and without
  # accents as the uncased tokenizer makes them.
  assert {c for e in continuations for c in e[2:]} <= {e for e in pieces if len(e) == 1}
  assert not any(c != c.lower() for e in pieces for c in e)
  held_out = [line for line in _wikitext(data_dir, "valid") if line.strip()]
  assert _unk_rate(out, held_out) < 0.002
  # The reference's whole-word entries are there too: frequent words are one piece each.
  tok = tokenization.FullTokenizer(str(out))
  assert tok.tokenize("The first game of the season was played in the city") == \
      "the first game of the season was played in the city".split()


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_hf_pieces_cover_their_training_text(tmp_path, data_dir, do_lower_case):
  """Learnt from words split exactly as FullTokenizer splits them: with every character kept, no word of
  the training text (accents, CJK, symbols included) is [UNK], uncased and cased."""
  lines = [line for line in _wikitext(data_dir, "test") if line.strip()][:1500]
  lines = [line for line in lines if not line.isascii()][:200] + lines[:300]
  out = tmp_path / "vocab.txt"
  _learn(_corpus_dir(tmp_path, lines), out, vocab_size=3000, do_lower_case=do_lower_case,
         max_unique_chars=100000)
  assert _unk_rate(out, lines, do_lower_case) == 0.0
  if do_lower_case:  # the check can fail: a cased tokenizer meets capitals this vocab does not have
    assert _unk_rate(out, lines, do_lower_case=False) > 0.01


def test_hf_vocab_is_the_same_every_run(tmp_path, data_dir):
  """Hugging Face's trainer alone orders its '##' pieces by hash (huggingface/tokenizers#1794), which
  changes the merges from run to run; ours gives them fixed ids."""
  d = _corpus_dir(tmp_path, _wikitext(data_dir, "valid")[:1500])
  _learn(d, tmp_path / "v1.txt", vocab_size=1500)
  _learn(d, tmp_path / "v2.txt", vocab_size=1500)
  assert (tmp_path / "v1.txt").read_bytes() == (tmp_path / "v2.txt").read_bytes()


def test_max_sentences_learns_from_the_first_sentences(tmp_path, data_dir):
  lines = [line.strip() for line in _wikitext(data_dir, "valid") if line.strip()]
  _learn(_corpus_dir(tmp_path, lines[:400], "all"), tmp_path / "first.txt", vocab_size=600)
  _learn(_corpus_dir(tmp_path, lines, "head"), tmp_path / "head.txt", vocab_size=600, max_sentences=400)
  _learn(_corpus_dir(tmp_path, lines[:800], "more"), tmp_path / "more.txt", vocab_size=600)
  assert (tmp_path / "first.txt").read_bytes() == (tmp_path / "head.txt").read_bytes()
  assert (tmp_path / "first.txt").read_bytes() != (tmp_path / "more.txt").read_bytes()


def test_small_vocab_sizes_keep_the_limit(tmp_path, data_dir):
  """The alphabet shrinks to fit: a 200-entry vocab of a text with hundreds of characters."""
  out = tmp_path / "vocab.txt"
  n = _learn(_corpus_dir(tmp_path, _wikitext(data_dir, "test")[:3000]), out, vocab_size=200)
  assert n == len(out.read_text(encoding="utf-8").split("\n")) - 1 <= 200
  assert tokenization.read_vocab(str(out)).special["[MASK]"] == 103


def test_repeated_words_keep_their_counts():
  counts = {"the": 1000, "a": 1, "longword": 37}
  chunks = list(vocab_learning._repeated(counts, chunk_chars=64))  # pylint: disable=protected-access
  assert len(chunks) > 10 and all(len(c) < 2 * 64 for c in chunks)
  assert collections.Counter(w for c in chunks for w in c.split()) == counts


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_count_words_splits_as_the_tokenizer_does(data_dir, do_lower_case):
  """Counting cleaned tokens first and splitting each distinct one once (here with the token counts
  folded into words every 50 distinct tokens) counts what BasicTokenizer makes of each sentence."""
  lines = [line for line in _wikitext(data_dir, "test") if line.strip()]
  lines = [line for line in lines if not line.isascii()][:100] + lines[:100] + ["Caf\u00e9!\u200bX\x1fY"]
  basic = tokenization.BasicTokenizer(do_lower_case)
  expected = collections.Counter(w for line in lines for w in basic.tokenize(line))
  assert vocab_learning.count_words(iter(lines), do_lower_case, batch=7, max_tokens=50) == expected


def test_count_words_drops_the_rarest_words_past_its_limit():
  lines = ["the cat", "the dog", "the cat", "a bird", "the cat", "an eel"]
  # 7 distinct words, at most 3: those seen once so far are dropped when a fold passes the limit (here
  # after "a bird" and "an eel"); the counts of the rest stay exact.
  assert vocab_learning.count_words(iter(lines), batch=1, max_tokens=2, max_words=3) == {"the": 4, "cat": 3}
  assert vocab_learning.count_words(iter(lines), max_words=3) == {"the": 4, "cat": 3}
  assert len(vocab_learning.count_words(iter(lines), max_words=7)) == 7


@pytest.mark.slow
def test_hf_and_tf_text_unk_rates_are_comparable(tmp_path, data_dir):
  """Both learners on the same 3,000 lines of train, 3,000 entries: held-out valid [UNK] rates within a
  small margin of each other (the measured pair is in benchmarks/README.md)."""
  d = _corpus_dir(tmp_path, _wikitext(data_dir, "train")[:3000])
  held_out = [line for line in _wikitext(data_dir, "valid") if line.strip()]
  rates = {}
  for learner in vocab_learning.LEARNERS:
    _learn(d, tmp_path / f"{learner}.txt", vocab_size=3000, learner=learner)
    rates[learner] = _unk_rate(tmp_path / f"{learner}.txt", held_out)
  assert rates["hf"] < 0.003 and rates["tf-text"] < 0.003
  assert rates["hf"] <= rates["tf-text"] + 0.0005, rates


def test_build_vocab_errors(tmp_path, capsys):
  assert build_vocab.main(["--output", str(tmp_path / "v.txt")]) == 2
  assert capsys.readouterr().err.startswith("error: no corpus given")
  corpus_dir = _corpus_dir(tmp_path, ["The cat sat on the mat."])
  base = ["--corpus-dir", str(corpus_dir), "--output", str(tmp_path / "v.txt")]
  assert build_vocab.main(base + ["--max-sentences", "0"]) == 2
  assert capsys.readouterr().err.startswith("error: --max-sentences is 0; pass a positive count")
  assert build_vocab.main(base + ["--max-unique-chars", "0"]) == 2
  assert capsys.readouterr().err.startswith("error: --max-unique-chars is 0; pass a positive count")
  with pytest.raises(SystemExit):
    build_vocab.main(base + ["--learner", "bpe"])
  assert "invalid choice: 'bpe'" in capsys.readouterr().err
  missing = tmp_path / "nowhere"
  assert build_vocab.main(["--corpus-dir", str(missing), "--output", str(tmp_path / "v.txt")]) == 2
  assert capsys.readouterr().err == (f"error: corpus directory {missing} does not exist; pass --corpus-dir "
                                     "with text files (one sentence per line, blank line between documents)\n")
  assert not (tmp_path / "v.txt").exists()


@pytest.mark.parametrize("learner", vocab_learning.LEARNERS)
def test_build_vocab_skips_files_that_are_not_utf8(tmp_path, capsys, learner):
  d = tmp_path / "corpus"
  d.mkdir()
  (d / "b.txt").write_bytes("caf\u00e9 latin-1\n".encode("latin-1"))
  (d / "c.bin").write_bytes(b"\x00\x01\x02binary")
  out = tmp_path / "vocab.txt"
  argv = ["--corpus-dir", str(d), "--output", str(out), "--vocab-size", "200", "--learner", learner,
          "--no-progress"]
  # Nothing readable: one warning naming the files, one error, no vocab.
  assert build_vocab.main(argv) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err[0].startswith("warning: skipped 2 file(s) that are binary or not UTF-8: ")
  assert "b.txt (not UTF-8" in err[0] and "c.bin (binary file)" in err[0]
  assert err[1] == "error: the corpus has no text to learn a vocab from; pass UTF-8 text sources"
  assert not out.exists() and sorted(os.listdir(tmp_path)) == ["corpus"]
  # With a UTF-8 file beside them, the vocab is learnt from it alone, and the skipped ones are named.
  (d / "a.txt").write_text("The cat sat on the mat.\nA dog ran.\n", encoding="utf-8")
  assert build_vocab.main(argv) == 0
  captured = capsys.readouterr()
  assert captured.err.startswith("warning: skipped 2 file(s)") and len(captured.err.splitlines()) == 1
  assert captured.out.strip() == f"wrote {out} ({len(out.read_text().splitlines())} tokens) from 2 sentences"
  pieces = tokenization.FullTokenizer(str(out)).tokenize("The cat sat.")
  assert pieces and "[UNK]" not in pieces


@pytest.mark.parametrize("learner", vocab_learning.LEARNERS)
def test_a_reading_error_keeps_its_type_and_writes_nothing(tmp_path, learner):
  """An error while the corpus streams into a learner (Rust or tf.data) comes out as itself."""

  def documents():
    yield ["The cat sat on the mat."] * 10
    raise DataPrepError("damaged dump dump.xml.bz2: truncated; download it again")

  out = tmp_path / "vocab.txt"
  with pytest.raises(DataPrepError, match="damaged dump dump.xml.bz2"):
    vocab_learning.learn_wordpiece_vocab(documents(), str(out), vocab_size=200, learner=learner)
  assert not out.exists() and os.listdir(tmp_path) == []


@pytest.mark.parametrize("kind", ["hf", "tf-text", "sentencepiece"])
def test_build_vocab_checks_its_output_before_learning(tmp_path, capsys, monkeypatch, kind):
  import sentencepiece as spm

  def learning_started(*args, **kwargs):
    raise AssertionError("the vocab was learnt before its output was checked")

  monkeypatch.setattr(vocab_learning, "_learn_hf", learning_started)
  monkeypatch.setattr(vocab_learning, "_learn_tf_text", learning_started)
  monkeypatch.setattr(spm.SentencePieceTrainer, "train", learning_started)
  sentencepiece = kind == "sentencepiece"
  corpus_dir = _corpus_dir(tmp_path, ["The cat sat on the mat."])
  base = ["--corpus-dir", str(corpus_dir), "--vocab-size", "400"]
  base += ["--sentencepiece"] if sentencepiece else ["--learner", kind]
  missing = tmp_path / "no" / "such" / "dir"
  out = missing / ("sp" if sentencepiece else "vocab.txt")
  assert build_vocab.main(base + ["--output", str(out)]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  what = f"SentencePiece model {out}.model" if sentencepiece else f"vocab {out}"
  assert err == [f"error: cannot write the {what}: directory {missing} does not exist; create it "
                 f"(mkdir -p {missing}) or choose another path"]
  assert build_vocab.main(base + ["--output", str(corpus_dir / "a.txt" / "vocab")]) == 2
  assert "a.txt is a file, not a directory" in capsys.readouterr().err
  if not sentencepiece:
    assert build_vocab.main(base + ["--output", str(corpus_dir)]) == 2
    assert "it is a directory; name a file" in capsys.readouterr().err
  assert not (tmp_path / "no").exists()
