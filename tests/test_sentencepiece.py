"""SentencePiece as a vocab everywhere: one reader (size, special ids) for both formats, one-line errors for a
``.model`` that is not one, tensorflow-text's in-graph op and the exported transformers tokenizer giving the
sentencepiece library's ids on real WikiText-2 text."""

import gzip
import json
import logging

import pytest

from conftest import require_module
from electra_tf import tokenization
from electra_tf.errors import ConversionError, PretrainingError, VocabError


def _wikitext(data_dir, split, n):
  lines = []
  with gzip.open(data_dir / "corpus" / "wikitext-2" / f"{split}.raw.gz", "rt", encoding="utf-8") as f:
    for line in f:
      if line.strip() and not line.strip().startswith("="):
        lines.append(line.strip())
      if len(lines) >= n:
        break
  return lines


@pytest.fixture(scope="module")
def sp_model(tmp_path_factory, data_dir):
  """build_vocab.py's SentencePiece learner on 2,000 WikiText-2 paragraphs (cased, 1,000 pieces)."""
  from electra_tf.pretrain_data import vocab_learning
  prefix = tmp_path_factory.mktemp("sp") / "sp"
  docs = [[line] for line in _wikitext(data_dir, "train", 2000)]
  return vocab_learning.learn_sentencepiece_model(docs, str(prefix), vocab_size=1000, do_lower_case=False)


def test_read_vocab_gives_size_and_special_ids_for_both_formats(sp_model, bert_vocab):
  import sentencepiece as spm
  sp = spm.SentencePieceProcessor(model_file=sp_model)
  v = tokenization.read_vocab(sp_model)
  assert v.kind == "sentencepiece" and v.size == sp.get_piece_size()
  assert v.special == {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
  w = tokenization.read_vocab(bert_vocab)
  assert w.kind == "wordpiece" and w.size == 30522 and w.special["[MASK]"] == 103


def test_every_vocab_reader_accepts_a_model(sp_model, caplog):
  from electra_tf.convert import vocab_files
  from electra_tf.pretraining.masking import SpecialIds
  n = tokenization.read_vocab(sp_model).size
  assert SpecialIds.from_vocab_file(sp_model, n) == SpecialIds(0, 101, 102, 103)
  with pytest.raises(PretrainingError, match=f"has {n} tokens but vocab_size is 10;"):
    SpecialIds.from_vocab_file(sp_model, 10)
  with caplog.at_level(logging.WARNING, logger="electra_tf.pretraining"):
    assert SpecialIds.from_vocab_file(sp_model, 30522) == SpecialIds(0, 101, 102, 103)  # the reference trains it
  assert f"has {n} tokens but vocab_size is 30522: {30522 - n} word-embedding rows no token uses" in caplog.text
  assert vocab_files.count_vocab(sp_model) == n
  assert vocab_files.vocab_file_name(sp_model) == "spiece.model"
  tok = tokenization.load_tokenizer(sp_model, do_lower_case=False)
  assert tok.vocab_size == n and tok.convert_tokens_to_ids(["[CLS]", "[SEP]"]) == [101, 102]


def test_a_model_that_is_not_sentencepiece_is_one_line(tmp_path):
  from electra_tf.convert import vocab_files
  from electra_tf.pretraining.masking import SpecialIds
  bad = tmp_path / "vocab.model"
  bad.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n", encoding="utf-8")
  for call, error in ((lambda: tokenization.read_vocab(bad), VocabError),
                      (lambda: tokenization.load_tokenizer(bad), VocabError),
                      (lambda: SpecialIds.from_vocab_file(str(bad), 100), PretrainingError),
                      (lambda: vocab_files.count_vocab(str(bad)), ConversionError)):
    with pytest.raises(error) as e:
      call()
    message = str(e.value)
    assert "\n" not in message and "is not a SentencePiece model" in message and "ParseFromArray" not in message
  binary = tmp_path / "vocab.bin"
  binary.write_bytes(b"\xff\xfe\x00garbage")
  with pytest.raises(VocabError, match="is not a SentencePiece model"):
    tokenization.read_vocab(binary)


def test_a_foreign_model_answers_to_the_special_names_through_its_own_pieces(tmp_path, data_dir):
  """An ALBERT-style model (<pad>, <unk>, <s>, </s>, <mask>): the equivalents stand in for ELECTRA's names."""
  import sentencepiece as spm
  spm.SentencePieceTrainer.train(
      sentence_iterator=iter(_wikitext(data_dir, "train", 300)), model_prefix=str(tmp_path / "albertish"),
      vocab_size=300, pad_id=0, unk_id=1, bos_id=2, eos_id=3, user_defined_symbols=["<mask>"], minloglevel=2,
      hard_vocab_limit=False)
  v = tokenization.read_vocab(tmp_path / "albertish.model")
  assert v.special == {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}


def test_in_graph_ids_equal_the_sentencepiece_librarys_on_wikitext(sp_model, data_dir):
  import sentencepiece as spm
  import tensorflow as tf
  sp = spm.SentencePieceProcessor(model_file=sp_model)
  lines = _wikitext(data_dir, "valid", 1500)
  for lower in (False, True):
    tok = tokenization.load_tokenizer(sp_model, do_lower_case=lower)
    ours = tok.tf_tokenize(tf.constant(lines)).to_list()
    expected = sp.encode([line.lower() if lower else line for line in lines])
    assert ours == expected
    flat, splits = tok.batch_ids(lines)
    assert flat.tolist() == [i for ids in expected for i in ids] and len(splits) == len(lines) + 1


def test_exported_transformers_tokenizer_gives_the_same_ids(sp_model, tmp_path, data_dir):
  """export-hf's tokenizer files: AutoTokenizer (AlbertTokenizer on spiece.model) builds [CLS] a [SEP] with
  the library's ids, slow and fast, on WikiText-2 paragraphs."""
  transformers = require_module("transformers")
  import sentencepiece as spm
  from electra_tf.convert import vocab_files
  out = tmp_path / "hf"
  out.mkdir()
  vocab_files.copy_vocab(sp_model, str(out))
  (out / "tokenizer_config.json").write_text(json.dumps(vocab_files.hf_tokenizer_config(sp_model, False, 512)))
  sp = spm.SentencePieceProcessor(model_file=sp_model)
  lines = [line for line in _wikitext(data_dir, "valid", 800) if "``" not in line and "''" not in line]
  expected = [[101] + ids + [102] for ids in sp.encode(lines)]
  for fast in (False, True):
    hf = transformers.AutoTokenizer.from_pretrained(str(out), use_fast=fast)
    assert hf.encode(lines[0], lines[1]) == expected[0] + expected[1][1:]
    got = hf(lines)["input_ids"]
    bad = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
    assert not bad, (fast, len(bad), lines[bad[0]][:200])
