"""Training-update throughput: our jitted SFT and GRPO steps vs the same update in PyTorch +
transformers (same Qwen3 weights, AdamW, grad clip 1.0, same batch), measured in one run.

Both sides get the identical model (written with `lib.models.save_pretrained`, read by
`transformers.Qwen3ForCausalLM.from_pretrained`), batch and hyper-parameters; the first-step losses
are compared as a check that they compute the same thing. Timings alternate JAX / PyTorch rounds
(`lib.bench.rounds`, `rounds` rounds of `reps` updates per side, after the first update of each)
so background load hits both alike; the reported figure is the median round, with the min-max and
the ratio's range over rounds, and the summary records the load, CPU and thread settings (no
headline ratio on a noisy run: load above one per core). tokens/s counts every token of the batch
(prompt + response / prompt + target), i.e. B x T per update, on both sides.

Same work on both sides: the loss falls on the last `response_len` tokens, so both run the output
head on the last response_len + 1 positions only (ours: `make_sft_step(target_window=...)` and
`grpo.response_logprobs`; transformers: `logits_to_keep`, as TRL's GRPO trainer calls it) and
neither materialises [B, T, vocab] logits; the SFT loss on the torch side is the same token-mean
cross-entropy over that window.

The physical limit (`lib.plan.roofline`): the jitted float32 matmul peak is probed before the
rounds; each row reports the model FLOPs of one update (`roofline.update_flops`: 6 N B T + causal
attention 6 L H D B T^2, N without the untied input embedding and the output head, plus the head's 6
V d B (response_len + 1) on the window both sides score), each side's achieved GFLOP/s (FLOPs x
median updates/s) and its share of the probed peak (MFU). Threads: XLA's CPU client and torch both
use every core (`torch.get_num_threads()` and the environment's thread variables are recorded); no
XLA flags are set by the benchmark (`XLA_FLAGS` is recorded as found).
"""
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from lib import models
from lib.bench.rounds import Rounds, token_accounting
from lib.models import model_setup
from lib.plan import roofline
from lib.rl import grpo
from lib.run import config_blocks
from lib.run.results import write_summary
from lib.sft import step as sft
from lib.train import optim
from lib.train.state import TrainState, nnx_apply_fn


def _batches(rng, c, vocab):
  b, t, n = c.batch, c.seq_len, c.response_len
  ids = rng.integers(0, vocab, (b, t)).astype(np.int32)
  attn = np.ones((b, t), np.int32)
  loss_mask = (np.arange(t)[None] >= t - n).astype(np.int32).repeat(b, 0)
  rl = {"input_ids": ids, "attention_mask": attn, "response_mask": loss_mask[:, -n:],
        "old_logp": rng.normal(-8, 0.1, (b, n)).astype(np.float32),
        "ref_logp": rng.normal(-8, 0.1, (b, n)).astype(np.float32),
        "advantages": rng.normal(size=(b,)).astype(np.float32)}
  return {"input_ids": ids, "attention_mask": attn, "loss_mask": loss_mask}, rl


def _torch_steps(hf_dir, c, sft_batch, rl_batch):
  """Fresh transformers model + AdamW -> (sft_step, grpo_step, threads); each call to this gives
  an untouched copy of the weights, so every benchmark starts where the JAX side starts."""
  # torch is the optional peer (the `test` extra), imported only when the torch side is timed
  import torch
  import transformers  # its torch models need torch, the optional peer above
  torch.manual_seed(0)
  model = transformers.AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32)
  model.train()
  decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
  no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
  opt = torch.optim.AdamW([{"params": decay, "weight_decay": c.weight_decay},
                           {"params": no_decay, "weight_decay": 0.0}],
                          lr=c.lr, betas=(0.9, 0.999), eps=1e-8)
  ids = torch.as_tensor(sft_batch["input_ids"], dtype=torch.long)
  attn = torch.as_tensor(sft_batch["attention_mask"])
  n = c.response_len
  window = torch.as_tensor(sft_batch["loss_mask"][:, -n:]).bool()   # every target lies here
  rl = {k: torch.as_tensor(v) for k, v in rl_batch.items()}

  def sft_step():
    logits = model(input_ids=ids, attention_mask=attn, logits_to_keep=n + 1).logits[:, :-1]
    nll = torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), ids[:, -n:],
                                            reduction="none")
    loss = nll[window].mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(loss.detach())

  def grpo_step():
    logits = model(input_ids=ids, attention_mask=attn, logits_to_keep=n + 1).logits[:, :-1].float()
    logp_all = torch.log_softmax(logits, -1)
    logp = logp_all.gather(-1, ids[:, -n:, None])[..., 0]
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    m = rl["response_mask"].float()
    a = rl["advantages"][:, None]
    ratio = torch.exp(torch.clamp(logp - rl["old_logp"], -20, 20))
    pg = torch.maximum(-a * ratio, -a * torch.clamp(ratio, 0.8, 1.2))
    pg = torch.where(a < 0, torch.minimum(pg, -a * 3.0), pg)
    d = torch.clamp(rl["ref_logp"] - logp, -20, 20)
    kl = torch.clamp(torch.exp(d) - d - 1, -10, 10)
    mean = lambda x: (x * m).sum() / m.sum()
    loss = mean(pg) + 0.01 * mean(kl) - 0.001 * mean(entropy)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(loss.detach())

  return sft_step, grpo_step, torch.get_num_threads()


def _repeated(fn, reps):
  """`fn` called `reps` times, as one timed call."""
  def call():
    for _ in range(reps):
      fn()
  return call


def run(config, workdir):
  c = config.bench
  model, mconf, _ = model_setup.build_model(config_blocks.model_block(preset=c.preset),
                                            seed=config.seed)
  apply_fn, params = nnx_apply_fn(model)
  tx = optim.adamw(lr=c.lr, total_steps=10**6, schedule="constant", weight_decay=c.weight_decay,
                   clip_norm=1.0)
  sft_batch, rl_batch = _batches(np.random.default_rng(config.seed), c, mconf.vocab_size)
  gcfg = grpo.GRPOConfig(kl_coef=0.01, entropy_coef=0.001, clip_eps=0.2, dual_clip_c=3.0)
  sft_step = sft.make_sft_step(apply_fn, tx, target_window=c.response_len)
  jax_steps = {"sft": (jax.jit(sft_step, donate_argnums=0), sft_batch),
               "grpo": (jax.jit(grpo.make_grpo_step(apply_fn, tx, gcfg), donate_argnums=0),
                        rl_batch)}
  hf_dir = tempfile.mkdtemp()
  models.save_pretrained(model, mconf, hf_dir)
  tokens = c.batch * c.seq_len
  # The output head runs on response_len + 1 positions per row on both sides (see above).
  head = mconf.vocab_size * mconf.hidden_size
  flops = roofline.update_flops(matmul_params=roofline.matmul_params(model, mconf) - head,
                                layers=mconf.num_layers, heads=mconf.num_heads,
                                head_dim=mconf.head_dim, batch=c.batch, seq_len=c.seq_len) \
      + 6 * head * c.batch * (c.response_len + 1)
  limits = roofline.probe(config.roofline)       # before the rounds, on the same machine state
  peak = limits["matmul"]["gflop_s"]
  timer = Rounds(c.rounds, warmup=0)   # the first update of each side (compile) is the warm-up
  table = []
  for i, name in enumerate(("sft", "grpo")):
    *steps, threads = _torch_steps(hf_dir, c, sft_batch, rl_batch)
    torch_step = steps[i]
    step, batch = jax_steps[name]
    batch = jax.tree.map(jnp.asarray, batch)
    holder = {"state": TrainState.create(jax.tree.map(jnp.copy, params), tx)}

    def jax_once():
      holder["state"], m = step(holder["state"], batch)
      return m

    first_jax = float(jax_once()["loss"])        # includes compilation
    first_torch = torch_step()                   # first torch step on the same weights
    jax.block_until_ready(holder["state"])
    t = timer.time({"jax": _repeated(lambda: jax.block_until_ready(jax_once()), c.reps),
                    "torch": _repeated(torch_step, c.reps)}, work=tokens * c.reps)
    cmp = Rounds.compare(t["jax"], t["torch"])
    row = {"update": name, "model": c.preset, "params_M": round(mconf.num_params() / 1e6, 1),
           "batch": f"{c.batch}x{c.seq_len}",
           "jax_tokens_per_s": round(t["jax"]["per_s"]["median"], 1),
           "jax_tokens_per_s_min": round(t["jax"]["per_s"]["min"], 1),
           "jax_tokens_per_s_max": round(t["jax"]["per_s"]["max"], 1),
           "torch_tokens_per_s": round(t["torch"]["per_s"]["median"], 1),
           "torch_tokens_per_s_min": round(t["torch"]["per_s"]["min"], 1),
           "torch_tokens_per_s_max": round(t["torch"]["per_s"]["max"], 1),
           "ratio_jax_over_torch": round(cmp["ratio"], 3),
           "ratio_min": round(cmp["ratio_min"], 3), "ratio_max": round(cmp["ratio_max"], 3),
           "first_loss_jax": round(first_jax, 5), "first_loss_torch": round(first_torch, 5),
           "same_first_loss": bool(abs(first_jax - first_torch) <= 1e-3 * max(1.0, abs(first_jax))),
           "GFLOP_per_update": flops / 1e9}
    for side in ("jax", "torch"):   # model FLOPs x median updates/s, and its share of the peak
      gflop_s = flops * t[side]["per_s"]["median"] / tokens / 1e9
      row[f"{side}_GFLOP_s"] = gflop_s
      row[f"{side}_mfu"] = gflop_s / peak
    table.append(row)
    print(f"[bench_train] {name}: jax {row['jax_tokens_per_s']} tok/s, torch "
          f"{row['torch_tokens_per_s']} tok/s, ratio {row['ratio_jax_over_torch']}x "
          f"[{row['ratio_min']}-{row['ratio_max']}] (first loss {first_jax:.5f} vs "
          f"{first_torch:.5f}); MFU jax {row['jax_mfu']:.1%}, torch {row['torch_mfu']:.1%} of "
          f"{peak:.1f} GFLOP/s", flush=True)
    logging.info("bench_train %s: %s", name, row)
  machine = timer.machine()
  summary = {"devices": str(jax.devices()[0].platform), "torch_threads": threads,
             "ratios": {r["update"]: timer.headline(r["ratio_jax_over_torch"]) for r in table},
             "mfu": {r["update"]: timer.headline(r["jax_mfu"]) for r in table},
             "roofline": limits,
             "noisy": machine["noisy"], "machine": machine,
             # per timed call: `reps` updates of B rows, each T - n prompt + n response tokens
             "tokens": {**token_accounting(c.reps * c.batch * (c.seq_len - c.response_len),
                                           c.reps * c.batch * c.response_len, "prompt+response"),
                        "updates_per_call": c.reps, "tokens_per_update": tokens}}
  print(timer.note(), flush=True)
  write_summary(workdir, summary, table, title="Training-update throughput vs PyTorch",
                notes=f"{c.preset} ({table[0]['params_M']}M params), batch {c.batch}x{c.seq_len}, "
                      f"AdamW + clip 1.0, median of {c.rounds} alternating rounds of {c.reps} "
                      f"updates; baseline: transformers Qwen3ForCausalLM + torch.optim.AdamW "
                      f"({threads} threads). tokens/s counts all B x T tokens (prompt + "
                      f"response) on both sides; both run the output head on the last "
                      f"{c.response_len + 1} positions only (transformers: logits_to_keep). "
                      f"Ratio > 1 means ours is faster. " + timer.note()
                      + "\n\n" + roofline.note(limits) + " GFLOP_per_update: model FLOPs of one "
                      "update, 6 N B T + causal attention 6 L H D B T^2 (N: matmul weights, the "
                      "untied input embedding and the output head left out) + the head's 6 V d B "
                      "(response_len + 1); *_GFLOP_s = that x median updates/s; "
                      "*_mfu = *_GFLOP_s / the probed float32 matmul peak.")
  shutil.rmtree(hf_dir, ignore_errors=True)
  return summary
