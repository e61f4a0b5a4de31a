"""Breadth-first Sokoban solver for small levels: solvability and move-optimal solution length.

The search runs over (player cell, box cells) with one edge per action, so the first solution found
has the fewest actions (what the action budget A counts), not the fewest pushes. Boxes pushed onto
"dead" cells — cells from which no sequence of pushes reaches any target, found by pulling a box
backwards from every target — are pruned; that never removes a solution. The search gives up after
`max_states` states and then reports `solvable=None` (unknown) rather than guessing.
"""
import collections
import dataclasses

import numpy as np

from envs.sokoban import levels as lv

_DELTAS = ((-1, 0), (1, 0), (0, -1), (0, 1))  # same order as env.ACTION_NAMES


@dataclasses.dataclass(frozen=True)
class Solution:
  solvable: bool | None  # None: gave up at max_states
  actions: tuple[int, ...] | None  # a shortest action sequence when solvable
  states_explored: int

  @property
  def length(self) -> int | None:
    return None if self.actions is None else len(self.actions)


def live_cells(walls: np.ndarray, targets: np.ndarray) -> np.ndarray:
  """bool [H, W]: cells from which a lone box can still be pushed onto some target."""
  h, w = walls.shape
  free = lambda r, c: 0 <= r < h and 0 <= c < w and not walls[r, c]
  live = targets & ~walls
  queue = collections.deque(zip(*np.nonzero(live)))
  while queue:
    r, c = queue.popleft()
    for dr, dc in _DELTAS:  # pulling the box from (r, c) to (r+dr, c+dc) needs (r+2dr, c+2dc) free
      if free(r + dr, c + dc) and free(r + 2 * dr, c + 2 * dc) and not live[r + dr, c + dc]:
        live[r + dr, c + dc] = True
        queue.append((r + dr, c + dc))
  return live


def solve(level: np.ndarray, max_states: int = 200_000) -> Solution:
  """Shortest action sequence solving an int8 [H, W] level, by breadth-first search."""
  level = np.asarray(level)
  lv.check_level(level)
  h, w = level.shape
  walls = level == lv.WALL
  targets = np.isin(level, (lv.TARGET, lv.BOX_ON_TARGET, lv.PLAYER_ON_TARGET))
  live = live_cells(walls, targets)
  target_set = frozenset(map(tuple, np.argwhere(targets)))
  boxes0 = tuple(sorted(map(tuple, np.argwhere(np.isin(level, (lv.BOX, lv.BOX_ON_TARGET))))))
  player0 = tuple(np.argwhere(np.isin(level, (lv.PLAYER, lv.PLAYER_ON_TARGET)))[0])
  start = (player0, boxes0)
  if set(boxes0) == target_set:
    return Solution(True, (), 1)
  parent = {start: None}
  queue = collections.deque([start])
  while queue:
    state = queue.popleft()
    (pr, pc), boxes = state
    box_set = set(boxes)
    for a, (dr, dc) in enumerate(_DELTAS):
      r1, c1 = pr + dr, pc + dc
      if not (0 <= r1 < h and 0 <= c1 < w) or walls[r1, c1]:
        continue
      new_boxes = boxes
      if (r1, c1) in box_set:
        r2, c2 = r1 + dr, c1 + dc
        if not (0 <= r2 < h and 0 <= c2 < w) or walls[r2, c2] or (r2, c2) in box_set:
          continue
        if not live[r2, c2]:
          continue
        new_boxes = tuple(sorted((box_set - {(r1, c1)}) | {(r2, c2)}))
      nxt = ((r1, c1), new_boxes)
      if nxt in parent:
        continue
      parent[nxt] = (state, a)
      if new_boxes is not boxes and set(new_boxes) == target_set:
        return Solution(True, _path(parent, nxt), len(parent))
      if len(parent) >= max_states:
        return Solution(None, None, len(parent))
      queue.append(nxt)
  return Solution(False, None, len(parent))


def _path(parent, state) -> tuple[int, ...]:
  actions = []
  while parent[state] is not None:
    state, a = parent[state]
    actions.append(a)
  return tuple(reversed(actions))
