"""Tokenizer ids vs independent BERT tokenizers on real text: transformers' Python BertTokenizer (every line of
wikitext-2's valid and test splits, the hand-picked cases) and Hugging Face's Rust tokenizers library with BERT's
normalizer, pre-tokenizer and WordPiece (every line of train, 2 million pieces, which the Python one takes over a
minute to tokenize)."""

import gzip

import pytest

from conftest import require_module
from electra_tf import tokenization


def _wikitext_lines(data_dir, splits):
  lines = []
  for split in splits:
    with gzip.open(data_dir / "corpus" / "wikitext-2" / f"{split}.raw.gz", "rt", encoding="utf-8") as f:
      lines.extend(f.read().split("\n"))
  return lines


def _hf_tokenizer(vocab, do_lower_case, strip_accents=None):
  transformers = require_module("transformers")
  tok = transformers.BertTokenizer(str(vocab), do_lower_case=do_lower_case, tokenize_chinese_chars=True,
                                   strip_accents=strip_accents)
  # The reference's limit is 200 characters per word; Hugging Face defaults to 100.
  tok.wordpiece_tokenizer.max_input_chars_per_word = 200
  return tok


def _python_bert_ids(vocab, lines, do_lower_case, strip_accents=None):
  """Every line's ids from transformers' Python BertTokenizer; a repeated line (blank lines, headings) is asked
  once."""
  hf, ids = _hf_tokenizer(vocab, do_lower_case, strip_accents), {}
  for line in lines:
    if line not in ids:
      ids[line] = hf.convert_tokens_to_ids(hf.tokenize(line))
  return [ids[line] for line in lines]


def _rust_bert_ids(vocab, lines, do_lower_case, strip_accents=None):
  """Every line's ids from the tokenizers library's BERT pipeline (transformers' BertTokenizerFast builds the
  same), with the reference's 200-character word limit."""
  tokenizers = require_module("tokenizers")
  tok = tokenizers.Tokenizer(tokenizers.models.WordPiece.from_file(str(vocab), unk_token="[UNK]",
                                                                   max_input_chars_per_word=200))
  tok.normalizer = tokenizers.normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                         strip_accents=strip_accents, lowercase=do_lower_case)
  tok.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
  return [encoding.ids for encoding in tok.encode_batch(lines, add_special_tokens=False)]


def _check_all_lines(vocab, lines, do_lower_case, strip_accents=None, graph=False, reference=_python_bert_ids):
  """Our per-line and batch ids equal ``reference``'s on every line; returns the number of pieces."""
  ours = tokenization.FullTokenizer(vocab, do_lower_case, strip_accents)
  flat, splits = ours.batch_ids(lines)
  if graph:  # the TensorFlow graph path gives the same ids
    graph_flat, graph_splits = ours.tf_batch_ids(lines)
    assert graph_splits.tolist() == splits.tolist() and graph_flat.tolist() == flat.tolist()
  expected = reference(vocab, lines, do_lower_case, strip_accents)
  for i, line in enumerate(lines):
    assert ours.convert_tokens_to_ids(ours.tokenize(line)) == expected[i], line
    assert flat[splits[i]:splits[i + 1]].tolist() == expected[i], line
  return sum(map(len, expected))


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_wikitext_valid_test_ids_equal_hf_bert(data_dir, bert_vocab, do_lower_case):
  lines = _wikitext_lines(data_dir, ["valid", "test"])
  assert len(lines) > 8000
  assert _check_all_lines(bert_vocab, lines, do_lower_case, graph=True) > 400_000


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_wikitext_train_ids_equal_hf_bert(data_dir, bert_vocab, do_lower_case):
  lines = _wikitext_lines(data_dir, ["train"])
  # Train holds control (Cc) and format (Cf) characters that the cleaning must drop.
  assert _check_all_lines(bert_vocab, lines, do_lower_case, reference=_rust_bert_ids) > 2_000_000


@pytest.mark.parametrize("do_lower_case,strip_accents", [(True, False), (False, True)])
def test_strip_accents_switch_equals_hf(data_dir, bert_vocab, do_lower_case, strip_accents):
  lines = [l for l in _wikitext_lines(data_dir, ["valid"]) if not l.isascii()]
  assert len(lines) > 100
  _check_all_lines(bert_vocab, lines, do_lower_case, strip_accents)


# Compared with the reference implementation and with HF.
HF_CASES = [
    "a\x00b\ufffdc d\u200be\x07f\tg\nh\ri",  # NUL, U+FFFD, zero-width space (Cf), BEL (Cc), \t\n\r
    "\u4e2d\u6587\u5b57abc\u3042\uac00 \uf900\U00020000x",  # CJK ideographs split, kana/hangul not
    "Caf\u00e9 na\u0308ive \u00c5ngstr\u00f6m \u1e9e \u0130stanbul",  # accents, composed + combining
    "$5^2`x` ~tilde~ \u00bfQu\u00e9? \u2014dash\u2014 \u00ab\u00bb",  # ASCII "symbols" + Unicode punct
    "line\u2028sep\u2029para\u00a0nbsp\u3000ideo\u2003em",  # Zl/Zp/Zs separators
    "x" * 201 + " " + "y" * 200 + " " + "\u00e9" * 201,  # the 200-character [UNK] rule
    "",
    "   ",
]
# Where HF departs from the reference: HF lowercases character by character (no final sigma), applies
# NFC first (U+037E -> ";"), and keeps "[CLS]"-like text whole. Only the reference is compared here.
REF_ONLY_CASES = [
    "\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3 \u03a3\u039f\u03a6\u039f\u03a3.",
    "\u037e\u0387 a\u037eb",
    "[CLS] [SEP] [MASK] [UNK] unaffable ##ing",
]


@pytest.mark.parametrize("do_lower_case", [True, False])
@pytest.mark.parametrize("strip_accents", [None, True, False])
def test_corner_cases_fast_equals_reference_and_hf(bert_vocab, do_lower_case, strip_accents):
  ours = tokenization.FullTokenizer(bert_vocab, do_lower_case, strip_accents)
  cases = HF_CASES + REF_ONLY_CASES
  flat, splits = ours.batch_ids(cases)
  graph_flat, graph_splits = ours.tf_batch_ids(cases)
  for i, text in enumerate(cases):
    slow = ours.convert_tokens_to_ids(ours.tokenize(text))
    assert flat[splits[i]:splits[i + 1]].tolist() == slow, repr(text)
    assert graph_flat[graph_splits[i]:graph_splits[i + 1]].tolist() == slow, repr(text)
  hf = _hf_tokenizer(bert_vocab, do_lower_case, strip_accents)
  for text in HF_CASES:
    assert ours.tokenize(text) == hf.tokenize(text), repr(text)


def test_reference_lowercases_per_word(bert_vocab):
  tok = tokenization.FullTokenizer(bert_vocab, True)
  assert "".join(tok.basic_tokenizer.tokenize(REF_ONLY_CASES[0])[1]).endswith("\u03c2")  # final sigma


def test_private_use_kept_as_reference_does(bert_vocab):
  # The reference drops only Cc/Cf; private-use (Co) characters stay (here: an [UNK] word).
  ours = tokenization.FullTokenizer(bert_vocab, True)
  assert ours.tokenize("a\ue000b") == ["[UNK]"]
  flat, _ = ours.batch_ids(["a\ue000b"])
  assert flat.tolist() == [ours.vocab["[UNK]"]]
  assert ours.tf_batch_ids(["a\ue000b"])[0].tolist() == [ours.vocab["[UNK]"]]


def test_reference_interface_and_known_ids(bert_vocab):
  tok = tokenization.FullTokenizer(vocab_file=str(bert_vocab), do_lower_case=True)
  tokens = tok.tokenize("UNwant\u00e9d,running")
  assert tokens == ["unwanted", ",", "running"]
  ids = tok.convert_tokens_to_ids(tokens)
  assert tok.convert_ids_to_tokens(ids) == tokens
  assert [tok.vocab[t] for t in tokenization.SPECIAL_TOKENS] == [0, 100, 101, 102, 103]


def test_in_graph_tokenize(bert_vocab):
  tf = require_module("tensorflow")
  tok = tokenization.load_tokenizer(bert_vocab, do_lower_case=True)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def serve(text):
    return tok.tf_tokenize(text).to_tensor()

  out = serve(tf.constant(["Hello, World!", "\u4e2d\u6587"])).numpy()
  assert out[0, :4].tolist() == tok.convert_tokens_to_ids(["hello", ",", "world", "!"])
  assert out[1, :2].tolist() == tok.convert_tokens_to_ids(tok.tokenize("\u4e2d\u6587"))


def test_load_tokenizer_errors(tmp_path, bert_vocab):
  with pytest.raises(ValueError, match="not found"):
    tokenization.load_tokenizer(tmp_path / "missing.txt")
  bad = tmp_path / "vocab.txt"
  bad.write_text("[PAD]\n[UNK]\nhello\n", encoding="utf-8")
  with pytest.raises(ValueError, match=r"lacks the special tokens \[CLS\], \[SEP\], \[MASK\]"):
    tokenization.load_tokenizer(bad)
  assert isinstance(tokenization.load_tokenizer(bert_vocab), tokenization.FullTokenizer)


def test_sentencepiece_adapter(tmp_path, data_dir):
  spm = require_module("sentencepiece")
  tf = require_module("tensorflow")
  lines = [l for l in _wikitext_lines(data_dir, ["valid"]) if l.strip()][:2000]
  spm.SentencePieceTrainer.train(
      sentence_iterator=iter(lines), model_prefix=str(tmp_path / "sp"), vocab_size=1000,
      pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="[PAD]", unk_piece="[UNK]",
      user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"], minloglevel=2)
  tok = tokenization.load_tokenizer(tmp_path / "sp.model", do_lower_case=True)
  assert isinstance(tok, tokenization.SentencePieceTokenizer)
  sample = lines[:50]
  flat, splits = tok.batch_ids(sample)
  graph = tok.tf_tokenize(tf.constant(sample))
  for i, line in enumerate(sample):
    ids = tok.convert_tokens_to_ids(tok.tokenize(line))
    assert flat[splits[i]:splits[i + 1]].tolist() == ids
    assert graph[i].numpy().tolist() == ids
  assert tok.convert_ids_to_tokens(tok.convert_tokens_to_ids(["[CLS]", "[SEP]"])) == ["[CLS]", "[SEP]"]
  assert flat.max() < len(tok.vocab)


# FullTokenizer.tokenize caches each whitespace token's pieces and cleans with one str.translate; it must
# equal the reference's uncached per-character composition (BasicTokenizer then WordpieceTokenizer).
CACHE_CASES = HF_CASES + REF_ONLY_CASES + [
    "a\u1fefb \u1fef\u1fef",  # GREEK VARIA: a symbol whose NFD is "`", punctuation only once stripped
    "x\x1cy\x1dz\x85w\x0bv\x0cu",  # Cc that str.split() would split on: dropped, so no split
    "\u03a3\u03a3 \u03a3\u03a3 \u0130 \u0130",  # repeated tokens (cache hits) with context lowercasing
]


@pytest.mark.parametrize("do_lower_case", [True, False])
@pytest.mark.parametrize("strip_accents", [None, True, False])
def test_cached_tokenize_equals_per_character_steps_corner_cases(bert_vocab, do_lower_case, strip_accents):
  tok = tokenization.FullTokenizer(bert_vocab, do_lower_case, strip_accents)
  tok._WORD_CACHE_SIZE = 3  # forces the cache to empty and refill on the way
  for _ in range(2):  # second pass: from the cache
    for text in CACHE_CASES:
      assert tok.tokenize(text) == tok._tokenize_per_char(text), repr(text)
  assert len(tok._word_cache) <= 3
  for batch in (CACHE_CASES[:2], CACHE_CASES, CACHE_CASES[::-1]):  # batch_ids' cache: kept, then emptied
    flat, splits = tok.batch_ids(batch)
    for i, text in enumerate(batch):
      assert flat[splits[i]:splits[i + 1]].tolist() == tok.convert_tokens_to_ids(tok._tokenize_per_char(text))


def test_cached_tokenize_equals_per_character_steps_on_valid_and_test(data_dir, bert_vocab):
  # Every line of WikiText-2's valid and test uncased; cased and the accent switches on their non-ASCII lines
  # (where casing and accents matter most). On train, tokenize's ids are compared with transformers' on every
  # line, cased and uncased (test_wikitext_train_ids_equal_hf_bert), which follows the same per-character steps.
  lines = _wikitext_lines(data_dir, ["valid", "test"])
  assert len(lines) > 8_000
  tok = tokenization.FullTokenizer(bert_vocab, True)
  n = 0
  for line in lines:
    pieces = tok.tokenize(line)
    assert pieces == tok._tokenize_per_char(line), line
    n += len(pieces)
  assert n > 400_000
  non_ascii = [l for l in lines if not l.isascii()]
  assert len(non_ascii) > 1000
  for lower, strip in [(False, None), (True, False), (False, True)]:
    tok = tokenization.FullTokenizer(bert_vocab, lower, strip)
    for line in non_ascii:
      assert tok.tokenize(line) == tok._tokenize_per_char(line), (lower, strip, line)
