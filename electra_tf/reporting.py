"""Reading training curves back from TensorBoard event files, and plotting them (matplotlib, Agg).

matplotlib comes with the ``sample`` extra (``pip install "electra-tf[sample]"``) and is imported only to plot:
reading curves needs none of it."""

import collections
import glob
import io
import os
import typing

import tensorflow as tf
from tensorflow.core.util import event_pb2

from electra_tf.errors import SAMPLE_EXTRA_INSTALL, SampleDataError
from electra_tf.runtime.atomic_files import atomic_write

Curves = typing.Dict[str, typing.List[typing.Tuple[int, float]]]


def read_scalars(event_dir: str) -> Curves:
  """``{tag: [(step, value), ...]}`` from every event file under ``event_dir`` (sorted by step)."""
  curves = collections.defaultdict(dict)
  for path in sorted(glob.glob(os.path.join(event_dir, "**", "events.out.tfevents.*"), recursive=True)):
    for record in tf.data.TFRecordDataset(path):
      event = event_pb2.Event.FromString(record.numpy())
      for value in event.summary.value:
        if value.HasField("tensor"):
          number = float(tf.make_ndarray(value.tensor))
        elif value.HasField("simple_value"):
          number = float(value.simple_value)
        else:
          continue
        curves[value.tag][int(event.step)] = number  # a resumed run rewrites steps: keep the last
  return {tag: sorted(points.items()) for tag, points in curves.items()}


def check_plotting():
  """Raises ``SampleDataError`` (one line naming the install command) when matplotlib is not installed: a job
  that plots at its end calls it before its work."""
  _matplotlib()


def _matplotlib():
  """matplotlib's ``Figure`` and ``NullFormatter`` (no pyplot: no global backend or figure state to manage)."""
  try:
    from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel
    from matplotlib.ticker import NullFormatter  # pylint: disable=import-outside-toplevel
  except ImportError:
    raise SampleDataError(f"plotting needs matplotlib, which the sample extra installs: {SAMPLE_EXTRA_INSTALL}"
                          ) from None
  return Figure, NullFormatter


def plot_panels(panels, path: str, title: str = ""):
  """Draws line panels and writes a PNG.

  ``panels``: list of (panel title, y label, [(legend label, [(x, y), ...]), ...], optional dict with
  ``hline`` (value, label), ``kind`` ("line" or "bar"), ``xlabel`` (default "step"), ``logx`` (a log x axis),
  ``xticks`` (the x values to label) and ``colors`` ({legend label: matplotlib colour})).
  The PNG is written whole or not at all, its directory created if missing.
  """
  Figure, NullFormatter = _matplotlib()  # pylint: disable=invalid-name
  cols = 2 if len(panels) == 4 else min(len(panels), 3)
  rows = (len(panels) + cols - 1) // cols
  fig = Figure(figsize=(5.2 * cols, 3.6 * rows))
  axes = fig.subplots(rows, cols, squeeze=False)
  for ax, panel in zip(axes.flat, panels):
    name, ylabel, series = panel[:3]
    options = panel[3] if len(panel) > 3 else {}
    if options.get("kind") == "bar":
      labels = [label for label, _ in series]
      values = [points for _, points in series]
      bars = ax.bar(labels, values, color=["#4c72b0", "#dd8452", "#55a868"][:len(values)])
      ax.bar_label(bars, fmt="%.1f")
      ax.set_ylim(min(values + [options.get("hline", (100, ""))[0]]) - 10, max(values) + 5)
    else:
      colors = options.get("colors", {})
      for label, points in series:
        if points:
          xs, ys = zip(*points)
          ax.plot(xs, ys, label=label, marker="o" if len(xs) < 12 else None, markersize=3, color=colors.get(label))
      ax.set_xlabel(options.get("xlabel", "step"))
      if options.get("logx"):
        ax.set_xscale("log")
        low, high = ax.get_xlim()
        if high > 10 * low:  # over a decade: the decades' labels only (minor labels would overlap)
          ax.xaxis.set_minor_formatter(NullFormatter())
      if options.get("xticks"):  # label the data's own x values, not the log axis' decades and minor ticks
        ax.set_xticks(options["xticks"], [f"{x:,g}" for x in options["xticks"]])
        ax.minorticks_off()
      if len(series) > 1:
        ax.legend(fontsize=8)
    if "hline" in options:
      ax.axhline(options["hline"][0], color="gray", linestyle="--", linewidth=1, label=options["hline"][1])
      ax.legend(fontsize=8)
    ax.set_title(name, fontsize=10)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
  if title:
    fig.suptitle(title, fontsize=11)
  fig.tight_layout()
  png = io.BytesIO()
  fig.savefig(png, format="png", dpi=110)
  atomic_write(path, png.getvalue())
  return path
