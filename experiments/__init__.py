"""The research experiments (docs/experiments/): scripts on the installed library, run as modules from the
checkout's root with the project's environment, e.g. ``python -m experiments.label_efficiency --quick``.

- ``label_efficiency``: accuracy against labelled examples, each model with its own setting chosen on validation;
- ``paper_claim``: ELECTRA vs MLM-only vs random weights at equal pre-training FLOPs (label_efficiency's protocol
  for the fine-tuning);
- ``short_run_sweep``: peak LR, warmup and bias correction for short pre-training runs, the sweeps the
  short-run recipe came from (docs/short_runs.md#the-short-run-recipe);
- ``units``: their resumable units of work (one JSON file per finished unit, reused by a rerun).

Their plots need the ``sample`` extra (``pip install "electra-tf[sample]"``, which scripts/setup_env.sh installs).
"""
