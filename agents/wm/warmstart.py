"""SFT warm start of a tiny CPU-scale policy, and the check that it yields a usable GRPO signal.

A randomly initialised tiny model never closes <next_state> within a short output budget, so the
GT/MIS embedding rewards are all zero and the OPSD target span is empty: only COIN would move the
weights. The warm start teaches the output contract on short replies:

  world model   <think>{action}</think><next_state>{true next observation}</next_state>
  agent         <think>{action}</think><action>{action}</action>     (expert steps, no-list
                and, where the step recorded the env's admissible actions, list regime)

and keeps only transitions whose whole reply fits the RL output budget (`fits`), so a sampled
reply can close its tag. `rollout_check` then samples GRPO groups from the warm-started model with
the trainer's own sampler and reward and reports what GRPO would see: the fraction of well-formed
replies, the GT reward mean/std and the fraction of groups whose rewards differ (non-zero
advantage). A degenerate warm start (reward all 0 or all 1) shows up there before training.
The SFT itself is the one loop, `lib.sft.loop.train`, on length-grouped batches.

    rows = sft_rows(samples, trajs, history_window)
    kept = [s for s in samples if fits(tok, s, max_output_tokens)]
    params, losses = sft(model, chat_rows.encode_rows(tok, rows, max_len), c, optim_c, seed,
                         workdir)
    stats = rollout_check(model, tok, kept, ...)
"""
from typing import Any, Sequence

import jax
import numpy as np

from agents.wm import conditions, data, policy
from agents.wm.prompts import agent_prompt
from agents.wm.rewards import extract_next_state
from agents.wm.trajectory import Trajectory
from lib.rl import grpo
from lib.sft import batches as sft_batches, loop as sft_loop
from lib.train import optim
from lib.train.state import TrainState, nnx_apply_fn


def world_model_reply(s: data.WMSample) -> str:
  # A short think span: the budget goes to the prediction, and the tag must close within it.
  return f"<think>{s.action}</think><next_state>{s.next_obs}</next_state>"


def agent_reply(action: str) -> str:
  return f"<think>{action}</think><action>{action}</action>"


def fits(tok, s: data.WMSample, max_output_tokens: int) -> bool:
  """True when the whole world-model reply plus EOS fits the output budget."""
  return len(tok.encode(world_model_reply(s), add_special_tokens=False)) + 1 <= max_output_tokens


def sft_rows(samples: Sequence[data.WMSample], trajs: Sequence[Trajectory],
             history_window: int, teacher_view: bool = False,
             drop_repeats: bool = False) -> list[tuple[list[dict], str]]:
  """(messages, reply) pairs: world-model replies and expert agent replies, in the no-list
  regime and, for steps that recorded the env's admissible actions, the list regime too.

  teacher_view adds each world-model row once more under the OPSD teacher's prompt (the true
  next observation appended as privileged information). A large model reads such context
  unprompted; a tiny one has never seen that prompt, and an out-of-distribution teacher drags
  the student away from the output contract instead of towards the privileged content.

  drop_repeats keeps one agent row per run of a repeated (observation, action) step: a noisy
  expert that has lost its plan issues "look" until the step limit (39% of the study's agent
  steps were "look"), and a warm start on those rows answers "look" everywhere.
  """
  rows = [(data.prompt_messages(s), world_model_reply(s)) for s in samples]
  if teacher_view:
    rows += [(data.teacher_messages(s), world_model_reply(s)) for s in samples]
  for traj in trajs:
    hist = []
    for t, step in enumerate(traj.steps):
      repeat = t > 0 and (step.obs, step.action) == (traj.steps[t - 1].obs,
                                                     traj.steps[t - 1].action)
      if step.action is not None and not (drop_repeats and repeat):
        window = hist[-history_window:] if history_window else []
        for admissible in (None, step.admissible) if step.admissible else (None,):
          prompt = agent_prompt(traj.env, traj.task, window, step.obs, t, admissible)
          rows.append(([{"role": "user", "content": prompt}], agent_reply(step.action)))
      hist.append((step.obs, step.action))
  return rows


def sft_steps(c: Any, n_rows: int) -> int:
  """Optimizer steps of the warm start: `epochs` passes over the rows when set (> 0), else
  `steps`. Sizing by epochs keeps the passes fixed when the data grows."""
  return -(-int(c.epochs * n_rows) // c.batch) if c.epochs else int(c.steps)


def sft(model, encoded, c: Any, optim_c: Any, seed: int, workdir: str) -> tuple[Any, list]:
  """SFT on `encoded` rows through the one SFT loop (`lib.sft.loop.train`): batches drawn with
  replacement from one length bucket at a time (`lib.sft.batches.length_grouped_batches`, seeded
  by (seed, step), `bucket`-token buckets), left-padded so every target lies in the last
  `target_window` columns and the output head runs on that window only (the same loss and
  gradient as the full head, `lib.sft.step.make_sft_step`); resumable from <workdir>/sft_ckpt.

  Args:
    model: the policy (its params are the starting point; the caller exports the result).
    encoded: (prompt ids, target ids + EOS) rows from `lib.sft.chat_rows.encode_rows`.
    c: the `sft` block (steps or epochs, batch, bucket, log_every, ckpt_every).
    optim_c: the optimizer block (`lib.train.optim.from_config`).
    seed: data seed.
    workdir: run directory.
  Returns:
    (final params, per-step losses of this session).
  """
  if not encoded:
    raise ValueError("no SFT row fits max_len")
  steps = sft_steps(c, len(encoded))
  tx = optim.from_config(optim_c, steps)
  apply_fn, params = nnx_apply_fn(model)
  window = -(-max(len(t) for _, t in encoded) // 8) * 8     # every target fits the window
  batches = sft_batches.length_grouped_batches(encoded, c.batch, seed,
                                               multiple=c.bucket, left_pad=True)
  run = sft_loop.train(apply_fn, TrainState.create(params, tx), tx, batches, steps, workdir,
                       sft_loop.SFTConfig(target_window=window, log_every=c.log_every,
                                          ckpt_every=c.ckpt_every, ckpt_subdir="sft_ckpt",
                                          max_to_keep=1, prefix="sft/"))
  return run.state.params, run.losses


def rollout_check(model, tok, samples: Sequence[data.WMSample], *, prompts: int, group_size: int,
                  max_output_tokens: int, embedder, threshold: float, seed: int,
                  temperature: float = 1.0) -> dict:
  """GRPO-GT's view of `model` on the first `prompts` samples: one group of `group_size` replies
  each, sampled and scored exactly as agents/wm/train.py does."""
  sel = list(samples[:prompts])
  if not sel:
    raise ValueError("no samples to check")
  _, params = nnx_apply_fn(model)
  sample_fn = grpo.nnx_sample_fn(model, max_new_tokens=max_output_tokens,
                                 temperature=temperature, eos_ids=policy.eos_ids(tok, model),
                                 pad_id=tok.pad_token_id or 0)
  ids, mask = policy.pad_left([policy.encode_chat(tok, data.prompt_messages(s)) for s in sel],
                              tok.pad_token_id)
  ids, mask = np.repeat(ids, group_size, 0), np.repeat(mask, group_size, 0)
  key = jax.random.key(seed)
  tokens, lengths = (np.asarray(x) for x in sample_fn(params, ids, mask, key))
  decode = lambda row, n: policy.decode(tok, row, n)
  gt = conditions.get("GRPO-GT")
  reward_fn = conditions.make_reward_fn(gt, [s.next_obs for s in sel], decode, embedder,
                                        group_size, jax.random.fold_in(key, 1), threshold)
  scores = np.asarray(reward_fn(tokens, lengths))
  texts = [decode(tokens[i], int(lengths[i])) for i in range(len(tokens))]
  return {"prompts": len(sel), "group_size": group_size,
          "well_formed": float(np.mean([extract_next_state(t) is not None for t in texts])),
          "reward_mean": float(scores.mean()), "reward_std": float(scores.std()),
          "nonzero_adv_group_frac": float(np.mean(scores.std(axis=1) > 0)),
          "response_len_mean": float(lengths.mean()), "example": texts[0]}
