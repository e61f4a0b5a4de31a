"""GRPO on a toy verifiable task with a tiny Qwen3: lib/rl/grpo.py end to end (sampler, rewards,
group advantages, clipped updates, KL to the frozen initial model) in the RL loop of lib/rl/loop.py
(checkpoint/resume, TensorBoard).

Rewards (config.reward.kind):
  first_token  1 when the first generated token equals config.reward.target_id (verifiable, "GT")
  coin         independent Bernoulli(p) rewards (the audit's COIN control)
config.grpo.permute_scores=True shuffles the scores within each group (the *-PERM controls). The
audit's text rewards (agents.wm.rewards.embedding_similarity_reward with GT or mismatched targets)
plug in as a reward_fn over decoded responses.
"""
import jax
import numpy as np

from agents.wm import rewards
from lib.rl import grpo, loop as rl_loop
from lib.run.results import write_summary
from lib.train import optim, setup as train_loop


def make_reward_fn(c, group_size: int, key: jax.Array):
  """reward_fn(tokens, lengths) -> [B, G]; `key` (per iteration) drives the COIN draws, so a
  resumed run draws the same coins as an uninterrupted one."""
  if c.kind == "first_token":
    return lambda tokens, lengths: (tokens[:, 0] == c.target_id).astype(np.float32).reshape(
        -1, group_size)
  if c.kind == "coin":
    return lambda tokens, lengths: np.asarray(rewards.coin_reward(
        key, (len(tokens) // group_size, group_size), c.p))
  raise ValueError(f"unknown reward kind {c.kind!r}; valid: first_token, coin")


def prompts(seed: int, it: int, rows: int, length: int, vocab: int):
  ids = np.random.default_rng([seed, it]).integers(10, vocab, (rows, length)).astype(np.int32)
  return ids, np.ones_like(ids)


def run(config, workdir):
  c = config.train
  key = jax.random.key(config.seed)
  tx = optim.from_config(config.optim, c.iterations)
  model, apply_fn, state, mesh, state_sh = train_loop.setup(config, tx,
                                                           jax.random.fold_in(key, 0))
  vocab = model.config.vocab_size
  cfg = grpo.GRPOConfig.from_config(config.grpo)
  sample_fn = grpo.nnx_sample_fn(model, max_new_tokens=c.max_new_tokens,
                                 temperature=cfg.temperature)
  step_fn = grpo.GRPOTrainer.mesh_step_fn(apply_fn, tx, cfg, c.prompts, mesh, state_sh)

  def make_trainer(state, initial_params):   # the KL reference is the initial model
    return grpo.GRPOTrainer(apply_fn, sample_fn, state, tx, cfg, ref_params=initial_params,
                            step_fn=step_fn)

  def iterate(trainer, it):
    ids, mask = prompts(config.seed, it, c.prompts, c.prompt_len, vocab)
    reward_fn = make_reward_fn(config.reward, cfg.group_size,
                               jax.random.fold_in(jax.random.fold_in(key, 2), it))
    return trainer.iteration(ids, mask, reward_fn,
                             jax.random.fold_in(jax.random.fold_in(key, 1), it))

  settings = rl_loop.RLLoopConfig(log_every=c.log_every, ckpt_every=c.ckpt_every,
                                  prefix="grpo/", start_fresh=train_loop.fresh_start(config))
  trained = rl_loop.train(state, make_trainer, iterate, c.iterations, workdir, settings,
                          record=lambda m: m["reward_mean"])
  # the mean rewards of every iteration since 0, earlier sessions' included (checkpoint metadata)
  history, tokens_seen = trained.records, trained.tokens_seen
  k = max(1, len(history) // 5)
  summary = {"iterations": c.iterations, "reward": config.reward.kind,
             "permute_scores": cfg.permute_scores, "tokens_seen": tokens_seen,
             "reward_first": float(np.mean(history[:k])) if history else None,
             "reward_last": float(np.mean(history[-k:])) if history else None}
  write_summary(workdir, summary, [summary], title="GRPO (toy first-token task)",
                notes=f"Mean reward over the first / last {k} iterations: "
                      f"{summary['reward_first']} -> {summary['reward_last']}.")
  return summary
