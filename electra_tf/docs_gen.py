"""Writes docs/hparams.md from the config classes: ``python -m electra_tf.docs_gen``."""

import pathlib

from electra_tf import configs
from electra_tf.hparams import markdown_table

HEADER = """# Hyperparameters

Generated from `electra_tf/configs.py` by `python -m electra_tf.docs_gen`; do not edit by hand.

Pass any of these with `--hparams`, as a JSON string or a path to a `.json` file (as the reference):
`--hparams '{"learning_rate": 3e-4, "num_train_steps": 20000}'`. An unknown name, a value of the wrong
type or one out of range stops the tool with one line naming the hparam and what is allowed.
Defaults are the reference's; the size presets (`--model-size`) then set the per-size values described
in the tables' notes, and values you pass always win.
"""

NOTES = """
## Size presets (`--model-size`)

| preset | discriminator L / H / heads / FFN / E | generator H (fraction) | per-size settings |
|---|---|---|---|
| `tiny` | 3 / 128 / 2 / 512 / 128 | 64 (0.5) | not the paper's: a model that learns in minutes on a CPU; embedding_size 128, batch 32, the short-run recipe (`short_run_recipe`, docs/short_runs.md) and XLA; 4.6 M discriminator parameters at the 30,522-piece vocab, 1.70 M at the sample's 8,000 |
| `small` (default) | 12 / 256 / 4 / 1024 / 128 | 64 (0.25) | as the reference's code: embedding_size 128 |
| `small++` | 12 / 256 / 4 / 1024 / 128 | 256 (1.0) | the released ELECTRA-Small (reference issue #39); a full-width generator trained from scratch hurts Small (reference issue #73) |
| `base` | 12 / 768 / 12 / 3072 / 768 | 256 (0.33333) | paper Table 6, the block the reference leaves commented out: max_seq_length 512, lr 2e-4, batch 256 |
| `large` | 24 / 1024 / 16 / 4096 / 1024 | 256 (0.25) | Table 6: max_seq_length 512, lr 2e-4, mask_prob 0.25, batch 2048 |

Derived values: heads = max(1, H // 64), FFN = 4H, generator width = round(H x generator_hidden_size) with
its own heads/FFN by the same rule and depth round(L x generator_layers);
`max_predictions_per_seq = int((mask_prob + 0.005) * max_seq_length)` (19 at 128, 79 at 512).
"""


def render() -> str:
  runtime = (configs.RuntimeConfig,)
  return "\n".join([HEADER, "## Pre-training (`pretrain/run_pretraining.py`)\n",
                    markdown_table(configs.PretrainingConfig, exclude=runtime), NOTES,
                    "## Model (`model_hparam_overrides`)\n", markdown_table(configs.ModelConfig), "",
                    "## Fine-tuning (`finetune/run_finetuning.py`)\n",
                    markdown_table(configs.FinetuningConfig, exclude=runtime), "",
                    "## Runtime (both jobs)\n", markdown_table(configs.RuntimeConfig), ""])


def main():
  path = pathlib.Path(__file__).resolve().parent.parent / "docs" / "hparams.md"
  path.write_text(render(), encoding="utf-8")
  print(f"wrote {path}")


if __name__ == "__main__":
  main()
