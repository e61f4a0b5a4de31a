"""Procgen wrapper: the decoded state is checked against the real game's rewards and episode ends."""
import collections
import re

import numpy as np
import pytest

import envs
from envs.procgen import state as procgen_state
from envs.procgen import text as procgen_text

MOVES = {(1, 0): "right", (-1, 0): "left", (0, 1): "up", (0, -1): "down"}


def _bfs_next(grid, start, goal, wall=51):
  h, w = grid.shape
  prev, queue = {start: None}, collections.deque([start])
  while queue:
    c = queue.popleft()
    for dx, dy in MOVES:
      n = (c[0] + dx, c[1] + dy)
      if 0 <= n[0] < w and 0 <= n[1] < h and grid[n[1], n[0]] != wall and n not in prev:
        prev[n] = c
        queue.append(n)
  c = goal
  while prev[c] != start:
    c = prev[c]
  return c


@pytest.mark.parametrize("level", [100, 101])
def test_maze_path_planned_on_decoded_grid_reaches_the_cheese(level):
  env = envs.make("Procgen-maze-easy-v0")
  text, info = env.reset(level)
  assert info["state_facts"]["target_visible"] and "hazard_nearby" not in info["state_facts"]
  for t in range(100):
    s = env.state()
    cell = (int(s.agent["x"]), int(s.agent["y"]))
    gy, gx = np.argwhere(s.grid == 2)[0]
    goal = (int(gx), int(gy))
    dx, dy = info["state_facts"]["visible_targets"][0]
    assert (cell[0] + dx, cell[1] + dy) == goal  # the fact's offset points at the cheese cell
    nxt = _bfs_next(s.grid, cell, goal)
    _, reward, term, trunc, info = env.step(MOVES[(nxt[0] - cell[0], nxt[1] - cell[1])])
    if term or trunc:
      break
  assert term and not trunc and reward == 10.0 and info["level_complete"]
  assert info["normalized_return"] == pytest.approx(1.0)


def test_miner_diamond_rewards_match_decoded_grid():
  env = procgen_text.ProcgenText("miner")
  env.reset(100)
  rng = np.random.default_rng(0)
  count = lambda s: int(np.isin(s.grid, (2, 4)).sum())
  before, rewarded = count(env.state()), 0
  for _ in range(150):
    _, reward, term, trunc, info = env.step(int(rng.choice([1, 3, 5, 7])))
    if term or trunc:
      break
    after = count(env.state())
    assert (reward >= 1.0) == (after == before - 1)
    rewarded += reward >= 1.0
    if info["state_facts"]["hazard_nearby"]:
      s = env.state()
      ax, ay = int(s.agent["x"]), int(s.agent["y"])
      for dx, dy in info["state_facts"]["nearby_hazards"]:
        x, y = int(ax + dx), int(ay + dy)
        assert s.grid[y, x] in (1, 2, 3, 4) and abs(x - ax) <= 1 and 1 <= y - ay <= 2
    before = after
  assert rewarded >= 1


@pytest.mark.parametrize("game", procgen_text.GAMES)
def test_every_game_decodes_and_renders(game):
  env = procgen_text.ProcgenText(game, max_steps=30)
  text, info = env.reset(105)
  s = env.state()
  assert s.game == game and s.level_seed == 105 and s.grid.size > 0 and s.timeout > 0
  assert text.startswith(f"Procgen {game}, level 105") and "np.float" not in text
  assert ("hazard_nearby" in info["state_facts"]) == (game != "maze")
  rng = np.random.default_rng(1)
  for t in range(30):
    text, reward, term, trunc, info = env.step(int(rng.integers(0, 9)))
    assert np.isfinite(reward) and info["rgb"].shape == (64, 64, 3)
    if term or trunc:
      break
  assert term or (trunc and t == 29)
  now = env.state()
  for dx, dy in info["state_facts"]["visible_targets"]:
    assert now.visible(now.agent["x"] + dx, now.agent["y"] + dy)


def test_parser_rejects_wrong_game_and_bad_actions():
  env = procgen_text.ProcgenText("chaser")
  env.reset(100)
  blob = env._env.callmethod("get_state")[0]
  with pytest.raises(ValueError, match="expected 'maze'"):
    procgen_state.parse_state(blob, "maze")
  with pytest.raises(ValueError, match="unknown Procgen action"):
    env.step("jump")
  with pytest.raises(ValueError, match="unknown Procgen game"):
    procgen_text.ProcgenText("pong")
  assert re.search(r"Targets in view \(\d+, nearest first\)", env.reset(100)[0])
