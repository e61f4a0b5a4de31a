"""Level generators: every generated level obeys its task's construction rules, and summary
statistics of our levels match those of Farama's levels (same distribution, different RNG)."""
import collections
import functools

import gymnasium as gym
import jax
import minigrid  # noqa: F401
import numpy as np
import pytest

from envs.minigrid import constants as C
from envs.minigrid import text
from envs.minigrid.convert import from_minigrid
from envs.minigrid.tasks import TASKS, Generator

N_OURS = 256
N_FARAMA = 100
OBJECTS = (C.KEY, C.BALL, C.BOX)


@functools.lru_cache(maxsize=None)
def _our_levels(task):
  states = jax.jit(jax.vmap(Generator(TASKS[task])))(jax.random.split(jax.random.key(3), N_OURS))
  states = jax.device_get(states)
  return [jax.tree.map(lambda x, i=i: x[i], states) for i in range(N_OURS)]


@functools.lru_cache(maxsize=None)
def _farama_levels(task):
  env = gym.make(task)
  out = []
  for seed in range(N_FARAMA):
    env.reset(seed=10_000 + seed)
    out.append(from_minigrid(env)[0])
  return out


def _reachable(grid, start):
  """Independent BFS: cells reachable walking through empty cells and doors, plus their
  immediate neighbours (objects can be reached but not crossed)."""
  typ = grid[..., 0]
  seen, stack, out = set(), [tuple(start)], set()
  while stack:
    x, y = stack.pop()
    if (x, y) in seen:
      continue
    seen.add((x, y))
    out.add((x, y))
    if typ[x, y] not in (C.EMPTY, C.DOOR):
      continue
    for dx, dy in C.DIR_TO_VEC:
      nx, ny = x + dx, y + dy
      if 0 <= nx < typ.shape[0] and 0 <= ny < typ.shape[1]:
        stack.append((nx, ny))
  return out


def _objects(grid):
  return [(x, y) for x, y in zip(*np.nonzero(np.isin(grid[..., 0], OBJECTS)))]


def _check_level(task, s):
  grid, pos, d = np.asarray(s.grid), np.asarray(s.agent_pos), int(s.agent_dir)
  spec = TASKS[task]
  assert grid.shape[:2] == (spec.layout.width, spec.layout.height)
  assert grid[pos[0], pos[1], 0] == C.EMPTY
  front = grid[pos[0] + C.DIR_TO_VEC[d][0], pos[1] + C.DIR_TO_VEC[d][1], 0]
  allowed_front = (C.EMPTY, C.WALL, C.DOOR) if task == "BabyAI-GoTo-v0" else (C.EMPTY, C.WALL)
  assert front in allowed_front
  objs = _objects(grid)
  doors = list(zip(*np.nonzero(grid[..., 0] == C.DOOR)))
  mission = np.asarray(s.mission)
  matching = (grid[..., 0] == mission[1]) & ((mission[2] < 0) | (grid[..., 1] == mission[2]))
  assert matching.sum() == int(s.mission_count) >= 1
  np.testing.assert_array_equal(np.asarray(s.target_mask), matching)
  n_objects = {"BabyAI-GoToRedBall-v0": 8, "BabyAI-GoToObj-v0": 1, "BabyAI-GoToLocal-v0": 8,
               "BabyAI-GoTo-v0": 18, "BabyAI-GoToDoor-v0": 0,
               "BabyAI-BlockedUnlockPickup-v0": 3}[task]
  assert len(objs) == n_objects
  if task != "BabyAI-BlockedUnlockPickup-v0":  # objects are never placed next to the agent
    assert all(abs(x - pos[0]) + abs(y - pos[1]) >= 2 for x, y in objs)
  if task in ("BabyAI-GoToRedBall-v0", "BabyAI-GoToLocal-v0", "BabyAI-GoTo-v0"):
    reach = _reachable(grid, pos)
    assert all(o in reach for o in objs + doors)
  if task == "BabyAI-GoTo-v0":
    assert len(doors) >= 8 and all(grid[x, y, 2] == C.DOOR_CLOSED for x, y in doors)
  if task == "BabyAI-GoToDoor-v0":
    assert len(doors) == 4 and all(6 <= x <= 12 and 6 <= y <= 12 for x, y in doors)
    assert 6 < pos[0] < 12 and 6 < pos[1] < 12
  if task == "BabyAI-BlockedUnlockPickup-v0":
    (dx, dy), = doors
    assert dx == 5 and grid[dx, dy, 2] == C.DOOR_LOCKED and grid[dx - 1, dy, 0] == C.BALL
    keys = [o for o in objs if grid[o][0] == C.KEY]
    boxes = [o for o in objs if grid[o][0] == C.BOX]
    assert len(keys) == 1 and grid[keys[0]][1] == grid[dx, dy, 1] and keys[0][0] < 5
    assert len(boxes) == 1 and boxes[0][0] > 5 and pos[0] < 5


@pytest.mark.parametrize("task", sorted(TASKS))
def test_generated_levels_follow_task_rules(task):
  for s in _our_levels(task):
    _check_level(task, s)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_farama_levels_pass_the_same_checks(task):
  """The checks above are Farama's rules, not ours: Farama's own levels satisfy them."""
  for s in _farama_levels(task)[:30]:
    _check_level(task, s)


def _stats(levels):
  """Per-level features whose means we compare: nearest-target distance, 'a' article,
  number of doors, locked doors, agent direction east, target is a ball."""
  rows = []
  for s in levels:
    grid, pos = np.asarray(s.grid), np.asarray(s.agent_pos)
    tx, ty = np.nonzero(np.asarray(s.target_mask) | (
        (grid[..., 0] == int(s.mission[1])) & (int(s.mission[2]) < 0)))
    dist = np.min(np.abs(tx - pos[0]) + np.abs(ty - pos[1]))
    rows.append([dist, text.mission_text(s).split()[2] == "a",
                 (grid[..., 0] == C.DOOR).sum(), (grid[..., 2] == C.DOOR_LOCKED).sum(),
                 int(s.agent_dir) == 0, int(s.mission[1]) == C.BALL])
  return np.asarray(rows, np.float64)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_level_statistics_match_farama(task):
  ours, theirs = _stats(_our_levels(task)), _stats(_farama_levels(task))
  for k in range(ours.shape[1]):
    a, b = ours[:, k], theirs[:, k]
    se = np.sqrt(a.var() / len(a) + b.var() / len(b)) + 1e-9
    assert abs(a.mean() - b.mean()) < 4.5 * se + 1e-9, (task, k, a.mean(), b.mean(), se)


def test_mission_words_cover_farama_vocabulary():
  words = collections.Counter()
  for task in ("BabyAI-GoToLocal-v0", "BabyAI-GoTo-v0"):
    for s in _our_levels(task):
      words.update(text.mission_text(s).split())
  assert {"a", "the", "key", "ball", "box"} <= set(words)
  assert set(C.COLOR_NAMES) <= set(words)
