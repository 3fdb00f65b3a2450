"""Readers and featurizers of every task on files in the official layouts (written here) and real data."""

import json
import types

import numpy as np
import pytest

from electra_tf.finetuning import tagging
from electra_tf.finetuning.base import DataError, stack_features
from electra_tf.finetuning.qa import answer_offsets
from electra_tf.finetuning.scorers.qa import final_span, get_final_text
from electra_tf.finetuning.tasks import TASK_NAMES, get_task
from electra_tf.hparams import HParamError
from electra_tf.tokenization import load_tokenizer
from tests._finetuning_testlib import glue_files, tiny_config, tsv, write


@pytest.fixture(scope="module")
def tokenizer(bert_vocab):
  return load_tokenizer(bert_vocab, True)


@pytest.fixture()
def glue_dir(tmp_path):
  glue_files(tmp_path)
  return tmp_path


def task_for(name, root, tokenizer, vocab, **kw):
  return get_task(tiny_config(root, [name], vocab, **kw), name, tokenizer)


def test_registry_has_every_reference_task():
  assert set(TASK_NAMES) == {"cola", "sst", "mrpc", "sts", "qqp", "mnli", "qnli", "rte", "squad", "squadv1",
                             "newsqa", "naturalqs", "triviaqa", "searchqa", "chunk"}


def test_unknown_task(tmp_path, tokenizer, bert_vocab):
  with pytest.raises(HParamError, match="unknown task 'mnlii'"):
    task_for("mnlii", tmp_path, tokenizer, bert_vocab)


EXPECTED = {  # task -> (train texts of the first example, its label, number of train examples)
    "cola": (("The sailors rode the breeze clear of the rocks.", None), "1", 2),
    "sst": (("a great film ", None), "1", 2),
    "mrpc": (("Amrozi accused his brother .", "Referring to him , Amrozi accused his brother ."), "1", 4),
    "sts": (("A plane is taking off.", "An air plane is taking off."), 5.0, 4),
    "qqp": (("How is the life of a math student?", "Which level of prepration is enough?"), "0", 1),
    "mnli": (("Conceptually cream skimming has two basic dimensions .",
              "Product and geography are what make cream skimming work ."), "neutral", 1),
    "qnli": (("What came into force?", "The law came into force."), "entailment", 2),
    "rte": (("What came into force?", "The law came into force."), "entailment", 2),
}

EXPECTED_EVAL = {  # task -> {split: [(text_a, text_b, label), ...]} of glue_files' dev and test files
    "cola": {"dev": [("Good sentence here.", None, "1")], "test": [("Bill whistled past the house.", None)]},
    "sst": {"dev": [("it 's a charming journey", None, "1")],
            "test": [("uneasy mishmash of styles", None), ("a gem", None)]},
    "mrpc": {"dev": [("He said so .", "He said it .", "1")], "test": [("PCCW 's chief .", "Chief of PCCW .")]},
    "sts": {"dev": [("A man.", "A woman.", 1.0), ("A cat.", "A cat.", 5.0)], "test": [("A girl.", "A boy.")]},
    "qqp": {"dev": [("Why?", "Why not?", "1")], "test": [("What?", "Which?")]},
    "mnli": {"dev": [("The new rights are nice enough", "Everyone loves them", "neutral")],
             "test_matched": [("A man", "A person")], "test_mismatched": [("A man", "A person")],
             "diagnostic": [("The cat sat.", "The cat did not sit.")]},
    "qnli": {"dev": [("When?", "Yesterday.", "entailment")], "test": [("Where?", "Here.")]},
    "rte": {"dev": [("When?", "Yesterday.", "entailment")], "test": [("Where?", "Here.")]},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_glue_reader_columns(name, glue_dir, tokenizer, bert_vocab):
  task = task_for(name, glue_dir, tokenizer, bert_vocab)
  train = task.get_examples("train")
  (text_a, text_b), label, n = EXPECTED[name]
  assert len(train) == n
  assert (train[0].text_a, train[0].text_b, train[0].label) == (text_a, text_b, label)
  assert [e.eid for e in train] == list(range(n))
  assert set(task.test_splits) == set(EXPECTED_EVAL[name]) - {"dev"}
  for split, rows in EXPECTED_EVAL[name].items():  # dev and test splits are read as they are (not doubled)
    examples = task.get_examples(split)
    if split != "dev":
      rows = [row + (task.dummy_label(),) for row in rows]
    assert [(e.text_a, e.text_b, e.label) for e in examples] == rows, split
    assert [e.eid for e in examples] == list(range(len(rows)))
  features = task.featurize(train, True)
  ids = features[0]["input_ids"]
  assert ids[0] == tokenizer.vocab["[CLS]"] and len(ids) == 32
  n_real = sum(features[0]["input_mask"])
  assert ids[n_real - 1] == tokenizer.vocab["[SEP]"]
  if text_b is not None:  # second segment is 1 up to and including the final [SEP]
    seg = features[0]["segment_ids"]
    assert seg[n_real - 1] == 1 and seg[1] == 0 and seg[n_real] == 0


def test_double_unordered_swaps_pairs(glue_dir, tokenizer, bert_vocab):
  task = task_for("mrpc", glue_dir, tokenizer, bert_vocab)
  train = task.get_examples("train")
  assert (train[2].text_a, train[2].text_b) == (train[0].text_b, train[0].text_a)
  assert train[2].eid == 2 and len(task.get_examples("dev")) == 1  # only train is doubled
  off = task_for("mrpc", glue_dir, tokenizer, bert_vocab, double_unordered=False)
  assert len(off.get_examples("train")) == 2


def test_sts_regression_targets(glue_dir, tokenizer, bert_vocab):
  task = task_for("sts", glue_dir, tokenizer, bert_vocab)
  features = task.featurize(task.get_examples("train"), True)
  assert [f["sts_targets"] for f in features[:2]] == pytest.approx([1.0, 0.76])


def test_mnli_dev_is_matched_and_labels(glue_dir, tokenizer, bert_vocab):
  task = task_for("mnli", glue_dir, tokenizer, bert_vocab)
  assert task.test_splits == ("test_matched", "test_mismatched", "diagnostic")
  dev = task.get_examples("dev")
  assert dev[0].label == "neutral" and dev[0].text_b == "Everyone loves them"
  feats = task.featurize(dev, False)
  assert feats[0]["mnli_label_ids"] == 2  # [contradiction, entailment, neutral]
  assert task.get_examples("diagnostic")[0].text_a == "The cat sat."


def test_pair_truncation_pops_longer(tokenizer, glue_dir, bert_vocab):
  from electra_tf.finetuning.base import truncate_seq_pair
  a, b = list(range(10)), list(range(3))
  truncate_seq_pair(a, b, 8)
  assert (len(a), len(b)) == (5, 3)
  task = task_for("rte", glue_dir, tokenizer, bert_vocab, max_seq_length=8)
  f = task.featurize(task.get_examples("train"), True)[0]
  assert sum(f["input_mask"]) == 8


def test_malformed_rows_name_file_and_line(tmp_path, tokenizer, bert_vocab):
  d = tmp_path / "finetuning_data"
  write(d / "sst/train.tsv", tsv([["sentence", "label"], ["fine", 1], ["no label column"], ["x", 1]]))
  write(d / "rte/train.tsv", tsv([["index", "sentence1", "sentence2", "label"], [0, "a", "b", "entailment"],
                                  [1, "a", "b", "contradiction"]]))
  with pytest.raises(DataError, match=r"sst/train.tsv:3: .*1 columns where the header has 2"):
    task_for("sst", tmp_path, tokenizer, bert_vocab).get_examples("train")
  with pytest.raises(DataError, match=r"rte/train.tsv:3: .*unknown label 'contradiction'"):
    task_for("rte", tmp_path, tokenizer, bert_vocab).get_examples("train")
  with pytest.raises(DataError, match=r"sst/dev.tsv: file not found"):
    task_for("sst", tmp_path, tokenizer, bert_vocab).get_examples("dev")
  write(d / "sts/train.tsv", tsv([["s1", "s2", "score"], ["a", "b", "7.5"]]))
  with pytest.raises(DataError, match=r"sts/train.tsv:2: .*outside \[0.0, 5.0\]"):
    task_for("sts", tmp_path, tokenizer, bert_vocab).get_examples("train")
  skipping = task_for("sst", tmp_path, tokenizer, bert_vocab, skip_bad_rows=True)
  assert len(skipping.get_examples("train")) == 2  # opt-in, with a warning per row


def test_real_rt_polarity_as_sst(tmp_path, data_dir, tokenizer, bert_vocab):
  src = data_dir / "glue-style" / "rt_polarity"
  cfg = tiny_config(tmp_path, ["sst"], bert_vocab, raw_data_dir=str(src.parent), max_seq_length=64)
  task = get_task(cfg, "sst", tokenizer)
  task.__class__ = type("RT", (type(task),), {"data_dir": property(lambda self: str(src))})
  train, dev = task.get_examples("train"), task.get_examples("dev")
  assert (len(train), len(dev)) == (7530, 1000)
  assert {e.label for e in dev} == {"0", "1"}
  feats = task.featurize(dev[:50], False)
  assert feats[1]["input_ids"][1:4] == tokenizer.convert_tokens_to_ids(tokenizer.tokenize(dev[1].text_a))[:3]


# ---- chunking -------------------------------------------------------------------------------------------

def test_bioes_conversion():
  assert tagging.to_bioes(["B-NP", "I-NP", "I-NP", "B-VP", "O", "B-PP", "I-NP", "O"]) == [
      "B-NP", "I-NP", "E-NP", "S-VP", "O", "B-NP", "E-NP", "O"]  # as the reference: I continues, last type wins
  assert tagging.to_bioes(["I-NP", "I-NP", "O"]) == ["B-NP", "E-NP", "O"]  # IOB1-style start
  assert tagging.to_bioes(["NN", "DT", "-LRB-"]) == ["S-NN", "S-DT", "S--LRB-"]  # untyped (POS) tags


def test_conll_reader_and_featurizer(tmp_path, tokenizer, bert_vocab):
  write(tmp_path / "finetuning_data/chunk/train.txt",
        "-DOCSTART- -X- O\n\nConfidence NN B-NP\nin IN B-PP\nthe DT B-NP\npound NN I-NP\n\n"
        "Chancellor NNP O\nunbelievable JJ B-ADJP\n")
  write(tmp_path / "finetuning_data/chunk/dev.txt", "He PRP B-NP\nran VBD B-VP\n")
  cfg = tiny_config(tmp_path, ["chunk"], bert_vocab)
  task = get_task(cfg, "chunk", tokenizer)
  train = task.get_examples("train")
  assert [e.words for e in train] == [("Confidence", "in", "the", "pound"), ("Chancellor", "unbelievable")]
  mapping = task.label_mapping()
  assert list(mapping) == sorted(["S-NP", "S-PP", "B-NP", "E-NP", "O", "S-ADJP", "S-VP"])
  f = task.featurize(train, True)[1]
  # [CLS] chancellor un ##bel ##ie ##va ##ble [SEP]: word starts at 1 and 2; segment ids all 1
  pieces = tokenizer.tokenize("unbelievable")
  assert f["chunk_labeled_positions"][:3] == [1, 2, 0]
  assert sum(f["input_mask"]) == 3 + len(tokenizer.tokenize("Chancellor")) - 1 + len(pieces)
  assert set(f["segment_ids"][:sum(f["input_mask"])]) == {1}
  assert f["chunk_labels"][:2] == [mapping["O"], mapping["S-ADJP"]]
  assert f["chunk_labels_mask"][:3] == [1.0, 1.0, 0.0]
  write(tmp_path / "finetuning_data/chunk/dev.txt", "He PRP B-NP\nran\n")
  task2 = get_task(cfg, "chunk", tokenizer)
  with pytest.raises(DataError, match=r"chunk/dev.txt:2: expected 'word ... tag'"):
    task2._sentences("dev")


def test_real_oanc_pos_through_chunk_reader(data_dir):
  sentences = tagging.read_conll(str(data_dir / "tagging" / "oanc_pos" / "dev.txt"))
  assert len(sentences) == 2000
  words, tags = sentences[0]
  assert len(words) == len(tags) and words[:3] == ("Has", "the", "Internet")
  assert tagging.to_bioes(tags) == ["S-" + t for t in tags]  # POS tags: one-word spans


# ---- QA ---------------------------------------------------------------------------------------------------

def test_squad_sample_reader_and_featurizer(tmp_path, data_dir, tokenizer, bert_vocab):
  sample = json.loads((data_dir / "squad" / "squad-v1.1-sample.json").read_text())
  write(tmp_path / "finetuning_data/squadv1/train.json", json.dumps(sample))
  cfg = tiny_config(tmp_path, ["squadv1"], bert_vocab, max_seq_length=64, doc_stride=16, max_query_length=12)
  task = get_task(cfg, "squadv1", tokenizer)
  examples = task.get_examples("train")
  assert len(examples) == 5
  ex = examples[0]
  assert " ".join(ex.doc_tokens[ex.start_position:ex.end_position + 1]) == "Saint Bernadette Soubirous"
  features = task.featurize(examples, True)
  f0 = [f for f in features if f["squadv1_eid"] // 1000 == 0]
  assert len(f0) > 1 and [f["squadv1_eid"] % 1000 for f in f0] == list(range(len(f0)))
  hits = [f for f in f0 if f["squadv1_start_positions"] > 0]
  assert hits, "some window must contain the answer"
  for f in hits:
    ids = f["input_ids"][f["squadv1_start_positions"]:f["squadv1_end_positions"] + 1]
    assert tokenizer.convert_ids_to_tokens(ids) == tokenizer.tokenize("Saint Bernadette Soubirous")
  eval_features = task.featurize(examples[:1], False)
  # every document piece is the max-context copy in exactly one window
  owners = {}
  for f in eval_features:
    for pos, is_max in f["token_is_max_context"].items():
      if is_max:
        key = f["token_to_orig_map"][pos], f["tokens"][pos], pos - f["tokens"].index("[SEP]")
        owners.setdefault(f["example_index"], []).append(key)
  n_doc = sum(len(tokenizer.tokenize(w)) for w in examples[0].doc_tokens)
  assert len(owners[0]) == n_doc


def test_squad_v2_impossible_and_bad_json(tmp_path, tokenizer, bert_vocab):
  data = {"data": [{"title": "t", "paragraphs": [{"context": "The cat sat on the mat.", "qas": [
      {"id": "q1", "question": "Where did the cat sit?", "answers": [{"text": "on the mat", "answer_start": 12}],
       "is_impossible": False},
      {"id": "q2", "question": "Where is the dog?", "answers": [], "is_impossible": True}]}]}]}
  write(tmp_path / "finetuning_data/squad/train.json", json.dumps(data))
  write(tmp_path / "finetuning_data/squad/dev.json", "{\"data\": [\n{oops}")
  task = task_for("squad", tmp_path, tokenizer, bert_vocab, max_seq_length=32)
  train = task.get_examples("train")
  assert [e.is_impossible for e in train] == [False, True]
  feats = task.featurize(train, True)
  assert (feats[1]["squad_start_positions"], feats[1]["squad_is_impossible"]) == (0, 1)
  with pytest.raises(DataError, match=r"squad/dev.json:2: invalid JSON"):
    task.get_examples("dev")


def test_mrqa_reader(tmp_path, tokenizer, bert_vocab):
  lines = [{"header": {"dataset": "NewsQA", "split": "dev"}},
           {"context": "Obama was born in Hawaii .", "qas": [
               {"qid": "a1", "question": "Where was Obama born?", "answers": ["Hawaii", "in Hawaii"],
                "detected_answers": [{"text": "Hawaii", "char_spans": [[18, 23]], "token_spans": [[4, 4]]}]}]}]
  write(tmp_path / "finetuning_data/newsqa/train.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
  task = task_for("newsqa", tmp_path, tokenizer, bert_vocab)
  ex = task.get_examples("train")[0]
  assert (ex.qid, ex.doc_tokens[ex.start_position], ex.example_id) == ("a1", "Hawaii", "a1")
  assert task.gold("train") == {"a1": ["Hawaii", "in Hawaii"]}
  write(tmp_path / "finetuning_data/newsqa/dev.jsonl", json.dumps(lines[0]) + "\n{bad\n")
  with pytest.raises(DataError, match=r"newsqa/dev.jsonl:2: invalid JSON"):
    task.get_examples("dev")


def test_get_final_text():
  assert get_final_text("steve smith", "Steve Smith's", True) == "Steve Smith"
  assert get_final_text("1895", "(1895-1943).", True) == "1895"
  assert get_final_text("nowhere", "Steve", True) == "Steve"  # alignment fails -> original


def test_an_answer_s_offsets_point_at_its_own_span_in_the_context_s_whitespace():
  context = "  The  cat sat\n\non the\tmat. The cat left."
  words = context.split()
  # the second "The cat" (words 6 and 7), read as decoding reads it: words from 5 on joined by single spaces
  joined = " ".join(words[5:8])
  start, end = final_span("the cat", joined, True)
  assert joined[start:end] == "The cat"
  got = answer_offsets(context, 5, start, end)
  assert context[got[0]:got[1]] == "The cat" and got[0] == context.rindex("The cat")
  # a span across a newline and a tab keeps the context's own whitespace
  joined = " ".join(words[2:5])  # "sat on the"
  got = answer_offsets(context, 2, *final_span("sat on the", joined, True))
  assert context[got[0]:got[1]] == "sat\n\non the"
  # punctuation trimmed inside a word: "mat" of "mat."
  joined = words[5]
  got = answer_offsets(context, 5, *final_span("mat", joined, True))
  assert context[got[0]:got[1]] == "mat"


def test_user_tagging_fills_the_input_where_the_reference_cuts_sentences_of_many_words(tmp_path, tokenizer,
                                                                                        bert_vocab):
  words = tuple(["the", "cat", "sat"] * 9)  # 27 one-piece words: 29 pieces with [CLS] and [SEP]
  example = tagging.TaggingExample(0, "t", words, (), [1] * len(words))
  task = types.SimpleNamespace(config=types.SimpleNamespace(max_seq_length=20), tokenizer=tokenizer, name="t",
                               task_index=0)
  kept = {fill: int(sum(tagging.featurize_tagging(task, [example], fill=fill)[0]["t_labels_mask"]))
          for fill in (False, True)}
  # fill: [CLS] + 18 words + [SEP] = 20 pieces. The reference: word count (29) + pieces so far + 1 > 20 at once.
  assert kept == {False: 0, True: 18}
  feature = tagging.featurize_tagging(task, [example], fill=True)[0]
  assert sum(feature["input_mask"]) == 20 and feature["input_ids"][19] == tokenizer.vocab["[SEP]"]


def test_stack_features_pads_with_dummy_rows():
  arrays = stack_features([{"input_ids": [1, 2], "task_id": 0, "x": 5}],
                          [s for s in __import__("electra_tf.finetuning.base", fromlist=["x"]).common_feature_specs(2)],
                          n_tasks=2, pad_to_multiple=4)
  assert arrays["input_ids"].shape == (4, 2) and arrays["task_id"].tolist() == [0, 2, 2, 2]
  assert np.all(arrays["input_ids"][1:] == 0)
