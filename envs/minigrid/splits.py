"""Evaluation instances of the ConPAct MiniGrid/BabyAI split (paper Table 6).

Each task has five instances, seeds 1000 + offset for offset 0..4, and one common limit on
executed actions and on model calls per rollout (envs/minigrid/limits.py). The paper's levels are Farama's levels at
those seeds, so `instance(..., source="farama")` (default) builds the level with Farama
`minigrid` and converts it with `from_minigrid`; `source="jax"` draws our generator's level
for `jax.random.key(seed)` instead (same distribution, different levels).
"""
import contextlib
import io

import jax

from envs.minigrid import tasks
from envs.minigrid.convert import from_minigrid
from envs.minigrid.env import BabyAIEnv, EnvParams
from envs.minigrid.core import State
from envs.minigrid.limits import LIMITS

SEED_BASE = 1000
OFFSETS = (0, 1, 2, 3, 4)
assert set(LIMITS) == set(tasks.TASKS)


def eval_instances() -> list[dict]:
  """All 30 instances: {task, offset, seed, action_limit, call_limit}, in a fixed order."""
  return [{"task": task, "offset": off, "seed": SEED_BASE + off, "action_limit": limit,
           "call_limit": limit} for task, limit in sorted(LIMITS.items()) for off in OFFSETS]


def instance(task: str, seed: int, source: str = "farama") -> tuple[State, EnvParams]:
  """The level of `task` at `seed` as (state, params)."""
  if task not in LIMITS:
    raise KeyError(f"unknown task {task!r}; valid: {', '.join(sorted(LIMITS))}")
  if source == "farama":
    # Farama's gymnasium/minigrid are the optional `envs` extra, needed only for Farama's levels
    import gymnasium as gym
    import minigrid  # noqa: F401  (registers the BabyAI ids)
    env = gym.make(task)
    # the level generator prints a line per rejected sample to stdout; keep run logs readable
    with contextlib.redirect_stdout(io.StringIO()):
      env.reset(seed=seed)
    return from_minigrid(env)
  if source == "jax":
    env = BabyAIEnv(task)
    return env.generator(jax.random.key(seed)), env.default_params
  raise ValueError(f"unknown source {source!r}; valid: farama, jax")
