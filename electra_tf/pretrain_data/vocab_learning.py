"""Learns a WordPiece vocab (Hugging Face ``tokenizers``' trainer or tensorflow-text's learner) or a
SentencePiece model from the corpus sources.

Special tokens go where the reference (BERT's vocab.txt) has them: [PAD]=0, [unused0..98]=1..99,
[UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103.

Both WordPiece learners learn from the words our ``FullTokenizer`` will look up: the text is split by
``tokenization.BasicTokenizer`` (cleaning, CJK spacing, casing, accents, punctuation) before learning, so
every learned piece is reachable.
"""

import collections
import io
import itertools

import sentencepiece as spm
import tokenizers

from electra_tf import fileio, runtime, tokenization
from electra_tf.pretrain_data.corpus import DataPrepError

# "hf": Hugging Face's Rust WordPiece trainer on word counts, deterministic, minutes per GB. "tf-text":
# tensorflow-text's bert_vocab learner, for vocabs that must match one it learnt: pure Python, far slower (both
# timed in benchmarks/README.md, "Vocabulary learning").
LEARNERS = ("hf", "tf-text")
DEFAULT_LEARNER = "hf"
# At most this many characters become pieces (the most frequent; a word with another one tokenizes to
# [UNK]): tf-text's default max_unique_chars, used by both learners.
MAX_UNIQUE_CHARS = 1000
# The most distinct words counted (a few GB of memory at most); see count_words.
MAX_WORDS = 1 << 23


def reserved_tokens():
  """The first 104 entries of BERT's vocab layout."""
  return ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _sentences(documents, max_sentences=None):
  sentences = (s for doc in documents for s in doc)
  return itertools.islice(sentences, max_sentences) if max_sentences else sentences


def _first_and_rest(sentences):
  # The first sentence is read before any learning starts: a missing or empty corpus stops at once.
  first = next(sentences, None)
  if first is None:
    raise DataPrepError("the corpus has no text to learn a vocab from; pass UTF-8 text sources")
  return itertools.chain([first], sentences)


def _progress_bar(progress):
  import tqdm  # pylint: disable=import-outside-toplevel  (learning a vocab only)
  return tqdm.tqdm(unit=" sentences", desc="reading the corpus", disable=not progress, mininterval=2)


def _add_words(words, token_counts, basic):
  """Adds the words BasicTokenizer makes of each counted token to ``words`` (each distinct token once)."""
  for token, n in token_counts.items():
    if token.isascii() and token.isalnum():  # most tokens: no punctuation, no accents, one word
      words[token.lower() if basic.do_lower_case else token] += n
      continue
    for word in basic.tokenize(token):
      words[word] += n


def count_words(sentences, do_lower_case=True, strip_accents=None, progress=False, batch=4096,
                max_tokens=1 << 22, max_words=MAX_WORDS):
  """Counts of the words ``tokenization.BasicTokenizer`` makes of ``sentences``, in one streaming pass.

  Per batch of sentences: one ``str.translate`` (the reference's cleaning and CJK spacing), a split and a
  C-level count of the whitespace tokens. When ``max_tokens`` distinct tokens are held they are split into
  words and added up. Memory is bounded on any corpus: past ``max_words`` distinct words, the words seen
  the fewest times so far (once, then twice, ...) are dropped, as word2vec's vocabulary reduction does;
  what is lost is counts of the rarest words, which a vocab of tens of thousands of pieces does not keep.
  """
  basic = tokenization.BasicTokenizer(do_lower_case, strip_accents)
  tokens, words = collections.Counter(), collections.Counter()

  def fold():
    _add_words(words, tokens, basic)
    tokens.clear()
    fewest = 1
    while len(words) > max_words:
      for word in [w for w, n in words.items() if n <= fewest]:
        del words[word]
      fewest += 1

  with _progress_bar(progress) as bar:
    for group in iter(lambda: list(itertools.islice(sentences, batch)), []):
      tokens.update(tokenization.clean_split("\n".join(group)))
      bar.update(len(group))
      if len(tokens) >= max_tokens:
        fold()
  fold()
  return words


def _learnable_words(words, vocab_size, max_unique_chars):
  """The words worth learning from, and the '##c' continuation characters they need.

  Left out, as our WordpieceTokenizer would make [UNK] of them whatever the vocab: words over its
  length limit, and words with a character outside the alphabet (the most frequent ``max_unique_chars``
  characters, ties by code point, and no more than fit in ``vocab_size`` beside their '##' forms).
  """
  words = {w: n for w, n in words.items() if len(w) <= tokenization.MAX_INPUT_CHARS_PER_WORD}
  char_counts, continued = collections.Counter(), set()
  for word, n in words.items():
    for char in word:
      char_counts[char] += n
    continued.update(word[1:])
  budget = vocab_size - len(reserved_tokens())
  alphabet = set()
  for char in sorted(char_counts, key=lambda c: (-char_counts[c], c))[:max_unique_chars]:
    budget -= 1 + (char in continued)
    if budget < 0:
      break
    alphabet.add(char)
  kept = {w: n for w, n in words.items() if alphabet.issuperset(w)}
  return kept, sorted({"##" + c for w in kept for c in w[1:]})


def _repeated(words, chunk_chars=1 << 16):
  """Text in which each word occurs its count times, in chunks (the Rust trainer counts text, it takes no
  counts); a chunk is bounded, so a word counted millions of times is spread over many."""
  chunk, size = [], 0
  for word, n in words.items():
    per_chunk = max(1, chunk_chars // (len(word) + 1))
    while n > 0:
      k = min(n, per_chunk)
      chunk.append((word + " ") * k)
      size += k * (len(word) + 1)
      n -= k
      if size >= chunk_chars:
        yield "".join(chunk)
        chunk, size = [], 0
  if chunk:
    yield "".join(chunk)


def _learn_hf(sentences, vocab_size, reserved, do_lower_case, strip_accents, max_unique_chars, progress):
  words, continuations = _learnable_words(
      count_words(sentences, do_lower_case, strip_accents, progress), vocab_size, max_unique_chars)
  # The trainer is BPE writing WordPiece pieces: every character alone and as '##c', then merges. Its
  # '##c' entries would get ids in hash-map order, which breaks ties between merges differently from run
  # to run (huggingface/tokenizers#1794): given as special tokens in sorted order, their ids are fixed
  # and the vocab is the same every run. The words are pre-split: split on spaces, normalise nothing.
  model = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token="[UNK]"))
  model.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
  trainer = tokenizers.trainers.WordPieceTrainer(
      vocab_size=vocab_size, special_tokens=reserved + continuations, continuing_subword_prefix="##",
      show_progress=False)
  model.train_from_iterator(_repeated(words), trainer)
  learned = [t for t, _ in sorted(model.get_vocab().items(), key=lambda kv: kv[1])]
  learned = learned[len(reserved) + len(continuations):]
  # BERT's order: reserved, characters, '##' characters, then the merged pieces in the order learnt.
  return (reserved + [t for t in learned if len(t) == 1] + continuations
          + [t for t in learned if len(t) > 1])


def _learn_tf_text(sentences, vocab_size, reserved, do_lower_case, strip_accents, max_unique_chars,
                   progress):
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset  # pylint: disable=import-outside-toplevel
  presplit = tokenization.BasicTokenizer(do_lower_case, strip_accents)
  error = []

  def lines():
    # Streamed (the corpus is never held in memory). An error is kept and re-raised below: raised
    # inside tf.data it would lose its type and message.
    with _progress_bar(progress) as bar:
      try:
        for sentence in sentences:
          bar.update()
          yield " ".join(presplit.tokenize(sentence))
      except Exception as e:  # pylint: disable=broad-except
        error.append(e)

  dataset = tf.data.Dataset.from_generator(lines, output_signature=tf.TensorSpec([], tf.string))
  vocab = bert_vocab_from_dataset.bert_vocab_from_dataset(
      dataset.batch(1000), vocab_size=vocab_size, reserved_tokens=reserved,
      # Input is already reference-normalised; the learner must only split on whitespace.
      bert_tokenizer_params=dict(lower_case=False), learn_params=dict(max_unique_chars=max_unique_chars))
  if error:
    raise error[0]
  return vocab


def learn_wordpiece_vocab(documents, output_file, vocab_size=30522, do_lower_case=True,
                          strip_accents=None, max_sentences=None, learner=DEFAULT_LEARNER,
                          max_unique_chars=MAX_UNIQUE_CHARS, progress=False):
  """Learns a WordPiece vocab with the reference's special-token places; returns its size.

  Args:
    documents: iterable of documents (lists of sentences), e.g. ``build.iter_documents``; read once,
      streaming (the "hf" learner keeps word counts, not text).
    output_file: the vocab.txt to write (atomically; its directory must exist).
    vocab_size: the most entries, the 104 reserved ones included (a small corpus may give fewer).
    do_lower_case, strip_accents: as for the tokenizer that will use the vocab.
    max_sentences: learn from the first N sentences only; None (default): all of them.
    learner: "hf" (default: Hugging Face's Rust trainer) or "tf-text" (tensorflow-text's learner).
    max_unique_chars: at most this many characters become pieces.
    progress: a sentences/s bar on stderr while reading.
  """
  if learner not in LEARNERS:
    raise DataPrepError(f"unknown vocab learner {learner!r}; use one of {', '.join(LEARNERS)}")
  # Before the learning, which takes a while on a real corpus; the output's directory is not created.
  runtime.check_writable(output_file, "vocab", create_parents=False)
  sentences = _first_and_rest(_sentences(documents, max_sentences))
  reserved = reserved_tokens()
  learn = _learn_hf if learner == "hf" else _learn_tf_text
  vocab = learn(sentences, vocab_size, reserved, do_lower_case, strip_accents, max_unique_chars, progress)
  # The learners' contract, checked rather than trusted: the reserved tokens first, in BERT's places,
  # and every entry once.
  if vocab[:len(reserved)] != reserved or len(set(vocab)) != len(vocab):
    raise RuntimeError(f"the {learner} learner did not keep the reserved tokens at ids 0..103 once each")
  runtime.atomic_write(output_file, "".join(token + "\n" for token in vocab))
  return len(vocab)


def learn_sentencepiece_model(documents, model_prefix, vocab_size=32000, do_lower_case=False,
                              model_type="unigram", max_sentences=None):
  """Trains ``{model_prefix}.model``; returns its path. Special tokens at the reference's ids."""
  runtime.check_writable(f"{model_prefix}.model", "SentencePiece model", create_parents=False)

  def sentences():
    for s in _sentences(documents, max_sentences):
      yield s.lower() if do_lower_case else s

  # [PAD] 0 and [UNK] 100 as the reserved ids; [unused*], [CLS], [SEP], [MASK] as user-defined symbols
  # fill ids 1..99 and 101..103 in order.
  user_defined = [t for t in reserved_tokens() if t not in ("[PAD]", "[UNK]")]
  # The trainer writes local files only: a remote model (gs://) is trained into memory and written from
  # there (without the .vocab listing beside it).
  remote = fileio.is_remote(model_prefix)
  output = dict(model_writer=io.BytesIO()) if remote else dict(model_prefix=str(model_prefix))
  spm.SentencePieceTrainer.train(
      sentence_iterator=sentences(), vocab_size=vocab_size,
      model_type=model_type, pad_id=0, unk_id=100, bos_id=-1, eos_id=-1, pad_piece="[PAD]",
      unk_piece="[UNK]", user_defined_symbols=user_defined, minloglevel=2,
      hard_vocab_limit=False, **output)
  if remote:
    runtime.atomic_write(f"{model_prefix}.model", output["model_writer"].getvalue())
  return f"{model_prefix}.model"
