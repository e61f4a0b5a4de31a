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
Standard library only, so `configs/wm/*.py` read the table without JAX; the targets and rewards
each condition trains on are built in agents/wm/conditions.py.
"""
import dataclasses


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
