"""Shared helpers for the fine-tuning tests: tiny configs and files in the official layouts."""

import os
import pathlib

from conftest import TINY_MODEL
from electra_tf.configs import FinetuningConfig


def tiny_config(data_dir, tasks, vocab_file, **overrides):
  """A 1-layer H=32 model on the BERT vocab, short sequences, random init (no pre-trained weights)."""
  kwargs = dict(task_names=list(tasks), vocab_file=str(vocab_file), init_checkpoint="none", max_seq_length=32,
                model_hparam_overrides=dict(TINY_MODEL), embedding_size=16, train_batch_size=8,
                eval_batch_size=8, predict_batch_size=8, num_train_epochs=1.0)
  kwargs.update(overrides)
  return FinetuningConfig.create("tiny", str(data_dir), **kwargs)


def write(path, text):
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(text, encoding="utf-8")
  return path


def rt_polarity_as_sst(root, data_dir, n_train, n_dev=None):
  """``root/finetuning_data/sst`` with the real rt_polarity sentences of the test data: the header and the first
  ``n_train`` training and ``n_dev`` dev rows (None: every row). Returns root."""
  src = pathlib.Path(data_dir) / "glue-style" / "rt_polarity"
  for split, n in (("train", n_train), ("dev", n_dev)):
    text = (src / f"{split}.tsv").read_text(encoding="utf-8")
    if n is not None:
      text = "\n".join(text.split("\n")[:n + 1]) + "\n"
    write(pathlib.Path(root) / "finetuning_data" / "sst" / f"{split}.tsv", text)
  return pathlib.Path(root)


def tsv(rows):
  return "".join("\t".join(str(c) for c in row) + "\n" for row in rows)


def glue_files(root):
  """Small files with the real GLUE headers and column orders for every GLUE task."""
  d = os.path.join(root, "finetuning_data")
  # CoLA: train/dev without header (source, label, original label, sentence); test with "index sentence".
  write(f"{d}/cola/train.tsv", tsv([["gj04", 1, "", "The sailors rode the breeze clear of the rocks."],
                                    ["gj04", 0, "*", "The more we study verbs, the crazier they get get."]]))
  write(f"{d}/cola/dev.tsv", tsv([["gj04", 1, "", "Good sentence here."]]))
  write(f"{d}/cola/test.tsv", tsv([["index", "sentence"], [0, "Bill whistled past the house."]]))
  write(f"{d}/sst/train.tsv", tsv([["sentence", "label"], ["a great film ", 1], ["dull and slow", 0]]))
  write(f"{d}/sst/dev.tsv", tsv([["sentence", "label"], ["it 's a charming journey", 1]]))
  write(f"{d}/sst/test.tsv", tsv([["index", "sentence"], [0, "uneasy mishmash of styles"], [1, "a gem"]]))
  mrpc_head = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
  write(f"{d}/mrpc/train.tsv", tsv([mrpc_head, [1, 702876, 702977, "Amrozi accused his brother .",
                                                "Referring to him , Amrozi accused his brother ."],
                                    [0, 2108705, 2108831, "Yucaipa owned Dominick 's .", "Yucaipa bought it ."]]))
  write(f"{d}/mrpc/dev.tsv", tsv([mrpc_head, [1, 1, 2, "He said so .", "He said it ."]]))
  write(f"{d}/mrpc/test.tsv", tsv([["index", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                                   [0, 1, 2, "PCCW 's chief .", "Chief of PCCW ."]]))
  sts_head = ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
              "sentence2", "score"]
  write(f"{d}/sts/train.tsv", tsv([sts_head, [0, "main-captions", "MSRvid", "2012test", 1, "none", "none",
                                              "A plane is taking off.", "An air plane is taking off.", "5.000"],
                                   [1, "main-captions", "MSRvid", "2012test", 4, "none", "none",
                                    "A man is playing a flute.", "A man is playing a bamboo flute.", "3.800"]]))
  write(f"{d}/sts/dev.tsv", tsv([sts_head, [0, "g", "f", "y", 0, "n", "n", "A man.", "A woman.", "1.000"],
                                 [1, "g", "f", "y", 0, "n", "n", "A cat.", "A cat.", "5.000"]]))
  write(f"{d}/sts/test.tsv", tsv([sts_head[:-1], [0, "g", "f", "y", 0, "n", "n", "A girl.", "A boy."]]))
  write(f"{d}/qqp/train.tsv", tsv([["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
                                   [133273, 213221, 213222, "How is the life of a math student?",
                                    "Which level of prepration is enough?", 0]]))
  write(f"{d}/qqp/dev.tsv", tsv([["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
                                 [1, 2, 3, "Why?", "Why not?", 1]]))
  write(f"{d}/qqp/test.tsv", tsv([["id", "question1", "question2"], [0, "What?", "Which?"]]))
  mnli_train = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
                "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label"]
  mnli_dev = mnli_train[:10] + ["label1", "label2", "label3", "label4", "label5", "gold_label"]
  p = ["(", ")", "(ROOT)", "(ROOT)"]
  write(f"{d}/mnli/train.tsv", tsv([mnli_train, [0, 31193, "31193n", "government"] + p +
                                    ["Conceptually cream skimming has two basic dimensions .",
                                     "Product and geography are what make cream skimming work .", "neutral",
                                     "neutral"]]))
  write(f"{d}/mnli/dev_matched.tsv", tsv([mnli_dev, [0, 1, "1e", "fiction"] + p +
                                          ["The new rights are nice enough", "Everyone loves them",
                                           "neutral", "entailment", "neutral", "neutral", "neutral",
                                           "neutral"]]))
  for split in ("test_matched", "test_mismatched"):
    write(f"{d}/mnli/{split}.tsv", tsv([mnli_train[:10], [0, 1, "1c", "slate"] + p + ["A man", "A person"]]))
  write(f"{d}/mnli/diagnostic.tsv", tsv([["index", "sentence1", "sentence2"], [0, "The cat sat.", "The cat did not sit."]]))
  for task in ("qnli", "rte"):
    head = ["index", "question", "sentence", "label"] if task == "qnli" else ["index", "sentence1", "sentence2", "label"]
    write(f"{d}/{task}/train.tsv", tsv([head, [0, "What came into force?", "The law came into force.", "entailment"],
                                        [1, "Who?", "Nobody knows.", "not_entailment"]]))
    write(f"{d}/{task}/dev.tsv", tsv([head, [0, "When?", "Yesterday.", "entailment"]]))
    write(f"{d}/{task}/test.tsv", tsv([head[:3], [0, "Where?", "Here."]]))
  return d
