"""GLUE and SQuAD through tensorflow-datasets (``data_source: "tfds"``).

TFDS records are laid out as the task's own files (same columns, labels as the reference's label
strings, test splits ordered by the GLUE ``idx`` so example ids match the server's index), so the
readers, featurizers and outputs are the same code as for files. MRQA and chunking have no TFDS source.
"""

from electra_tf.finetuning.base import DataError
from electra_tf.hparams import HParamError

# task -> (TFDS name, (text_a feature, text_b feature)), and split -> TFDS split per task
GLUE = {"cola": ("glue/cola", ("sentence", None)), "sst": ("glue/sst2", ("sentence", None)),
        "mrpc": ("glue/mrpc", ("sentence1", "sentence2")), "sts": ("glue/stsb", ("sentence1", "sentence2")),
        "qqp": ("glue/qqp", ("question1", "question2")), "mnli": ("glue/mnli", ("premise", "hypothesis")),
        "qnli": ("glue/qnli", ("question", "sentence")), "rte": ("glue/rte", ("sentence1", "sentence2"))}
SQUAD = {"squad": "squad/v2.0", "squadv1": "squad/v1.1"}
SPLITS = {"train": "train", "dev": "validation", "test": "test", "test_matched": "test_matched",
          "test_mismatched": "test_mismatched"}


class TFDSSource:
  def __init__(self, name: str, data_dir=None):
    self.name, self.data_dir = name, data_dir

  @classmethod
  def for_task(cls, task):
    data_dir = getattr(task.config, "tfds_data_dir", None)
    if task.name in GLUE:
      return cls(GLUE[task.name][0], data_dir)
    if task.name in SQUAD:
      return cls(SQUAD[task.name], data_dir)
    raise HParamError(f"task {task.name!r} has no tensorflow-datasets source (GLUE and SQuAD do); use "
                      "data_source files")

  def _load(self, name, split):
    import tensorflow_datasets as tfds  # pylint: disable=import-outside-toplevel
    try:
      ds, info = tfds.load(name, split=split, data_dir=self.data_dir, with_info=True)
    except Exception as e:  # pylint: disable=broad-except
      raise DataError(f"tfds:{name}/{split}", None, f"cannot load ({type(e).__name__}: "
                      f"{str(e).splitlines()[0] if str(e) else ''})") from None
    return tfds.as_numpy(ds), info

  def rows(self, task, split):
    """[(record number, columns)] in the layout ``task.columns(split)`` reads, header first."""
    name, (a_key, b_key) = GLUE[task.name]
    tfds_split = SPLITS.get(split, split)
    if task.name == "mnli" and split == "dev":
      tfds_split = "validation_matched"
    if split == "diagnostic":
      name, tfds_split = "glue/ax", "test"
    records, info = self._load(name, tfds_split)
    label_names = getattr(info.features["label"], "names", None)
    cols = task.columns(split)
    idx = [c for c in (cols.text_a, cols.text_b, cols.label) if c is not None]
    width = max(max(i + 1 for i in idx if i >= 0) if any(i >= 0 for i in idx) else 0,
                max(-i for i in idx if i < 0) if any(i < 0 for i in idx) else 0)
    out = []
    if cols.header:
      out.append((0, ["header"] * width))
    for n, (_, rec) in enumerate(sorted(((int(r["idx"]), r) for r in records), key=lambda x: x[0]), 1):
      row = [""] * width
      row[cols.text_a] = rec[a_key].decode("utf-8")
      if cols.text_b is not None:
        row[cols.text_b] = rec[b_key].decode("utf-8")
      if cols.label is not None:
        label = rec["label"]
        if label_names is not None:  # ClassLabel index -> the reference's label string
          label = label_names[int(label)] if task.name in ("mnli", "qnli", "rte") else str(int(label))
        row[cols.label] = str(float(label)) if task.name == "sts" else label
      out.append((n, row))
    return out

  def squad_data(self, task, split):
    """The SQuAD JSON ``data`` list rebuilt from TFDS records (paragraphs grouped by context)."""
    records, _ = self._load(SQUAD[task.name], SPLITS.get(split, split))
    articles, paragraphs = {}, {}
    for rec in records:
      title, context = rec["title"].decode("utf-8"), rec["context"].decode("utf-8")
      if title not in articles:
        articles[title] = {"title": title, "paragraphs": []}
      key = (title, context)
      if key not in paragraphs:
        paragraphs[key] = {"context": context, "qas": []}
        articles[title]["paragraphs"].append(paragraphs[key])
      answers = [{"text": t.decode("utf-8"), "answer_start": int(s)}
                 for t, s in zip(rec["answers"]["text"], rec["answers"]["answer_start"])]
      qa = {"id": rec["id"].decode("utf-8"), "question": rec["question"].decode("utf-8"), "answers": answers}
      if "is_impossible" in rec:
        qa["is_impossible"] = bool(rec["is_impossible"])
      paragraphs[key]["qas"].append(qa)
    return list(articles.values())
