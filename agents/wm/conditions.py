"""The training targets and rewards of the audit's conditions (agents/wm/condition_table.py).

`get(name)` looks a condition up; `training_targets` gives each sample's target text (true or
mismatched next observation) and `make_reward_fn` the GRPO reward of a batch.
"""
from typing import Callable, Sequence

import jax
import numpy as np

from agents.wm import rewards
from agents.wm.condition_table import CONDITIONS, Condition


def get(name: str) -> Condition:
  if name not in CONDITIONS:
    raise KeyError(f"unknown condition {name!r}; valid: {', '.join(CONDITIONS)}")
  return CONDITIONS[name]


def training_targets(next_obs: Sequence[str], condition: Condition, mis_seed: int) -> list[str]:
  """Per-sample target texts: the true next observations (GT), a derangement of them over the
  whole training set (MIS: every sample gets another sample's real observation), or the true
  ones for conditions that use no target (they are never read)."""
  if condition.target == "mis":
    return rewards.mismatched_targets(list(next_obs), seed=mis_seed)
  return list(next_obs)


def make_reward_fn(condition: Condition, targets: Sequence[str], decode: Callable,
                   embedder: Callable | None, group_size: int, key: jax.Array,
                   threshold: float = 0.8, coin_p: float = 0.5) -> Callable:
  """reward_fn(tokens [B*G, N], lengths [B*G]) -> scores [B, G] for one batch of B prompts
  whose targets are `targets` (B of them), as `lib.rl.grpo.GRPOTrainer.iteration` takes it.

  decode(tokens_row, length) -> response text. COIN never decodes nor reads the targets: its
  scores depend on `key` only. PERM is not applied here (the trainer shuffles the scores).
  """
  b = len(targets)
  if condition.reward == "coin":
    return lambda tokens, lengths: np.asarray(
        rewards.coin_reward(key, (b, group_size), coin_p))
  if condition.reward != "embedding":
    raise ValueError(f"condition {condition.name} has no GRPO reward")
  if embedder is None:
    raise ValueError(f"condition {condition.name} needs an embedder")
  repeated = [t for t in targets for _ in range(group_size)]

  def reward_fn(tokens, lengths):
    texts = [decode(tokens[i], int(lengths[i])) for i in range(len(tokens))]
    scores = rewards.embedding_similarity_reward(texts, repeated, embedder, threshold)
    return scores.reshape(b, group_size)

  return reward_fn
