"""SFT on a synthetic copy task with a tiny Qwen3: exercises lib/sft/step.py through the one SFT
loop (lib/sft/loop.py: jit, optional mesh, accumulation, checkpoint/resume, TensorBoard, train-token
budget).

Task: "<bos> p_1..p_k <sep> p_1 p_1 <eos>", loss on the target (p_1 p_1 <eos>) only. A run that
works drives the held-out target loss from ~log(V) towards 0. Real data sets plug in by replacing
`copy_task_batch` with rows of the same three arrays (see lib/sft/step.py).
"""
import jax
import numpy as np

from lib.run.results import write_summary
from lib.sft import step as sft, loop as sft_loop
from lib.train import optim, setup as train_loop

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
  evaluate = jax.jit(sft.make_sft_eval(apply_fn, c.loss_chunk_tokens))
  held_out = copy_task_batch(np.random.default_rng([config.seed, 10**6]), c.eval_rows, c.seq_len,
                             vocab)
  # Data for step `it` depends only on (seed, it), so a resumed run sees the same stream.
  batch_at = lambda it: copy_task_batch(np.random.default_rng([config.seed, it]), c.batch,
                                        c.seq_len, vocab)
  settings = sft_loop.SFTConfig(accum_steps=c.accum_steps, log_every=c.log_every,
                                ckpt_every=c.ckpt_every, max_to_keep=3, eval_every=c.eval_every,
                                start_fresh=train_loop.fresh_start(config),
                                loss_chunk_tokens=c.loss_chunk_tokens)
  run_ = sft_loop.train(
      apply_fn, state, tx, batch_at, c.steps, workdir, settings, mesh=mesh,
      state_sharding=state_sh,
      lr_schedule=optim.lr_schedule(config.optim.lr, c.steps, config.optim.warmup_frac,
                                    config.optim.schedule),
      evaluate=lambda params: float(evaluate(params, held_out)))
  first_eval = run_.first_eval_loss
  final = float(evaluate(run_.state.params, held_out))
  tokens_seen = run_.train_tokens
  summary = {"steps": c.steps, "tokens_seen": tokens_seen, "eval_loss_start": first_eval,
             "eval_loss_end": final}
  write_summary(workdir, summary, [summary], title="SFT (synthetic copy task)",
                notes=f"Held-out target loss {first_eval:.3f} -> {final:.3f} over {c.steps} "
                      f"steps, {tokens_seen} train tokens (prompt + target + EOS).")
  return summary
