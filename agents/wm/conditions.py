"""The audit's training conditions as data: each names a trainer, a target source and a reward.

    BASE       no training (the untrained reference)
    GRPO-GT    GRPO, reward 1[cos(embed(prediction), embed(true next obs)) > 0.8]
    GRPO-MIS   GRPO, the same reward against a mismatched next obs (text-level derangement)
    GRPO-COIN  GRPO, independent Bernoulli(0.5) reward (no target, no response)
    GT-PERM    GRPO-GT with scores shuffled inside each group before the advantages
    MIS-PERM   GRPO-MIS with scores shuffled inside each group
    OPSD-GT    on-policy self-distillation, teacher sees the true next obs
    OPSD-MIS   on-policy self-distillation, teacher sees a mismatched next obs

Everything else (prompts, samples, optimizer, sampling, steps) is shared: the experiment reads
only `Condition` fields to decide what differs, so the conditions cannot drift apart silently.
"""
import dataclasses
from typing import Callable, Sequence

import jax
import numpy as np

from lib import rewards


@dataclasses.dataclass(frozen=True)
class Condition:
  name: str
  trainer: str | None        # "grpo" | "opsd" | None (BASE: no training)
  target: str | None         # "gt" | "mis" | None (COIN and BASE use no target)
  reward: str | None         # "embedding" | "coin" | None (OPSD is supervised by its teacher)
  permute: bool = False      # *-PERM: shuffle scores within each group


CONDITIONS: dict[str, Condition] = {c.name: c for c in (
    Condition("BASE", None, None, None),
    Condition("GRPO-GT", "grpo", "gt", "embedding"),
    Condition("GRPO-MIS", "grpo", "mis", "embedding"),
    Condition("GRPO-COIN", "grpo", None, "coin"),
    Condition("GT-PERM", "grpo", "gt", "embedding", permute=True),
    Condition("MIS-PERM", "grpo", "mis", "embedding", permute=True),
    Condition("OPSD-GT", "opsd", "gt", None),
    Condition("OPSD-MIS", "opsd", "mis", None),
)}


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
  whose targets are `targets` (B of them), as `lib.grpo.GRPOTrainer.iteration` takes it.

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
