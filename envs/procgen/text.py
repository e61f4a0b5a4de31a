"""Procgen games (easy mode) as host-loop envs with text views and ConPAct state facts.

Wraps bigfish, chaser, coinrun, jumper, maze and miner from the `procgen2` wheel (procgen 0.10.7
rebuilt for this Python; `procgen` itself has no wheel here). One instance = (game, level id); the
episode always replays that level (`start_level=level, num_levels=1`). `terminated` is the game
ending the episode itself (goal reached or death), `truncated` the game's timeout or `max_steps`.
`info["normalized_return"]` uses the paper's easy-mode bounds (envs/splits.py).

State facts come from the decoded C++ state (envs/procgen/state.py), per the paper's referents:
  bigfish  target: a fish smaller than the player          hazard: a larger fish
  chaser   target: an uncollected orb (small or large)      hazard: an enemy while not vulnerable
  coinrun  target: the goal coin                            hazard: a saw, an enemy or lava (gap)
  jumper   target: the carrot                               hazard: spikes
  maze     target: the cheese                               (no hazard field)
  miner    target: a diamond                                hazard: a boulder/diamond that can fall
`target_visible`: a target inside the rendered view. `hazard_nearby`: a hazard whose centre is
within HAZARD_RADIUS cells of the player's centre; for miner, a boulder or diamond in the player's
column or a neighbouring one, 1-2 cells above the player's row, with empty space right below it.
"""
import importlib.util
import math
import sys
import types

import numpy as np

from envs import splits
from envs.procgen import state as procgen_state

GAMES = tuple(splits.PROCGEN_GAMES)
HAZARD_RADIUS = 3.0
TEXT_MAX_LISTED = 5  # the text lists the nearest targets only (chaser has ~80 orbs); facts list all
# procgen's 15 actions: index = 3 * (vx + 1) + (vy + 1) for the 9 moves, then 6 special keys
ACTION_NAMES = ("left_down", "left", "left_up", "down", "noop", "up", "right_down", "right",
                "right_up", "key_d", "key_a", "key_w", "key_s", "key_q", "key_e")
MOVE_ACTIONS = ACTION_NAMES[:9]  # none of the six games uses the special keys


def _procgen_env_module():
  """Imports `procgen.env` without `procgen/__init__`, which registers gym (0.26) environments;
  gym is unmaintained, breaks under NumPy 2 and is not needed to drive the gym3 interface."""
  if "procgen.env" in sys.modules:
    return sys.modules["procgen.env"]
  spec = importlib.util.find_spec("procgen")
  if spec is None:
    raise ImportError("Procgen is not installed: pip install --no-deps procgen2==0.10.7 gym3==0.3.3 cffi")
  if "procgen" not in sys.modules:
    package = types.ModuleType("procgen")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["procgen"] = package
  return importlib.import_module("procgen.env")


def _cells(state, types_):
  ys, xs = np.nonzero(np.isin(state.grid, types_))
  return [(x + 0.5, y + 0.5) for x, y in zip(xs, ys)]


def _entities(state, types_):
  return [(e["x"], e["y"]) for e in state.entities if e["type"] in types_]


def referents(state) -> tuple[list, list]:
  """(targets, hazards) as lists of (x, y) centres for the state's game."""
  g, agent = state.game, state.agent
  if g == "bigfish":
    fish = [e for e in state.entities if e["type"] == 2]
    return ([(e["x"], e["y"]) for e in fish if e["rx"] < agent["rx"]],
            [(e["x"], e["y"]) for e in fish if e["rx"] > agent["rx"]])
  if g == "chaser":
    vulnerable = state.cur_time - state.extra["eat_time"] < state.extra["eat_timeout"]
    enemies = [] if vulnerable else _entities(state, (6, 7, 8))
    return _cells(state, (1002,)) + _entities(state, (2,)), enemies
  if g == "coinrun":
    return _cells(state, (1,)), _entities(state, (2, 3, 5, 6, 7)) + _cells(state, (17, 18))
  if g == "jumper":
    return _entities(state, (1,)), _cells(state, (2,)) + _entities(state, (2,))
  if g == "maze":
    return _cells(state, (2,)), []
  if g == "miner":
    return _cells(state, (2, 4)), _miner_falling(state)
  raise ValueError(f"no referents for game {g!r}")


def _miner_falling(state) -> list:
  grid, agent = state.grid, state.agent
  ax, ay = int(agent["x"]), int(agent["y"])
  h, w = grid.shape
  out = []
  for x in (ax - 1, ax, ax + 1):
    for y in (ay + 1, ay + 2):
      if not (0 <= x < w and 0 < y < h) or grid[y, x] not in (1, 2, 3, 4):
        continue
      # it can fall if the cell below is empty, or is the player (moving off lets it drop)
      if (x, y - 1) == (ax, ay) or grid[y - 1, x] == procgen_state.SPACE:
        out.append((x + 0.5, y + 0.5))
  return out


def state_facts(state) -> dict:
  agent = state.agent
  targets, hazards = referents(state)
  near = lambda p: math.hypot(p[0] - agent["x"], p[1] - agent["y"]) <= HAZARD_RADIUS
  by_distance = lambda ps: sorted(ps, key=lambda d: (math.hypot(*d), d))
  visible_targets = by_distance([_rel(agent, p) for p in targets if state.visible(*p)])
  facts = {
      "game": state.game,
      "agent": (round(float(agent["x"]), 2), round(float(agent["y"]), 2)),
      "target_visible": bool(visible_targets),
      "visible_targets": visible_targets,  # offsets (dx, dy) from the player, nearest first
  }
  if state.game != "maze":
    facts["hazard_nearby"] = bool(state.game == "miner" and hazards) or any(near(p) for p in hazards)
    facts["nearby_hazards"] = by_distance([_rel(agent, p) for p in hazards if state.game == "miner" or near(p)])
  return facts


def _rel(agent, p) -> tuple[float, float]:
  return (round(float(p[0] - agent["x"]), 1), round(float(p[1] - agent["y"]), 1))


def _phrase(dx: float, dy: float) -> str:
  parts = []
  if abs(dy) >= 0.05:
    parts.append(f"{abs(dy):.1f} {'up' if dy > 0 else 'down'}")
  if abs(dx) >= 0.05:
    parts.append(f"{abs(dx):.1f} {'right' if dx > 0 else 'left'}")
  return " and ".join(parts) or "at the player"


def render_text(state) -> str:
  f = state_facts(state)
  lines = [f"Procgen {state.game}, level {state.level_seed}, step {state.cur_time}.",
           f"Player at x={f['agent'][0]}, y={f['agent'][1]} (cells; y grows upward)."]
  shown = f["visible_targets"][:TEXT_MAX_LISTED]
  targets = "; ".join(_phrase(*d) for d in shown)
  more = len(f["visible_targets"]) - len(shown)
  lines.append(f"Targets in view ({len(f['visible_targets'])}, nearest first): {targets}"
               + (f"; and {more} more." if more else ".") if shown else "No target in view.")
  if "hazard_nearby" in f:
    hazards = "; ".join(_phrase(*d) for d in f["nearby_hazards"])
    lines.append(f"Hazards nearby: {hazards}." if hazards else "No hazard nearby.")
  lines.append("Actions: " + ", ".join(MOVE_ACTIONS) + ".")
  return "\n".join(lines)


class ProcgenText:
  """One Procgen game in easy mode; `reset(level)` starts that level."""

  def __init__(self, game: str, max_steps: int = 10_000):
    if game not in GAMES:
      raise ValueError(f"unknown Procgen game {game!r}; valid: {', '.join(GAMES)}")
    self.game, self.max_steps = game, max_steps
    self._env, self._return, self._steps = None, 0.0, 0

  def state(self):
    return procgen_state.parse_state(self._env.callmethod("get_state")[0], self.game)

  def reset(self, level: int):
    penv = _procgen_env_module()
    self._env = penv.ProcgenGym3Env(num=1, env_name=self.game, distribution_mode="easy",
                                   start_level=int(level), num_levels=1)
    self._return, self._steps, self._level = 0.0, 0, int(level)
    _, obs, _ = self._env.observe()
    state = self.state()
    self._timeout = state.timeout
    return render_text(state), self._info(obs["rgb"][0])

  def step(self, action: int | str):
    if self._env is None:
      raise RuntimeError("call reset(level) before step")
    if isinstance(action, str):
      if action not in ACTION_NAMES:
        raise ValueError(f"unknown Procgen action {action!r}; valid: {', '.join(ACTION_NAMES)}")
      action = ACTION_NAMES.index(action)
    self._env.act(np.array([int(action)], np.int32))
    reward, obs, first = self._env.observe()
    self._steps += 1
    self._return += float(reward[0])
    ended = bool(first[0])  # gym3 has already restarted the level; call reset before going on
    complete = ended and bool(self._env.get_info()[0].get("prev_level_complete", 0))
    # an episode that stops before the game's own timeout was ended by the game (goal or death)
    terminated = ended and self._steps < self._timeout
    truncated = (ended and not terminated) or (not ended and self._steps >= self.max_steps)
    out = self._info(obs["rgb"][0])
    out["level_complete"] = complete
    return render_text(self.state()), float(reward[0]), terminated, truncated, out

  def _info(self, rgb) -> dict:
    facts = state_facts(self.state())
    return {"state_facts": facts, "rgb": rgb, "episode_return": self._return,
            "normalized_return": splits.procgen_normalized_return(self.game, self._return),
            "admissible_actions": list(MOVE_ACTIONS)}


# registry factories, one per game (envs/registry.py names them "Procgen-<game>-easy-v0")
def bigfish(**kw): return ProcgenText("bigfish", **kw)  # noqa: E704
def chaser(**kw): return ProcgenText("chaser", **kw)  # noqa: E704
def coinrun(**kw): return ProcgenText("coinrun", **kw)  # noqa: E704
def jumper(**kw): return ProcgenText("jumper", **kw)  # noqa: E704
def maze(**kw): return ProcgenText("maze", **kw)  # noqa: E704
def miner(**kw): return ProcgenText("miner", **kw)  # noqa: E704
