"""Sokoban, MiniGrid/BabyAI and Crafter as host-loop text envs for the ConPAct agents.

Every env here returns the rendered text as the observation and `info["state_facts"]` (ground truth
for assertion scoring and for the state-injection condition) plus `info["success"]`. A `Task`
bundles what an agent needs to know about an env: its schema name, action names, how an action
name maps to the env's action, and the instance list with per-instance budgets.

Sokoban instances are the evaluation/source levels of `envs.splits` (reset seed = level index);
MiniGrid instances follow the paper's Table 6 (seed = 1000 + offset, per-task A = C); Crafter
instances are world seeds of `envs.splits`.
"""
import dataclasses
import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from envs import splits
from envs.sokoban import env as sokoban_env
from envs.sokoban import text as sokoban_text
from lib.llm.agent import JaxEnvAdapter

# Paper Table 6: BabyAI task -> common action and model-call limit per rollout.
MINIGRID_BUDGETS = {"BabyAI-BlockedUnlockPickup-v0": 136, "BabyAI-GoTo-v0": 200,
                    "BabyAI-GoToDoor-v0": 84, "BabyAI-GoToLocal-v0": 60,
                    "BabyAI-GoToObj-v0": 60, "BabyAI-GoToRedBall-v0": 60}
MINIGRID_SEED_BASE = 1000


@dataclasses.dataclass(frozen=True)
class Instance:
  instance_id: str
  env_seed: int
  actions: int  # A
  calls: int  # C
  make_env: Callable[[], Any]


@dataclasses.dataclass(frozen=True)
class Task:
  env: str  # schema name: sokoban | minigrid | crafter
  action_names: tuple[str, ...]
  instruction: str
  to_env_action: Callable[[str], Any]
  fallback: str  # action taken when a reply names none (counted as a parse failure)


# ---- Sokoban --------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4)
def _sokoban_step(max_steps: int):
  """The env's jitted step rule, compiled once per process (levels are given per instance)."""
  params = sokoban_env.SokobanParams(levels=jnp.zeros((1, 1, 1), jnp.int8),
                                     max_steps_in_episode=max_steps)
  rules = sokoban_env.Sokoban.__new__(sokoban_env.Sokoban)  # step_env reads no level bank
  rules.max_steps_in_episode = max_steps
  return jax.jit(lambda s, a: rules.step_env(None, s, a, params))


class SokobanText:
  """One Sokoban board from a level bank; `reset(seed)` starts level `seed` of the bank."""

  def __init__(self, levels: np.ndarray, max_steps: int = 120):
    self.levels = np.asarray(levels, np.int8)
    self.max_steps = max_steps
    self._step = _sokoban_step(max_steps)
    self.state = None

  def reset(self, seed: int):
    self.state = sokoban_env.state_from_level(jnp.asarray(self.levels[int(seed)]), int(seed))
    return sokoban_text.render_text(self.state), self._info()

  def step(self, action: int):
    _, self.state, reward, terminated, _ = self._step(self.state, jnp.int32(action))
    truncated = int(self.state.time) >= self.max_steps and not bool(terminated)
    return (sokoban_text.render_text(self.state), float(reward), bool(terminated), truncated,
            self._info())

  def _info(self) -> dict:
    facts = sokoban_text.state_facts(self.state)
    return {"state_facts": facts, "success": facts["solved"]}


SOKOBAN_TASK = Task(
    "sokoban", tuple(sokoban_env.ACTION_NAMES),
    "Push every box ($) onto a target (.). You move one cell per action; walking into a box pushes "
    "it one cell if the cell behind it is free. Boxes cannot be pulled.",
    lambda name: sokoban_env.ACTION_NAMES.index(name), "up")


def sokoban_instances(split: str = "evaluation", n: int | None = None) -> list[Instance]:
  ins = splits.sokoban_instances(split)
  b = ins.budget
  levels = ins.levels
  make = lambda: SokobanText(levels)
  return [Instance(ins.ids[i], i, b.actions, b.calls, make) for i in range(n or len(ins.ids))]


# ---- MiniGrid / BabyAI ----------------------------------------------------------------------

@functools.lru_cache(maxsize=8)
def _babyai(task_id: str):
  from envs.minigrid import env as minigrid_env  # pylint: disable=import-outside-toplevel
  return minigrid_env.BabyAIEnv(task_id)


class MiniGridText:
  """A BabyAI task behind the text view; `reset(seed)` draws the level from PRNGKey(seed)."""

  def __init__(self, task_id: str):
    self.adapter = JaxEnvAdapter(_babyai(task_id))

  def reset(self, seed: int):
    self.adapter.reset(seed)
    return self._view(), self._info(False)

  def step(self, action: int):
    _, reward, terminated, truncated, info = self.adapter.step(action)
    return self._view(), reward, terminated, truncated, self._info(bool(np.asarray(info["success"])))

  def _view(self) -> str:
    from envs.minigrid import text as minigrid_text  # pylint: disable=import-outside-toplevel
    return minigrid_text.render_text(self.adapter.state)

  def _info(self, success: bool) -> dict:
    from envs.minigrid import text as minigrid_text  # pylint: disable=import-outside-toplevel
    return {"state_facts": minigrid_text.state_facts(self.adapter.state), "success": success}


def _minigrid_action(name: str) -> int:
  from envs.minigrid import text as minigrid_text  # pylint: disable=import-outside-toplevel
  return minigrid_text.action_id(name)


MINIGRID_TASK = Task(
    "minigrid", ("turn left", "turn right", "go forward", "pick up", "drop", "toggle", "done"),
    "Complete the mission in the grid world. 'go to X' succeeds when X is directly in front of you; "
    "'pick up X' needs X in front of you and empty hands. Turning changes only your heading.",
    _minigrid_action, "turn left")


def minigrid_instances(tasks=tuple(MINIGRID_BUDGETS), per_task: int = 5) -> list[Instance]:
  out = []
  for task_id in tasks:
    budget = MINIGRID_BUDGETS[task_id]
    for offset in range(per_task):
      out.append(Instance(f"{task_id}/{offset}", MINIGRID_SEED_BASE + offset, budget, budget,
                          functools.partial(MiniGridText, task_id)))
  return out


# ---- Crafter --------------------------------------------------------------------------------

def _crafter_task() -> Task:
  from envs import crafter_text  # pylint: disable=import-outside-toplevel
  return Task("crafter", tuple(crafter_text.ACTION_NAMES),
              "Survive and unlock as many achievements as possible (collect wood, place a table, "
              "make tools, collect stone, coal, iron, diamond, eat, drink, sleep).", lambda n: n, "noop")


def crafter_instances(split: str = "evaluation", n: int | None = None) -> list[Instance]:
  from envs import crafter_text  # pylint: disable=import-outside-toplevel
  b = splits.BUDGETS["crafter"]
  seeds = splits.crafter_seeds(split)[:n]
  return [Instance(f"crafter-{split}-{s}", s, b.actions, b.calls,
                   lambda: crafter_text.CrafterText(max_steps=10000)) for s in seeds]


def task(env: str) -> Task:
  tasks = {"sokoban": lambda: SOKOBAN_TASK, "minigrid": lambda: MINIGRID_TASK,
           "crafter": _crafter_task}
  if env not in tasks:
    raise KeyError(f"unknown ConPAct env {env!r}; valid: {', '.join(tasks)}")
  return tasks[env]()
