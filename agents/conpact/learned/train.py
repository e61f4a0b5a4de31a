"""Base planner / actor training: SFT of one role's rows through the one SFT loop, HF export.

A role's model is the study's `model` block (`lib.models.model_setup`): from scratch, a tiny Qwen3
whose vocabulary is the BPE trained on the study's rows; with `model.checkpoint`, a local Hugging
Face model and its own tokenizer (paper scale, same path). Rows are rendered exactly as the Flax
backend prompts at decode time: the tokenizer's chat template with the assistant opener, then
target + EOS (`lib.sft.chat_rows.encode_rows`); the loss falls on the target and EOS only.
Batches are drawn by `lib.sft.batches.length_grouped_batches` (Sokoban prompts are ~3x longer than
BabyAI ones; one compiled shape per length bucket, `train.bucket` tokens wide, 0 = powers of two),
left-padded so that the output head runs on the answer window only (targets are ~20-60 tokens after
~250 prompt tokens: `make_sft_step(target_window=)`, the same loss and gradient). The loop is
`lib.sft.loop.train` (resumable from <workdir>/ckpt; `start_fresh` discards checkpoints); the kept
model is the final step, exported with its tokenizer to <workdir>/export.
"""
import os

import jax
import numpy as np
from flax import nnx

from lib import models
from lib.models import model_setup
from lib.sft import batches as sft_batches, chat_rows, loop as sft_loop
from lib.train import optim
from lib.train.state import TrainState, nnx_apply_fn


def train_role(rows: list[dict], tokenizer, model_cfg, train_cfg, workdir: str, seed: int,
               tag: str, start_fresh: bool = False) -> dict:
  """SFT of one role on its rows; exports <workdir>/export (weights + tokenizer).

  Args:
    rows: the role's {"messages", "target"} rows.
    tokenizer: the study's tokenizer (a checkpoint's own one when model_cfg.checkpoint is set).
    model_cfg: the `model` block.
    train_cfg: steps (or epochs > 0), batch, bucket, lr, warmup_frac, weight_decay, clip_norm,
      max_len, log_every, ckpt_every.
    workdir: checkpoints (<workdir>/ckpt) and the export.
    seed: initialisation and data-order seed (planner and actor use different ones).
    tag: TensorBoard tag prefix.
    start_fresh: discard existing checkpoints.
  Returns:
    report: export, rows, dropped (too long), steps, epochs, batch, target_tokens (sum over rows),
    train_tokens, loss_first, loss_last, wall_s, cpu_s, params.
  """
  c = train_cfg
  model, mcfg, tok = model_setup.build_model(model_cfg, seed=seed, tokenizer=tokenizer)
  examples = chat_rows.encode_rows(tok, [(r["messages"], r["target"]) for r in rows], c.max_len)
  dropped = len(rows) - len(examples)
  if not examples:
    raise ValueError(f"{tag}: no rows fit max_len={c.max_len} ({dropped} dropped)")
  # `epochs` > 0 sizes the run by passes over the role's rows (the planner has ~7x fewer rows
  # than the actor), else `steps`
  steps = (-(-int(c.epochs * len(examples)) // c.batch) if c.epochs else c.steps)
  tx = optim.adamw(lr=c.lr, total_steps=steps, warmup_frac=c.warmup_frac,
                   weight_decay=c.weight_decay, clip_norm=c.clip_norm)
  apply_fn, params = nnx_apply_fn(model, compute_dtype=model_setup.compute_dtype(model_cfg))
  window = -(-max(len(t) for _, t in examples) // 8) * 8   # every target fits the window
  batches = sft_batches.length_grouped_batches(examples, c.batch, seed,
                                               multiple=c.bucket, left_pad=True)
  run = sft_loop.train(apply_fn, TrainState.create(params, tx), tx, batches, steps, workdir,
                       sft_loop.SFTConfig(target_window=window, log_every=c.log_every,
                                          ckpt_every=c.ckpt_every, max_to_keep=2,
                                          prefix=f"{tag}/", start_fresh=start_fresh))
  nnx.update(model, run.state.params)
  export = os.path.join(workdir, "export")
  models.save_pretrained(model, mcfg, export, tokenizer=tok)
  losses = [loss for _, loss in run.history]
  return {"export": export, "rows": len(examples), "dropped": dropped, "steps": steps,
          "epochs": round(steps * c.batch / len(examples), 2),
          "batch": c.batch, "target_tokens": int(sum(len(t) for _, t in examples)),
          "train_tokens": int(run.train_tokens),
          "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None,
          "wall_s": round(run.wall_s, 1), "cpu_s": round(run.cpu_s, 1),
          "params": int(sum(np.size(x) for x in jax.tree.leaves(run.state.params)))}
