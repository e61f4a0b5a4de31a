"""SFT of a commitment model: a small Qwen3 from scratch (or a local checkpoint), resumable.

Config blocks (all fields required; defaults live in the config files):
  model: checkpoint ("" = build from the fields below), hidden, layers, heads, kv_heads,
         head_dim, mlp
  train: epochs, batch, lr, warmup_frac, weight_decay, clip_norm, log_every, ckpt_every
The optimizer is the paper's recipe (AdamW, cosine with warm-up, grad-norm clip, weight decay),
the loss is target-and-EOS causal LM (`lib.sft`), the kept model is the final step. Checkpoints
(`lib.checkpoint`) carry the loss history, so a resumed run still plots its whole curve.
"""
import os
import time

import jax
import numpy as np
from absl import logging
from flax import nnx

from agents.gencoord.learned import sft_rows
from lib import models, optim, sft, tb
from lib.checkpoint import Checkpointer
from lib.train_state import TrainState, nnx_apply_fn


def build_model(c, tokenizer, seed: int):
  """-> (model, QwenConfig). From scratch the vocabulary is the tokenizer's."""
  if c.checkpoint:
    return models.load_pretrained(c.checkpoint, dtype="float32")
  eos = tokenizer.convert_tokens_to_ids(tokenizer.eos_token)
  config = models.preset("qwen3-tiny", vocab_size=len(tokenizer), hidden_size=c.hidden,
                         intermediate_size=c.mlp, num_layers=c.layers, num_heads=c.heads,
                         num_kv_heads=c.kv_heads, head_dim=c.head_dim,
                         tie_word_embeddings=True, eos_token_ids=(eos,),
                         pad_token_id=tokenizer.pad_token_id, max_position_embeddings=4096)
  return models.build(config, rngs=nnx.Rngs(seed)), config


def train_sft(arrays: dict, tokenizer, config, workdir: str, seed: int, tag: str = "sft"):
  """Trains on `arrays` (see sft_rows.encode_rows); returns (model, model_config, report).

  report: steps, rows, epochs, train_tokens (prompt + target + EOS occurrences), wall_s, cpu_s,
  history [(step, loss)], resumed_from."""
  c = config.train
  model, mcfg = build_model(config.model, tokenizer, seed)
  n = arrays["input_ids"].shape[0]
  spe = sft_rows.steps_per_epoch(n, c.batch)
  total = spe * c.epochs
  tx = optim.adamw(lr=c.lr, total_steps=total, warmup_frac=c.warmup_frac,
                   weight_decay=c.weight_decay, clip_norm=c.clip_norm)
  apply_fn, params = nnx_apply_fn(model)
  state = TrainState.create(params, tx)
  ckpt = Checkpointer(os.path.join(workdir, "ckpt"), max_to_keep=2)
  start, history, tokens, prior_wall, prior_cpu = 0, [], 0, 0.0, 0.0
  if ckpt.latest_step() is not None:
    state, meta = ckpt.restore(template=state)
    start, history, tokens = int(meta["step"]), [tuple(h) for h in meta["history"]], meta["tokens"]
    prior_wall, prior_cpu = meta["wall_s"], meta["cpu_s"]
    logging.info("%s: resumed at step %d of %d", tag, start, total)
  step_fn = jax.jit(sft.make_sft_step(apply_fn, tx, target_window=arrays["target_window"]),
                    donate_argnums=0)
  writer = tb.writer(workdir)
  t0, c0 = time.perf_counter(), time.process_time()
  stamp = lambda: (prior_wall + time.perf_counter() - t0,  # noqa: E731
                   prior_cpu + time.process_time() - c0)
  step = start
  while step < total:
    epoch, skip = divmod(step, spe)
    for k, batch in enumerate(sft_rows.batches(arrays, c.batch, epoch, seed)):
      if k < skip:
        continue
      state, m = step_fn(state, batch)
      step += 1
      tokens += int(batch["attention_mask"].sum())
      if step % c.log_every == 0 or step == total:
        loss = float(m["loss"])
        history.append((step, loss))
        writer.add_scalar(f"{tag}/loss", loss, step)
        writer.add_scalar(f"{tag}/grad_norm", float(m["grad_norm"]), step)
        logging.info("%s step %d/%d loss %.4f", tag, step, total, loss)
      if step % c.ckpt_every == 0 or step == total:
        wall, cpu = stamp()
        ckpt.save(step, state, metadata={"history": history, "tokens": tokens,
                                         "wall_s": wall, "cpu_s": cpu})
  ckpt.close()
  writer.flush()
  nnx.update(model, state.params)
  wall, cpu = stamp()
  report = {"steps": total, "rows": n, "epochs": c.epochs, "batch": c.batch,
            "train_tokens": tokens, "wall_s": wall, "cpu_s": cpu, "history": history,
            "resumed_from": start, "params": int(sum(np.size(x) for x in
                                                     jax.tree.leaves(state.params)))}
  return model, mcfg, report
