"""Independent check of replaced-token-detection pre-training: the same run in PyTorch with transformers.

  python experiments/rtd_independent_check.py --data-dir runs/electra_vs_mlm/data --steps 1000 \
      --out runs/rtd_check/torch_electra.json

Why: at the sample budget our ELECTRA discriminator stays on its "everything is original" plateau
(held-out disc_auc about 0.63, recall under 1%; docs/experiments/electra_vs_mlm.md). This script asks
whether an implementation that shares none of our modelling, masking, loss or optimizer code does the same
on the same TFRecords with the same hparams. If it learns where ours does not, ours has a bug.

Only the TFRecord reading uses TensorFlow. The networks are transformers' ElectraForMaskedLM (generator)
and ElectraForPreTraining (discriminator) with the embeddings block shared, as in the reference; masking,
Gumbel-max sampling, the loss (MLM mean + disc_weight x token-mean sigmoid cross-entropy) and AdamW without
bias correction are written here from the reference's description, not imported from electra_tf.

Differences from the reference, on purpose and small: positions are drawn without replacement (the
reference draws with replacement and scatters duplicates once), initialisation is transformers' normal(0.02)
rather than truncated normal.
"""

import argparse
import json
import math
import os
import pathlib
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def read_batches(pattern, batch_size, seq_len, seed, repeat):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.config.set_visible_devices([], "GPU")
  feats = {k: tf.io.FixedLenFeature([seq_len], tf.int64) for k in ("input_ids", "input_mask", "segment_ids")}
  files = sorted(tf.io.gfile.glob(pattern))
  if not files:
    raise SystemExit(f"error: no TFRecords match {pattern}; build them with data_prep/build_pretraining_dataset.py")
  ds = tf.data.TFRecordDataset(files)
  if repeat:
    ds = ds.repeat().shuffle(10_000, seed=seed)
  ds = ds.map(lambda r: tf.io.parse_single_example(r, feats)).batch(batch_size, drop_remainder=True)
  for b in ds.as_numpy_iterator():
    yield b


def build_models(vocab_size, hidden, layers, heads, ffn, emb, gen_fraction, seed, untied_embeddings):
  import torch  # pylint: disable=g-import-not-at-top
  torch.manual_seed(seed)
  from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining  # pylint: disable=g-import-not-at-top
  common = dict(vocab_size=vocab_size, embedding_size=emb, num_hidden_layers=layers, max_position_embeddings=512,
                type_vocab_size=2, hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                layer_norm_eps=1e-12)
  disc = ElectraForPreTraining(ElectraConfig(hidden_size=hidden, num_attention_heads=heads, intermediate_size=ffn,
                                             **common))
  gh = max(1, round(hidden * gen_fraction))
  gen = ElectraForMaskedLM(ElectraConfig(hidden_size=gh, num_attention_heads=max(1, gh // 64),
                                         intermediate_size=4 * gh, **common))
  if not untied_embeddings:
    gen.electra.embeddings = disc.electra.embeddings  # the reference shares the whole embeddings block
    gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight
  return torch, gen, disc


def mask_batch(torch, ids, mask, special, mask_id, mask_prob, max_pred, gen):
  """Reference masking: round(mask_prob * real tokens) positions (at least 1, at most max_pred) among
  non-special real tokens; 85% become [MASK], 15% keep the original."""
  b, n = ids.shape
  cand = (mask > 0) & ~torch.isin(ids, special)
  num = torch.clamp(torch.round(mask.sum(-1).float() * mask_prob).long(), 1, max_pred)
  num = torch.minimum(num, cand.sum(-1))
  scores = torch.rand(b, n, generator=gen).masked_fill(~cand, -1.0)
  order = scores.argsort(-1, descending=True)[:, :max_pred]
  weights = (torch.arange(max_pred)[None, :] < num[:, None]).float()
  positions = order * weights.long()  # unused slots point at position 0 with weight 0
  masked_ids = ids.clone()
  replace = (torch.rand(b, max_pred, generator=gen) < 0.85) & (weights > 0)
  rows = torch.arange(b)[:, None].expand(-1, max_pred)
  masked_ids[rows[replace], positions[replace]] = mask_id
  return masked_ids, positions, weights


def adamw_no_bias_correction(torch, params_decay, params_no_decay, lr, state, wd=0.01, b1=0.9, b2=0.999,
                             eps=1e-6):
  """The reference's AdamWeightDecayOptimizer: no bias correction, decay added to the update."""
  with torch.no_grad():
    for group, decay in ((params_decay, wd), (params_no_decay, 0.0)):
      for p in group:
        if p.grad is None:
          continue
        m, v = state.setdefault(id(p), (torch.zeros_like(p), torch.zeros_like(p)))
        m.mul_(b1).add_(p.grad, alpha=1 - b1)
        v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
        update = m / (v.sqrt() + eps)
        if decay:
          update = update + decay * p
        p.add_(update, alpha=-lr)


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--data-dir", required=True, help="contains pretrain_tfrecords/ and vocab.txt")
  p.add_argument("--out", required=True, help="JSON file for the curves")
  p.add_argument("--steps", type=int, default=1000)
  p.add_argument("--batch-size", type=int, default=32)
  p.add_argument("--seq-len", type=int, default=128)
  p.add_argument("--hidden-size", type=int, default=128)
  p.add_argument("--num-layers", type=int, default=4)
  p.add_argument("--num-heads", type=int, default=2)
  p.add_argument("--embedding-size", type=int, default=128)
  p.add_argument("--generator-fraction", type=float, default=0.25)
  p.add_argument("--learning-rate", type=float, default=1e-3)
  p.add_argument("--warmup-fraction", type=float, default=0.1)
  p.add_argument("--disc-weight", type=float, default=50.0)
  p.add_argument("--disc-bias-init", type=float, default=0.0,
                 help="diagnostic: initial bias of the discriminator's output unit (the reference: 0)")
  p.add_argument("--untied-embeddings", action="store_true",
                 help="diagnostic: the generator gets its own embeddings (the reference's "
                      "untied_generator_embeddings)")
  p.add_argument("--eval-every", type=int, default=250)
  p.add_argument("--eval-batches", type=int, default=40)
  p.add_argument("--seed", type=int, default=0)
  p.add_argument("--threads", type=int, default=2)
  args = p.parse_args()

  data = pathlib.Path(args.data_dir)
  vocab = (data / "vocab.txt").read_text(encoding="utf-8").split("\n")
  if vocab and vocab[-1] == "":
    vocab = vocab[:-1]
  index = {t: i for i, t in enumerate(vocab)}
  torch, gen_model, disc_model = build_models(len(vocab), args.hidden_size, args.num_layers, args.num_heads,
                                              4 * args.hidden_size, args.embedding_size,
                                              args.generator_fraction, args.seed,
                                              args.untied_embeddings)
  from sklearn.metrics import roc_auc_score  # pylint: disable=g-import-not-at-top
  with torch.no_grad():
    disc_model.discriminator_predictions.dense_prediction.bias.fill_(args.disc_bias_init)
  torch.set_num_threads(args.threads)
  rng = torch.Generator().manual_seed(args.seed)
  special = torch.tensor([index["[PAD]"], index["[CLS]"], index["[SEP]"], index["[MASK]"]])
  mask_id = index["[MASK]"]
  max_pred = int((0.15 + 0.005) * args.seq_len)
  F = torch.nn.functional

  params = {id(q): (n, q) for m in (gen_model, disc_model) for n, q in m.named_parameters()}
  no_decay = lambda n: "LayerNorm" in n or n.endswith("bias")
  decay_params = [q for n, q in params.values() if not no_decay(n)]
  plain_params = [q for n, q in params.values() if no_decay(n)]
  all_params = decay_params + plain_params
  state = {}
  warmup = max(1, int(args.warmup_fraction * args.steps))

  def forward(batch):
    ids = torch.from_numpy(batch["input_ids"]).long()
    mask = torch.from_numpy(batch["input_mask"]).long()
    seg = torch.from_numpy(batch["segment_ids"]).long()
    masked_ids, positions, weights = mask_batch(torch, ids, mask, special, mask_id, 0.15, max_pred, rng)
    hidden = gen_model.electra(input_ids=masked_ids, attention_mask=mask, token_type_ids=seg).last_hidden_state
    at = torch.gather(hidden, 1, positions[..., None].expand(-1, -1, hidden.shape[-1]))
    logits = gen_model.generator_lm_head(gen_model.generator_predictions(at))  # [b, max_pred, vocab]
    targets = torch.gather(ids, 1, positions)
    mlm = (F.cross_entropy(logits.transpose(1, 2), targets, reduction="none") * weights).sum() / (
        weights.sum() + 1e-6)
    u = torch.rand(logits.shape, generator=rng)
    sampled = (logits.detach().float() - torch.log(-torch.log(u + 1e-9) + 1e-9)).argmax(-1)
    fake = ids.clone()
    rows = torch.arange(ids.shape[0])[:, None].expand_as(positions)
    keep = weights > 0
    fake[rows[keep], positions[keep]] = sampled[keep]
    labels = (fake != ids).float()
    out = disc_model.electra(input_ids=fake, attention_mask=mask, token_type_ids=seg).last_hidden_state
    disc_logits = disc_model.discriminator_predictions(out)
    w = mask.float()
    disc = (F.binary_cross_entropy_with_logits(disc_logits, labels, reduction="none") * w).sum() / (w.sum() + 1e-6)
    extras = dict(logits=logits, targets=targets, weights=weights, sampled=sampled, labels=labels,
                  disc_logits=disc_logits, w=w, out=out)
    return mlm, disc, extras

  def evaluate():
    gen_model.eval()
    disc_model.eval()
    lab, score, w_all = [], [], []
    mlm_hits = samp_hits = n_pred = 0.0
    cos = []
    with torch.no_grad():
      for i, batch in enumerate(read_batches(str(data / "pretrain_tfrecords" / "pretrain_eval.tfrecord-*"),
                                             args.batch_size, args.seq_len, args.seed, repeat=False)):
        if i >= args.eval_batches:
          break
        _, _, x = forward(batch)
        keep = x["w"] > 0
        lab.append(x["labels"][keep])
        score.append(x["disc_logits"][keep])
        pw = x["weights"]
        mlm_hits += ((x["logits"].argmax(-1) == x["targets"]).float() * pw).sum().item()
        samp_hits += ((x["sampled"] == x["targets"]).float() * pw).sum().item()
        n_pred += pw.sum().item()
        h = F.normalize(x["out"], dim=-1)  # collapse check: mean cosine between different real tokens
        for j in range(h.shape[0]):
          hj = h[j][keep[j]]
          sim = hj @ hj.T
          k = hj.shape[0]
          cos.append(((sim.sum() - k) / (k * (k - 1))).item())
    gen_model.train()
    disc_model.train()
    y = torch.cat(lab).numpy()
    s = torch.cat(score).numpy()
    pred = s > 0
    tp = float((pred & (y > 0)).sum())
    return {"disc_auc": float(roc_auc_score(y, s)), "disc_accuracy": float((pred == (y > 0)).mean()),
            "disc_recall": tp / max(1.0, float((y > 0).sum())), "disc_precision": tp / max(1.0, float(pred.sum())),
            "masked_lm_accuracy": mlm_hits / n_pred, "sampled_masked_lm_accuracy": samp_hits / n_pred,
            "replaced_fraction": float(y.mean()), "mean_token_cosine": sum(cos) / len(cos)}

  curves = {"train": [], "eval": []}
  train_iter = read_batches(str(data / "pretrain_tfrecords" / "pretrain_data.tfrecord-*"), args.batch_size,
                            args.seq_len, args.seed, repeat=True)
  start = time.time()
  for step in range(1, args.steps + 1):
    lr = args.learning_rate * min(1.0, step / warmup) * max(0.0, 1 - (step - 1) / args.steps)
    mlm, disc, _ = forward(next(train_iter))
    loss = mlm + args.disc_weight * disc
    for q in all_params:
      q.grad = None
    loss.backward()
    gnorm = torch.nn.utils.clip_grad_norm_(all_params, 1.0)
    adamw_no_bias_correction(torch, decay_params, plain_params, lr, state)
    if step % 50 == 0:
      curves["train"].append({"step": step, "mlm_loss": mlm.item(), "disc_loss": disc.item(),
                              "grad_norm": float(gnorm), "lr": lr})
      print(f"step {step}: mlm {mlm.item():.3f} disc {disc.item():.4f} |g| {float(gnorm):.2f} "
            f"({step * args.batch_size / (time.time() - start):.1f} seq/s)", flush=True)
    if step % args.eval_every == 0 or step == args.steps:
      ev = {"step": step, **evaluate()}
      curves["eval"].append(ev)
      print("eval", json.dumps(ev), flush=True)
  out = pathlib.Path(args.out)
  out.parent.mkdir(parents=True, exist_ok=True)
  tmp = out.with_suffix(".tmp")
  tmp.write_text(json.dumps({"args": vars(args), **curves}, indent=1))
  os.replace(tmp, out)


if __name__ == "__main__":
  main()
