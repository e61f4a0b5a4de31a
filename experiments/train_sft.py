"""SFT on a synthetic copy task with a tiny Qwen3: exercises lib/sft.py end to end (jit, optional
mesh, accumulation, checkpoint/resume, TensorBoard, train-token budget).

Task: "<bos> p_1..p_k <sep> p_1 p_1 <eos>", loss on the target (p_1 p_1 <eos>) only. A run that
works drives the held-out target loss from ~log(V) towards 0. Real data sets plug in by replacing
`copy_task_batch` with rows of the same three arrays (see lib/sft.py).
"""
import time

import jax
import numpy as np
from absl import logging

from lib import optim, sft, sharding, train_loop
from lib.results import write_summary

BOS, SEP, EOS = 1, 2, 3


def copy_task_batch(rng: np.random.Generator, rows: int, length: int, vocab: int) -> dict:
  ids = np.zeros((rows, length), np.int32)
  attn = np.zeros((rows, length), np.int32)
  loss = np.zeros((rows, length), np.int32)
  for i in range(rows):
    prompt = rng.integers(10, vocab, rng.integers(3, length - 5))
    row = np.concatenate([[BOS], prompt, [SEP, prompt[0], prompt[0], EOS]])
    ids[i, :len(row)], attn[i, :len(row)] = row, 1
    loss[i, len(row) - 3:len(row)] = 1
  return {"input_ids": ids, "attention_mask": attn, "loss_mask": loss}


def run(config, workdir):
  c = config.train
  key = jax.random.key(config.seed)
  tx = optim.from_config(config.optim, c.steps)
  model, apply_fn, state, mesh, state_sh = train_loop.setup(config, tx, jax.random.fold_in(key, 0))
  vocab = model.config.vocab_size
  step_fn = sft.make_sft_step(apply_fn, tx, accum_steps=c.accum_steps)
  step = (jax.jit(step_fn, donate_argnums=0) if mesh is None
          else sharding.jit_step(step_fn, mesh, state_sh))
  evaluate = jax.jit(sft.make_sft_eval(apply_fn))
  held_out = copy_task_batch(np.random.default_rng([config.seed, 10**6]), c.eval_rows, c.seq_len,
                             vocab)
  ckpt, state, start, meta = train_loop.resume(workdir, state)
  tokens_seen = int(meta.get("tokens_seen", 0))
  first_eval = meta.get("first_eval_loss") or float(evaluate(state.params, held_out))
  t0, tok0 = time.perf_counter(), tokens_seen
  for it in range(start, c.steps):
    # Data for step `it` depends only on (seed, it), so a resumed run sees the same stream.
    batch = copy_task_batch(np.random.default_rng([config.seed, it]), c.batch, c.seq_len, vocab)
    if mesh is not None:
      batch = sharding.shard_batch(batch, mesh)
    state, m = step(state, batch)
    tokens_seen += int(m["train_tokens"])
    if (it + 1) % c.log_every == 0 or it + 1 == c.steps:
      dt = time.perf_counter() - t0
      metrics = {k: float(v) for k, v in m.items()}
      metrics.update(tokens_seen=tokens_seen, tokens_per_s=(tokens_seen - tok0) / dt,
                     lr=float(optim.lr_schedule(config.optim.lr, c.steps,
                                                config.optim.warmup_frac,
                                                config.optim.schedule)(it)))
      if (it + 1) % c.eval_every == 0 or it + 1 == c.steps:
        metrics["eval_loss"] = float(evaluate(state.params, held_out))
      train_loop.log_scalars(workdir, it + 1, metrics, "sft/")
      logging.info("sft step %d: %s", it + 1, {k: round(v, 4) for k, v in metrics.items()})
      t0, tok0 = time.perf_counter(), tokens_seen
    if (it + 1) % c.ckpt_every == 0 or it + 1 == c.steps:
      ckpt.save(it + 1, state, metadata={"tokens_seen": tokens_seen,
                                         "first_eval_loss": first_eval})
  final = float(evaluate(state.params, held_out))
  summary = {"steps": c.steps, "tokens_seen": tokens_seen, "eval_loss_start": first_eval,
             "eval_loss_end": final}
  write_summary(workdir, summary, [summary], title="SFT (synthetic copy task)",
                notes=f"Held-out target loss {first_eval:.3f} -> {final:.3f} over {c.steps} "
                      f"steps, {tokens_seen} train tokens (prompt + target + EOS).")
  return summary
