"""ConPAct's environments: the Task an agent is told about and the instance lists with budgets.

The envs themselves are the family text envs of `envs/` (`envs.sokoban.text.text_env`,
`envs.minigrid.text.text_env`, `envs.crafter.text.CrafterText`): each returns the rendered text as
the observation and `info["state_facts"]` (ground truth for assertion scoring and for the
state-injection condition) plus `info["success"]`. A `Task` bundles what an agent needs to know
about an env: its schema name, action names, how an action name maps to the env's action, and the
instance list with per-instance budgets.

Sokoban instances are the evaluation/source levels of `envs.splits` (reset seed = level index);
MiniGrid instances follow the paper's Table 6 (`envs.minigrid.splits`: seed = 1000 + offset,
per-task A = C, levels drawn by our generator from PRNGKey(seed)); Crafter instances are world
seeds of `envs.splits`; Procgen instances are (game, level id) of `envs.splits.procgen_levels`
(evaluation: levels 100-119 per game, paper Table 5), one ConPAct env per game ("procgen-<game>",
its own schema, paper Table 3).

Success: Sokoban/MiniGrid report it themselves; a Procgen episode succeeds when the game says the
level was completed (`level_complete`); the paper gives Crafter no success criterion (it is scored
by achievements), so here a Crafter episode succeeds when a wood pickaxe is made (the first tool
milestone: wood -> table -> pickaxe), a mechanics goal of ours. Both are set as `info["success"]`
by `SuccessWhen`.
"""
import dataclasses
import functools
from typing import Any, Callable

from envs import splits
from envs.minigrid import splits as minigrid_splits
from envs.minigrid.limits import LIMITS
from envs.minigrid import text as minigrid_text
from envs.sokoban import text as sokoban_text


@dataclasses.dataclass(frozen=True)
class Instance:
  instance_id: str
  env_seed: int
  actions: int  # A
  calls: int  # C
  make_env: Callable[[], Any]


@dataclasses.dataclass(frozen=True)
class Task:
  env: str  # schema name: sokoban | minigrid | crafter | procgen-<game>
  action_names: tuple[str, ...]
  instruction: str
  to_env_action: Callable[[str], Any]
  fallback: str  # action taken when a reply names none (counted as a parse failure)


# ---- Sokoban --------------------------------------------------------------------------------

SOKOBAN_TASK = Task(
    "sokoban", sokoban_text.VIEW.action_names,
    "Push every box ($) onto a target (.). You move one cell per action; walking into a box pushes "
    "it one cell if the cell behind it is free. Boxes cannot be pulled.",
    sokoban_text.VIEW.action_id, "up")


def sokoban_instances(split: str = "evaluation", n: int | None = None) -> list[Instance]:
  """The first `n` (default all) levels of a Sokoban split, with the split's budgets."""
  ins = splits.sokoban_instances(split)
  b = ins.budget
  levels = ins.levels
  make = lambda: sokoban_text.text_env(levels)
  return [Instance(ins.ids[i], i, b.actions, b.calls, make) for i in range(n or len(ins.ids))]


# ---- MiniGrid / BabyAI ----------------------------------------------------------------------

MINIGRID_TASK = Task(
    "minigrid", minigrid_text.VIEW.action_names,
    "Complete the mission in the grid world. 'go to X' succeeds when X is directly in front of you; "
    "'pick up X' needs X in front of you and empty hands. Turning changes only your heading.",
    minigrid_text.VIEW.action_id, "turn left")


# BabyAI source seeds (expert demonstrations, source rollouts); evaluation uses 1000 + offset.
MINIGRID_SOURCE_SEEDS = range(0, 100)
assert not set(MINIGRID_SOURCE_SEEDS) & {minigrid_splits.SEED_BASE + o
                                         for o in minigrid_splits.OFFSETS}


def minigrid_instances(tasks=tuple(LIMITS), per_task: int = 5,
                       split: str = "evaluation") -> list[Instance]:
  """`per_task` instances of each BabyAI task, A = C = the task's limit: evaluation seeds
  1000 + offset (paper Table 6), or with split="source" the first `MINIGRID_SOURCE_SEEDS`
  (instance ids "<task>/source-<seed>")."""
  if split not in ("evaluation", "source"):
    raise ValueError(f"split must be 'evaluation' or 'source', got {split!r}")
  out = []
  for task_id in tasks:
    budget = LIMITS[task_id]
    for offset in range(per_task):
      if split == "evaluation":
        seed, name = minigrid_splits.SEED_BASE + offset, f"{task_id}/{offset}"
      else:
        seed = MINIGRID_SOURCE_SEEDS[offset]
        name = f"{task_id}/source-{seed}"
      out.append(Instance(name, seed, budget, budget,
                          functools.partial(minigrid_text.text_env, task_id)))
  return out


class SuccessWhen:
  """A host-loop env whose `info["success"]` is `done(info)` (reset and every step)."""

  def __init__(self, env, done: Callable[[dict], bool]):
    self.env, self.done = env, done

  def reset(self, seed: int):
    obs, info = self.env.reset(seed)
    return obs, {**info, "success": bool(self.done(info))}

  def step(self, action):
    obs, reward, terminated, truncated, info = self.env.step(action)
    return obs, reward, terminated, truncated, {**info, "success": bool(self.done(info))}


# ---- Procgen --------------------------------------------------------------------------------

PROCGEN_INSTRUCTION = {
    "bigfish": "Eat fish smaller than you and avoid larger ones; you grow as you eat.",
    "chaser": "Collect every orb in the maze; a large orb briefly makes the enemies vulnerable.",
    "coinrun": "Reach the coin at the end of the level; avoid saws, enemies and gaps.",
    "jumper": "Find the carrot; you can jump (up) and double jump; avoid spikes.",
    "maze": "Reach the cheese in the maze.",
    "miner": "Dig through dirt, collect every diamond, then reach the exit; boulders and diamonds "
             "fall when nothing is below them.",
}


def _procgen_game(env: str) -> str:
  game = env.removeprefix("procgen-")
  if game not in PROCGEN_INSTRUCTION:
    raise KeyError(f"unknown Procgen game {game!r}; valid: {', '.join(PROCGEN_INSTRUCTION)}")
  return game


def _procgen_task(env: str) -> Task:
  # procgen is an optional dependency (the `envs` extra): imported only when Procgen is asked for
  from envs.procgen import text as procgen_text  # pylint: disable=import-outside-toplevel
  game = _procgen_game(env)
  return Task(env, procgen_text.MOVE_ACTIONS,
              f"Procgen {game} (easy mode, positions in grid cells, y grows upward). "
              + PROCGEN_INSTRUCTION[game], lambda n: n, "noop")


def _procgen_env(game: str):
  # procgen is an optional dependency (the `envs` extra): imported only when Procgen is asked for
  from envs.procgen import text as procgen_text  # pylint: disable=import-outside-toplevel
  return SuccessWhen(procgen_text.ProcgenText(game), lambda info: info.get("level_complete", False))


def procgen_instances(env: str, split: str = "evaluation", n: int | None = None) -> list[Instance]:
  """The first `n` (default all) levels of one Procgen game ("procgen-<game>") in a split.

  Args:
    env: "procgen-<game>", one of the six games of the paper's Table 5.
    split: "evaluation" (levels 100-119) or "source".
    n: how many levels; None = all of the split.

  Returns:
    Instances (reset seed = level id) with the Procgen budgets A = C = 160.
  """
  game = _procgen_game(env)
  b = splits.BUDGETS["procgen"]
  levels = [lvl for g, lvl in splits.procgen_levels(split) if g == game][:n]
  return [Instance(f"{game}-{lvl}", lvl, b.actions, b.calls,
                   functools.partial(_procgen_env, game)) for lvl in levels]


# ---- Crafter --------------------------------------------------------------------------------

def _crafter_task() -> Task:
  # crafter is an optional dependency (the `envs` extra): imported only when Crafter is asked for
  from envs.crafter import text as crafter_text  # pylint: disable=import-outside-toplevel
  return Task("crafter", tuple(crafter_text.ACTION_NAMES),
              "Survive and unlock as many achievements as possible (collect wood, place a table, "
              "make tools, collect stone, coal, iron, diamond, eat, drink, sleep).", lambda n: n, "noop")


def crafter_instances(split: str = "evaluation", n: int | None = None) -> list[Instance]:
  """The first `n` (default all) Crafter world seeds of a split, with the Crafter budgets."""
  # crafter is an optional dependency (the `envs` extra): imported only when Crafter is asked for
  from envs.crafter import text as crafter_text  # pylint: disable=import-outside-toplevel
  b = splits.BUDGETS["crafter"]
  seeds = splits.crafter_seeds(split)[:n]
  pickaxe = lambda info: "make_wood_pickaxe" in info["state_facts"]["achievements"]
  return [Instance(f"crafter-{split}-{s}", s, b.actions, b.calls,
                   lambda: SuccessWhen(crafter_text.CrafterText(max_steps=10000, reuse_worlds=True),
                                       pickaxe))
          for s in seeds]


def task(env: str) -> Task:
  """The Task of a ConPAct env: "sokoban", "minigrid", "crafter" or "procgen-<game>"."""
  if env.startswith("procgen-"):
    return _procgen_task(env)
  tasks = {"sokoban": lambda: SOKOBAN_TASK, "minigrid": lambda: MINIGRID_TASK,
           "crafter": _crafter_task}
  if env not in tasks:
    raise KeyError(f"unknown ConPAct env {env!r}; valid: {', '.join(tasks)}")
  return tasks[env]()
