"""Sokoban text view and ground-truth state facts for LLM agents (host side, one unbatched state).

Coordinates are (row, column), 0-based from the top-left; "up" decreases the row. `state_facts`
holds what ConPAct assertions about a board are checked against: player, boxes, targets, boxes on
targets, what each move would do ("free" / "push" / "blocked"), and boxes stuck in dead corners.

`VIEW` bundles these for `envs.host_adapter.JaxEnvAdapter`; `text_env(levels)` is the host-loop
text env over a level bank whose `reset(seed)` starts level `seed` (the ConPAct instances).
"""
import functools

import jax.numpy as jnp
import numpy as np

from envs.host_adapter import JaxEnvAdapter, TextView
from envs.sokoban import env as sokoban_env
from envs.sokoban import levels as lv

_SYMBOLS = {lv.FLOOR: "_", lv.WALL: "#", lv.TARGET: ".", lv.BOX: "$", lv.BOX_ON_TARGET: "*",
            lv.PLAYER: "@", lv.PLAYER_ON_TARGET: "+"}
LEGEND = "# wall, _ floor, . target, $ box, * box on target, @ player, + player on target"


def _grids(state):
  return (np.asarray(state.walls, bool), np.asarray(state.targets, bool), np.asarray(state.boxes, bool),
          tuple(int(v) for v in np.asarray(state.player)))


def _cells(mask: np.ndarray) -> list[tuple[int, int]]:
  return [(int(r), int(c)) for r, c in np.argwhere(mask)]


def move_outcome(state, action: int) -> str:
  """What `action` would do: "free" (player moves), "push" (a box moves) or "blocked" (no-op)."""
  walls, _, boxes, (r, c) = _grids(state)
  dr, dc = sokoban_env.DELTAS[action]
  h, w = walls.shape
  blocked = lambda y, x: not (0 <= y < h and 0 <= x < w) or walls[y, x]
  if blocked(r + dr, c + dc):
    return "blocked"
  if not boxes[r + dr, c + dc]:
    return "free"
  y, x = r + 2 * dr, c + 2 * dc
  return "blocked" if blocked(y, x) or boxes[y, x] else "push"


def dead_corner_boxes(state) -> list[tuple[int, int]]:
  """Boxes off target with a wall above or below AND a wall left or right: they can never move."""
  walls, targets, boxes, _ = _grids(state)
  pad = np.pad(walls, 1, constant_values=True)
  vertical = pad[:-2, 1:-1] | pad[2:, 1:-1]
  horizontal = pad[1:-1, :-2] | pad[1:-1, 2:]
  return _cells(boxes & ~targets & vertical & horizontal)


def admissible_actions(state) -> list[str]:
  """Every action is legal in Sokoban (a blocked move is a no-op); names in action-index order."""
  del state
  return list(sokoban_env.ACTION_NAMES)


def state_facts(state) -> dict:
  """Ground truth of one state: see the module docstring (plain Python values, JSON-able)."""
  walls, targets, boxes, player = _grids(state)
  on = _cells(boxes & targets)
  return {
      "player": player,
      "boxes": _cells(boxes),
      "targets": _cells(targets),
      "boxes_on_targets": on,
      "num_boxes_on_targets": len(on),
      "num_boxes": int(boxes.sum()),
      "solved": bool(not (boxes & ~targets).any()),
      "moves": {name: move_outcome(state, a) for a, name in enumerate(sokoban_env.ACTION_NAMES)},
      "dead_corner_boxes": dead_corner_boxes(state),
  }


def render_text(state) -> str:
  """Symbol grid with row/column numbers, the legend and a short summary of the facts."""
  grid = np.asarray(sokoban_env.board(state))
  h, w = grid.shape
  pad = len(str(max(h, w) - 1))
  header = " " * (pad + 1) + " ".join(str(c).rjust(pad) for c in range(w))
  rows = [str(r).rjust(pad) + " " + " ".join(_SYMBOLS[int(v)].rjust(pad) for v in grid[r]) for r in range(h)]
  f = state_facts(state)
  fmt = lambda cells: ", ".join(f"({r},{c})" for r, c in cells) or "none"
  return "\n".join([
      "Sokoban board (row, column), rows top to bottom, columns left to right:",
      header, *rows,
      f"Legend: {LEGEND}.",
      f"Player at ({f['player'][0]},{f['player'][1]}).",
      f"Boxes: {fmt(f['boxes'])}. Targets: {fmt(f['targets'])}.",
      f"Boxes on targets: {f['num_boxes_on_targets']} of {f['num_boxes']}.",
      "Actions: up (row - 1), down (row + 1), left (column - 1), right (column + 1).",
  ])


def action_id(name: str) -> int:
  """Action id of "up", "down", "left" or "right"."""
  if name not in sokoban_env.ACTION_NAMES:
    valid = ", ".join(sokoban_env.ACTION_NAMES)
    raise ValueError(f"unknown Sokoban action {name!r}; valid: {valid}")
  return sokoban_env.ACTION_NAMES.index(name)


VIEW = TextView(action_names=tuple(sokoban_env.ACTION_NAMES), action_id=action_id,
                render_text=render_text, state_facts=state_facts,
                success=lambda facts, env_info: facts["solved"])


@functools.lru_cache(maxsize=8)
def _bank_env(level_bytes: bytes, shape: tuple[int, ...], max_steps: int) -> sokoban_env.Sokoban:
  # One env per (bank, step limit): every text env over a bank shares its compiled step.
  return sokoban_env.Sokoban(np.frombuffer(level_bytes, np.int8).reshape(shape), max_steps)


def text_env(levels: np.ndarray, max_steps: int = 120) -> JaxEnvAdapter:
  """Host-loop text env over a level bank; `reset(seed)` starts level `seed` of the bank.

  Args:
    levels: int8 [N, H, W] level bank (codes in `levels.py`).
    max_steps: actions per episode before `truncated`.
  Returns:
    a `JaxEnvAdapter` whose observations are `render_text` and whose info holds
    `state_facts` and `success` (every box on a target).
  """
  levels = np.ascontiguousarray(levels, np.int8)
  env = _bank_env(levels.tobytes(), levels.shape, max_steps)
  start = lambda seed: sokoban_env.state_from_level(jnp.asarray(levels[seed]), seed)
  return JaxEnvAdapter(env, view=VIEW, reset_state=start)
