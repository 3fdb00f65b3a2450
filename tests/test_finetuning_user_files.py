"""Reading a user's own files (``finetuning.user_files``) and inferring their task (``finetuning.user_task``), on
real text: WikiText-2 paragraphs under six section names as CSV, Rotten Tomatoes sentences as CSV / TSV / JSON
Lines, ``oanc_pos`` as CoNLL and JSON Lines, SQuAD JSON. Bad input: one ``DataError`` naming file, line and fix."""

import csv
import json
import types

import pytest

from _user_task_testlib import (SECTIONS, data_root, polarity_rows, pos_sentences, section_paragraphs,
                                write_csv, write_polarity, write_pos_jsonl, write_sections_csv)
from electra_tf.errors import DataError, HParamError
from electra_tf.finetuning import user_files
from electra_tf.finetuning.user_task import TaskSpec, infer_spec


def test_csv_rows_equal_pythons_csv_module_on_quoted_bom_crlf_file(tmp_path):
  rows = section_paragraphs("valid")[:200]
  rows += [('a field with "quotes", commas, and\na line break', "History"), ("  leading space", "Plot")]
  path = write_csv(tmp_path / "t.csv", ["paragraph", "section"], rows, bom=True, crlf=True)
  raw = open(path, "rb").read()
  assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw
  read = list(user_files.rows(path))
  assert [(r["paragraph"], r["section"]) for _, r in read] == [(t, s) for t, s in rows]
  # line numbers: where each row starts (the quoted line break makes the last but one row two lines long)
  assert read[0][0] == 2 and read[-1][0] == read[-2][0] + 2


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_every_format_reads_the_same_polarity_rows(tmp_path, fmt):
  train, _ = write_polarity(tmp_path, fmt, n_train=300, n_dev=10)
  read = [(r["review"], r["polarity"]) for _, r in user_files.rows(train)]
  assert read == polarity_rows("train", 300)


def test_sections_csv_is_six_class_classification_with_its_labels(tmp_path):
  train, _ = write_sections_csv(tmp_path, n_train=400, n_dev=50)
  spec = infer_spec(TaskSpec("sections", text_column="paragraph", label_column="section"), train)
  assert spec.type == "classification"
  expected = sorted({s for _, s in section_paragraphs("train")[:400]})
  assert spec.labels == expected and set(expected) <= set(SECTIONS)


def _jsonl(path, rows):
  path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
  return str(path)


def test_type_inference_from_labels(tmp_path):
  texts = [t for t, _ in polarity_rows("train", 40)]
  ints = _jsonl(tmp_path / "ints.jsonl", [{"text": t, "label": i % 3} for i, t in enumerate(texts)])
  spec = infer_spec(TaskSpec("a"), ints)
  assert (spec.type, spec.labels, spec.label_kind) == ("classification", [0, 1, 2], "integer")
  floats = _jsonl(tmp_path / "f.jsonl", [{"text": t, "label": len(t.split()) / 4} for t in texts])
  spec = infer_spec(TaskSpec("b"), floats)
  lengths = [len(t.split()) / 4 for t in texts]
  assert spec.type == "regression" and (spec.min_value, spec.max_value) == (min(lengths), max(lengths))
  lists = _jsonl(tmp_path / "l.jsonl", [{"text": t, "label": ["long"] * (len(t) > 80) + ["x"] * (i % 2)}
                                       for i, t in enumerate(texts)])
  lists_rows = [json.loads(line) for line in open(lists)]
  lists_rows = [r for r in lists_rows if r["label"]]
  _jsonl(tmp_path / "l.jsonl", lists_rows)
  spec = infer_spec(TaskSpec("c"), lists)
  assert spec.type == "multilabel" and spec.labels == ["long", "x"]
  sep = write_csv(tmp_path / "s.csv", ["text", "label"], [(t, "a|b" if i % 2 else "b") for i, t in enumerate(texts)])
  spec = infer_spec(TaskSpec("d", label_separator="|"), sep)
  assert spec.type == "multilabel" and spec.labels == ["a", "b"]
  csv_ints = write_csv(tmp_path / "i.csv", ["text", "label"], [(t, str(i % 4)) for i, t in enumerate(texts)])
  spec = infer_spec(TaskSpec("e"), csv_ints)
  assert (spec.type, spec.labels) == ("classification", [0, 1, 2, 3])
  spec = infer_spec(TaskSpec("f", type="regression"), csv_ints)
  assert (spec.type, spec.min_value, spec.max_value) == ("regression", 0.0, 3.0)


def test_tagging_and_qa_inferred_from_the_file(tmp_path):
  conll = data_root() / "tagging" / "oanc_pos" / "dev.txt"
  spec = infer_spec(TaskSpec("pos"), str(conll))
  tags = sorted({t for _, tags in pos_sentences("dev") for t in tags})
  assert spec.type == "tagging" and spec.labels == tags
  jsonl, _ = write_pos_jsonl(tmp_path, n_train=300, n_dev=10)
  spec = infer_spec(TaskSpec("pos2"), jsonl)
  assert spec.type == "tagging" and spec.labels == sorted({t for _, ts in pos_sentences("train", 300) for t in ts})
  assert [(list(w), list(t)) for _, w, t in user_files.conll_sentences(str(conll))] == pos_sentences("dev")
  squad = str(data_root() / "squad" / "squad-v1.1-sample.json")
  spec = infer_spec(TaskSpec("qa"), squad)
  assert spec.type == "qa" and not spec.squad_v2


# ---- bad input: one line naming the file, the line and the fix ----------------------------------------------

def bad(tmp_path, name, text, mode="w"):
  path = tmp_path / name
  if mode == "wb":
    path.write_bytes(text)
  else:
    path.write_text(text, encoding="utf-8")
  return str(path)


CASES = {
    "missing column": (lambda p: bad(p, "a.csv", "review,label\nfine film,pos\nbad film,neg\n"),
                       {"text_column": "body"}, "no column 'body' (--text-column); the file's columns are 'review', "
                       "'label'"),
    "no default column": (lambda p: bad(p, "a.csv", "review,label\nfine film,pos\nbad film,neg\n"), {},
                          "no column named 'text' or 'sentence' or 'sentence1'; say which column with --text-column "
                          "(the file's columns are 'review', 'label')"),
    "empty file": (lambda p: bad(p, "a.csv", ""), {}, "empty file"),
    "header only": (lambda p: bad(p, "a.csv", "text,label\n"), {}, "a header but no rows"),
    "missing label": (lambda p: bad(p, "a.csv", "text,label\nfine film,pos\nbad film,\ndull,neg\n"), {},
                      "a.csv:3: no label in column 'label'"),
    "mixed label types": (lambda p: bad(p, "a.jsonl", '{"text": "a", "label": 1}\n{"text": "b", "label": "pos"}\n'),
                          {}, "a.jsonl:2: mixed label types: line 1 has an integer label, line 2 text"),
    "malformed JSON line": (lambda p: bad(p, "a.jsonl", '{"text": "a", "label": "x"}\n{"text": "b", label}\n'), {},
                            "a.jsonl:2: malformed JSON"),
    "unclosed quote": (lambda p: bad(p, "a.csv", 'text,label\nfine,pos\n"dull film,neg\nok,pos\n'), {},
                       "a.csv:3: malformed CSV: unexpected end of data; a quoted field is never closed"),
    "not UTF-8": (lambda p: bad(p, "a.csv", "text,label\ncaf\xe9,x\n".encode("latin-1"), "wb"), {},
                  "a.csv:2: not UTF-8 text (byte 0xe9); save the file as UTF-8"),
    "tokens and tags differ": (lambda p: bad(p, "a.jsonl", '{"tokens": ["a", "b"], "tags": ["DT"]}\n'), {},
                               "a.jsonl:1: 2 tokens but 1 tags; give one tag per token"),
    "one label": (lambda p: bad(p, "a.csv", "text,label\na,x\nb,x\n"), {}, "needs at least two labels"),
    "unknown extension": (lambda p: bad(p, "a.xlsx", "x"), {}, "unknown file type '.xlsx'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_training_file_is_one_line(tmp_path, case):
  make, spec_kwargs, message = CASES[case]
  path = make(tmp_path)
  with pytest.raises(DataError) as err:
    infer_spec(TaskSpec("t", **spec_kwargs), path)
  text = str(err.value)
  assert message in text and "\n" not in text, text


def test_multilabel_type_without_lists_says_how(tmp_path):
  path = write_csv(tmp_path / "a.csv", ["text", "label"], [("a", "x"), ("b", "y")])
  with pytest.raises(HParamError, match="--label-separator"):
    infer_spec(TaskSpec("t", type="multilabel"), path)


def test_csv_module_and_reader_agree_on_a_tsv_with_quotes(tmp_path):
  rows = [(t, s) for t, s in polarity_rows("dev", 100)] + [('say "hi"\tthere', "positive")]
  path = tmp_path / "d.tsv"
  with open(path, "w", encoding="utf-8", newline="") as f:
    csv.writer(f, delimiter="\t").writerows([("review", "polarity")] + rows)
  assert [(r["review"], r["polarity"]) for _, r in user_files.rows(str(path))] == rows


def _user_task(tmp_path, bert_vocab, train, dev, **overrides):
  from electra_tf.finetuning.tasks import get_tasks
  from electra_tf.tokenization import load_tokenizer
  from tests._finetuning_testlib import tiny_config
  cfg = tiny_config(tmp_path, ["t"], bert_vocab, train_file=bad(tmp_path, "train.jsonl", train),
                    dev_file=bad(tmp_path, "dev.jsonl", dev) if dev else None, **overrides)
  return get_tasks(cfg, load_tokenizer(str(bert_vocab), True))[0]


def test_a_null_text_or_a_regression_dev_without_two_labels_is_one_line(tmp_path, bert_vocab):
  rows = "".join(json.dumps({"text": f"film {i}", "score": i / 4}) + "\n" for i in range(8))
  with pytest.raises(DataError, match=r"dev.jsonl:2: the text in column 'text' is null; give a string"):
    _user_task(tmp_path, bert_vocab, rows, '{"text": "a", "score": 1}\n{"text": null, "score": 0.5}\n',
               label_column="score")
  task = _user_task(tmp_path, bert_vocab, rows, '{"text": "fine", "score": 1.5}\n', label_column="score")
  with pytest.raises(DataError, match=r"dev.jsonl: 1 row\(s\), 1 distinct label\(s\): scoring a regression "
                     r"\(Pearson and Spearman correlation\) needs two different labels; add rows$"):
    task.split_examples("dev")
  task = _user_task(tmp_path, bert_vocab, rows, None, label_column="score", validation_size=1)
  with pytest.raises(DataError, match=r"the validation split of .*train.jsonl: 1 row\(s\).*or raise validation_size"):
    task.split_examples("validation")
  task = _user_task(tmp_path, bert_vocab, rows, None, label_column="score", validation_size=2)
  assert len(task.split_examples("validation")) == 2


def test_a_finished_run_removes_the_trial_models_an_earlier_run_left_beyond_its_own(tmp_path, bert_vocab):
  from electra_tf.finetuning.run import FinetuningRun
  from tests._finetuning_testlib import tiny_config
  models = tmp_path / "models" / "tiny" / "finetuning_models"
  for name in ("t_model_1", "t_model_2", "t_model_10", "t_models_3", "other_model_3", "t_x_model_3"):
    (models / name).mkdir(parents=True)
  run = FinetuningRun.__new__(FinetuningRun)  # the method needs only these
  run.config, run.chief, run.tasks_key = tiny_config(tmp_path, ["t"], bert_vocab, num_trials=1), True, "t"
  run.tasks = [types.SimpleNamespace(name="t")]  # a reference task: its models stay, as the reference keeps them
  run.remove_earlier_models()
  assert len(list(models.iterdir())) == 6
  run.tasks = [types.SimpleNamespace(name="t", spec=None)]  # a task from the user's files
  run.remove_earlier_models()
  assert sorted(p.name for p in models.iterdir()) == ["other_model_3", "t_model_1", "t_models_3", "t_x_model_3"]
  run.config = tiny_config(tmp_path, ["t"], bert_vocab, num_trials=-1)  # trials without end: nothing is stale
  (models / "t_model_2").mkdir()
  run.remove_earlier_models()
  assert (models / "t_model_2").is_dir()
