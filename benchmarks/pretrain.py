"""Pre-training step throughput: this implementation vs transformers' PyTorch ELECTRA pair and
tf-models-official's ElectraPretrainer (in the interpreter given by --tfm-python), on the same machine in
the same run.

  python benchmarks/pretrain.py                                  # CPU-sized defaults
  python benchmarks/pretrain.py --sizes small,base --batch 128 --seq-len 128 --dtypes float32,bfloat16 \\
      --xla both --steps 20                                      # one GPU

Reports sequences/s, tokens/s, achieved TFLOP/s (analytic training FLOPs: 3x the forward matmul FLOPs of
generator and discriminator, attention included, embeddings lookups excluded) and the fraction of the
device's matmul peak measured here (a large square matmul in the same dtype). Synthetic random token ids;
the full step runs: masking, generator, Gumbel sampling, discriminator, loss, gradients, clip, AdamW.
``--profile-steps N`` traces N more steps with TensorFlow's profiler after the timed ones and adds where their
time went to the row (``electra_tf/runtime/profiling.py``: kernels per step, the device's busy share, categories);
``--profile-first-call`` traces the first call and adds where its tracing and compilation went.
"""

import argparse
import itertools
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from electra_tf import runtime  # pylint: disable=wrong-import-position  (no TensorFlow)

runtime.set_default_xla_flags()  # as the commands do, before TensorFlow starts


def training_flops_per_sequence(cfg) -> float:
  """Analytic FLOPs of one training sequence (fwd + bwd = 3x fwd) for generator + discriminator."""
  t, p = cfg.max_seq_length, cfg.max_predictions_per_seq

  def encoder(m, tokens):
    h, i, e, layers = m.hidden_size, m.intermediate_size, m.embedding_size, m.num_hidden_layers
    per_layer = 2 * tokens * (4 * h * h + 2 * h * i) + 2 * 2 * tokens * tokens * h  # dense + QK^T and PV
    return layers * per_layer + (2 * tokens * e * h if e != h else 0)

  disc, gen = cfg.discriminator_config(), cfg.generator_config()
  fwd = encoder(disc, t) + 2 * t * (disc.hidden_size ** 2 + disc.hidden_size)
  if cfg.electra_objective:
    e = gen.embedding_size if cfg.untied_generator_embeddings else disc.embedding_size
    fwd += encoder(gen, t) + 2 * p * (gen.hidden_size * e + e * gen.vocab_size)
  return 3.0 * fwd


def matmul_peak_tflops(dtype: str, n: int) -> float:
  import tensorflow as tf
  tfdtype = {"float32": tf.float32, "bfloat16": tf.bfloat16, "float16": tf.float16}[dtype]
  a = tf.random.normal([n, n], dtype=tf.float32)
  a = tf.cast(a, tfdtype)
  f = tf.function(lambda x: tf.reduce_sum(tf.cast(tf.matmul(x, x), tf.float32)))
  f(a).numpy()
  reps, start = 0, time.perf_counter()
  while time.perf_counter() - start < 2.0:
    f(a).numpy()
    reps += 1
  return 2 * n ** 3 * reps / (time.perf_counter() - start) / 1e12


def bench_ours(cfg, steps: int, warmup: int, profile_steps: int = 0, profile: dict = None,
               first_call_phases: dict = None, strategy=None) -> tuple:
  """(sequences/s over the timed steps, seconds of the first call: tracing, compiling and the warm-up steps,
  whether the step is XLA-compiled). With ``profile_steps``, traces that many more steps and puts
  ``profiling.summarize``'s dict in ``profile``; with a ``first_call_phases`` dict, traces the first call too and
  puts ``profiling.compile_phases`` in it. ``strategy``: the trainer's (default: the one ``cfg`` selects)."""
  import tensorflow as tf
  from electra_tf.pretraining import masking, trainer
  from electra_tf.runtime import profiling
  t = trainer.Trainer(cfg, progress=False, log_fn=lambda *_: None, check_inputs=False,
                      special=masking.SpecialIds(), strategy=strategy)
  b, n = cfg.train_batch_size, cfg.max_seq_length
  ids = tf.random.uniform([b, n], 1000, cfg.vocab_size, dtype=tf.int32, seed=1)
  ids = tf.concat([tf.fill([b, 1], 101), ids[:, 1:-1], tf.fill([b, 1], 102)], 1)
  batch = {"input_ids": ids, "input_mask": tf.ones_like(ids), "segment_ids": tf.zeros_like(ids)}
  ds = tf.data.Dataset.from_tensors(batch).repeat()
  iterator = iter(ds)  # the trainer's loop reads global batches from a local iterator
  train_loop = t.runner.train_loop()
  first = lambda: train_loop(iterator, tf.constant(warmup))[1].numpy()  # trace + compile
  if first_call_phases is not None:
    space, first_call = profiling.record(first)
    first_call_phases.update(profiling.compile_phases(space, first_call))
  else:
    start = time.perf_counter()
    first()
    first_call = time.perf_counter() - start
  start = time.perf_counter()
  train_loop(iterator, tf.constant(steps))[1].numpy()
  seqs = steps * b / (time.perf_counter() - start)
  if profile_steps:
    try:  # a trace that fails (no CUPTI, say) leaves the throughput standing
      profile.update(profiling.trace(lambda: train_loop(iterator, tf.constant(profile_steps))[1].numpy(),
                                     profile_steps))
    except Exception as e:  # pylint: disable=broad-except
      profile["error"] = f"{type(e).__name__}: {e}"
  return seqs, first_call, t.runner.use_xla


def bench_hf_torch(cfg, steps: int, warmup: int, dtype: str) -> float:
  """transformers' ElectraForMaskedLM (generator) + ElectraForPreTraining (discriminator), one step each
  with the same masking/sampling/loss shape as ELECTRA, AdamW, global-norm clip 1.0."""
  import torch
  from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining
  torch.manual_seed(0)
  d, g = cfg.discriminator_config(), cfg.generator_config()

  def hf(m):
    return ElectraConfig(vocab_size=m.vocab_size, embedding_size=d.embedding_size, hidden_size=m.hidden_size,
                         num_hidden_layers=m.num_hidden_layers, num_attention_heads=m.num_attention_heads,
                         intermediate_size=m.intermediate_size, max_position_embeddings=512)

  gen, disc = ElectraForMaskedLM(hf(g)), ElectraForPreTraining(hf(d))
  gen.electra.embeddings = disc.electra.embeddings  # shared embeddings, as ELECTRA
  gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight
  params = list({id(p): p for p in list(gen.parameters()) + list(disc.parameters())}.values())
  opt = torch.optim.AdamW(params, lr=1e-4, eps=1e-6, weight_decay=0.01)
  b, n, p = cfg.train_batch_size, cfg.max_seq_length, cfg.max_predictions_per_seq
  ids = torch.randint(1000, cfg.vocab_size, (b, n))
  autocast = torch.autocast("cpu" if not torch.cuda.is_available() else "cuda", dtype=torch.bfloat16,
                            enabled=dtype == "bfloat16")
  device = "cuda" if torch.cuda.is_available() else "cpu"
  gen.to(device), disc.to(device)
  ids = ids.to(device)

  def step():
    pos = torch.randint(1, n - 1, (b, p), device=device)
    masked = ids.clone().scatter_(1, pos, 103)
    with autocast:
      logits = gen(input_ids=masked).logits.gather(1, pos[..., None].expand(-1, -1, cfg.vocab_size))
      mlm = torch.nn.functional.cross_entropy(logits.float().reshape(-1, cfg.vocab_size),
                                              ids.gather(1, pos).reshape(-1))
      u = torch.rand_like(logits, dtype=torch.float32)
      sampled = (logits.float().detach() - torch.log(-torch.log(u + 1e-9) + 1e-9)).argmax(-1)
      fake = ids.clone().scatter_(1, pos, sampled)
      labels = (fake != ids).float()
      disc_logits = disc(input_ids=fake).logits
      loss = mlm + 50.0 * torch.nn.functional.binary_cross_entropy_with_logits(disc_logits.float(), labels)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()

  for _ in range(warmup):
    step()
  if device == "cuda":
    torch.cuda.synchronize()
  start = time.perf_counter()
  for _ in range(steps):
    step()
  if device == "cuda":
    torch.cuda.synchronize()
  return steps * b / (time.perf_counter() - start)


def bench_tf_models(cfg, steps: int, warmup: int, dtype: str, xla: bool, python: str) -> float:
  """tf-models-official's ElectraPretrainer step (benchmarks/_tfm_pretrain_step.py) in ``python``, an
  interpreter that has tf-models-official installed (it pins its own TensorFlow and Keras 2)."""
  import subprocess
  d, g = cfg.discriminator_config(), cfg.generator_config()
  script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_tfm_pretrain_step.py")
  args = dict(vocab_size=d.vocab_size, hidden_size=d.hidden_size, num_layers=d.num_hidden_layers,
              num_heads=d.num_attention_heads, intermediate_size=d.intermediate_size,
              embedding_size=d.embedding_size, generator_hidden_size=g.hidden_size,
              generator_layers=g.num_hidden_layers, batch=cfg.train_batch_size, seq_len=cfg.max_seq_length,
              max_predictions=cfg.max_predictions_per_seq, steps=steps, warmup=warmup)
  cmd = [python, script, f"--dtype={dtype}"] + (["--xla"] if xla else []) + [
      f"--{k.replace('_', '-')}={v}" for k, v in args.items()]
  proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
  if proc.returncode != 0:
    if "ModuleNotFoundError" in proc.stderr:
      raise ImportError(proc.stderr.strip().splitlines()[-1])
    raise RuntimeError(f"tf-models-official step failed: {proc.stderr.strip().splitlines()[-1:]}")
  return json.loads(proc.stdout.strip().splitlines()[-1])["seq_per_s"]


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--sizes", default="small", help="comma-separated: tiny, small, base, large")
  ap.add_argument("--vocab-size", type=int, default=30522, help="vocabulary rows (the sample vocab has 8,000)")
  ap.add_argument("--dtypes", default="float32,bfloat16")
  ap.add_argument("--xla", default="both", choices=("on", "off", "both", "auto"),
                  help="auto: the project's default (use_xla null: on with a GPU)")
  ap.add_argument("--batch", type=int, default=None, help="global batch (default 128 on GPU, 16 on CPU)")
  ap.add_argument("--seq-len", type=int, default=128)
  ap.add_argument("--steps", type=int, default=None, help="timed steps (default 20 GPU / 3 CPU)")
  ap.add_argument("--warmup", type=int, default=2)
  ap.add_argument("--compare", default="hf,tfm", help="others to time: hf (transformers PyTorch), tfm "
                                                       "(tf-models-official); '' for none")
  ap.add_argument("--tfm-python", default=sys.executable,
                  help="interpreter with tf-models-official installed, e.g. a separate venv made by "
                       "`python -m venv /tmp/tfm && /tmp/tfm/bin/pip install tf-models-official` "
                       "(it pins its own TensorFlow)")
  ap.add_argument("--strategy", default="one_device", choices=("one_device", "mirrored"),
                  help="mirrored: every local GPU (the global batch is split across them)")
  ap.add_argument("--cpu-replicas", type=int, default=0,
                  help="with --strategy mirrored and no GPU: split the CPU into this many logical devices and "
                       "mirror the step over them (the multi-GPU step's code path, on a CPU)")
  ap.add_argument("--dropout", default="keyed", choices=("keyed", "philox", "both"),
                  help="dropout's random numbers (ours): keyed per example (the default, per_example_dropout) "
                       "or TensorFlow's Philox per replica")
  ap.add_argument("--profile-steps", type=int, default=0,
                  help="trace this many more steps (ours) after the timed ones: where their time goes, in the row")
  ap.add_argument("--profile-first-call", action="store_true",
                  help="trace the first call (ours) too: where its tracing and compilation went, in the row")
  ap.add_argument("--json", help="also write the results here")
  args = ap.parse_args(argv)
  import tensorflow as tf
  from electra_tf.configs import PretrainingConfig
  gpus = tf.config.list_physical_devices("GPU")
  for physical in gpus:
    # --compare hf allocates PyTorch tensors in this process after TensorFlow has run: TensorFlow takes GPU memory
    # as it needs it instead of nearly all of it at start
    tf.config.experimental.set_memory_growth(physical, True)
  gpu = bool(gpus)
  strategy = None
  if args.cpu_replicas:
    if gpu or args.strategy != "mirrored" or args.cpu_replicas < 2:
      ap.error("--cpu-replicas takes 2 or more, with --strategy mirrored on a machine without a GPU")
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * args.cpu_replicas)
    strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(args.cpu_replicas)])
  batch = args.batch or (128 if gpu else 16)
  steps = args.steps or (20 if gpu else 3)
  device = tf.config.experimental.get_device_details(gpus[0]).get(
      "device_name", "GPU") if gpu else f"CPU ({os.cpu_count()} cores)"
  n_gpus = len(gpus)
  replicas = (n_gpus if gpu else args.cpu_replicas or 1) if args.strategy == "mirrored" else 1
  if args.strategy == "mirrored" and gpu:
    device = f"{n_gpus} x {device}"
  elif strategy is not None:
    device += f" as {args.cpu_replicas} mirrored logical devices"
  print(f"device: {device}; strategy {args.strategy}; batch {batch}, length {args.seq_len}, {steps} timed steps")
  peaks = {dt: matmul_peak_tflops(dt, 8192 if gpu else 2048) for dt in args.dtypes.split(",")}
  print("measured matmul peak (TFLOP/s): " + ", ".join(f"{k} {v:.3f}" for k, v in peaks.items()))
  rows = []
  xla_settings = {"both": [True, False], "auto": [None]}.get(args.xla, [args.xla == "on"])
  for size in args.sizes.split(","):
    for dtype in args.dtypes.split(","):
      for xla, dropout in itertools.product(xla_settings,
                                            ["keyed", "philox"] if args.dropout == "both" else [args.dropout]):
        cfg = PretrainingConfig.create(f"bench_{size}", "/nonexistent", preset=size, train_batch_size=batch,
                                       vocab_size=args.vocab_size,
                                       max_seq_length=args.seq_len, mixed_precision=dtype, use_xla=xla,
                                       num_warmup_steps=0, strategy=args.strategy,
                                       per_example_dropout=dropout == "keyed")
        flops = training_flops_per_sequence(cfg)
        # each gives (sequences/s, the first call's seconds or None where not timed, whether XLA compiled the step)
        profile, phases = {}, {} if args.profile_first_call else None
        impls = [("electra_tf", lambda: bench_ours(cfg, steps, args.warmup, args.profile_steps, profile, phases,
                                                      strategy))]
        if "hf" in args.compare.split(",") and xla:
          impls.append(("transformers-torch", lambda: (bench_hf_torch(cfg, steps, args.warmup, dtype), None, None)))
        if "tfm" in args.compare.split(",") and xla is not None:
          impls.append(("tf-models-official", lambda: (bench_tf_models(cfg, steps, args.warmup, dtype, xla,
                                                                       args.tfm_python), None, xla)))
        for name, fn in impls:
          try:
            seqs, first_call, used_xla = fn()
          except ImportError:
            print(f"{name}: not installed, skipped")
            continue
          except RuntimeError as e:
            print(f"{name}: {e}")
            continue
          tflops = seqs * flops / 1e12
          row = dict(impl=name, size=size, dtype=dtype, batch=batch, seq_len=args.seq_len, strategy=args.strategy,
                     replicas=replicas,
                     xla=used_xla, xla_setting="auto" if xla is None else xla,
                     dropout=None if name != "electra_tf" else dropout, seq_per_s=seqs,
                     tok_per_s=seqs * args.seq_len, tflops=tflops,
                     peak_fraction=tflops / (peaks[dtype] * (replicas if gpu else 1)),  # every GPU's peak
                     first_call_s=first_call)
          if name == "electra_tf" and profile:
            row["profile"] = profile
          if name == "electra_tf" and phases:
            row["first_call_phases"] = phases
          rows.append(row)
          print(f"{name:20s} {size:6s} {dtype:9s} xla={str(row['xla']):5s} dropout={str(row['dropout']):6s} "
                f"{seqs:9.1f} seq/s "
                f"{seqs * args.seq_len:10.0f} tok/s {tflops:7.3f} TFLOP/s {100 * row['peak_fraction']:5.1f}% of peak"
                + (f" (first call {first_call:.1f} s)" if first_call is not None else ""), flush=True)
          from electra_tf.runtime import profiling
          if "first_call_phases" in row:
            print(f"first call {profiling.first_call_line(phases)}", flush=True)
          if "profile" in row:
            print(profiling.markdown(row["profile"], f"{name} {size} {dtype}"), flush=True)
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"device": device, "peaks": peaks, "rows": rows}, f, indent=2)


if __name__ == "__main__":
  main()
