"""Procedural Sokoban levels by reverse play, generated offline with a seeded NumPy Generator.

Steps per level (the classic recipe behind Boxoban-style rooms):
1. topology: a random walk with direction persistence carves floor out of a walled room;
2. targets: `num_boxes` random floor cells become targets, each holding a box, plus a player cell;
3. reverse play: the player walks randomly and, when a box is directly behind it, may pull it along.
   Every reverse step is a legal forward step played backwards (a pull is a push), so the state
   reached is solvable by construction. The kept state has the most boxes off target (usually all),
   then the largest total box displacement.
Levels are int8 [H, W] (codes in `levels.py`); `generate_levels` stacks them and `cached_levels`
stores the array as .npy so a bank is built once and reloaded. An optional BFS check (`solver.py`)
keeps only levels whose optimal solution length lies in a range.
"""
import dataclasses
import os

import numpy as np

from envs.sokoban import levels as lv
from envs.sokoban import solver

_DIRS = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])
_STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))


@dataclasses.dataclass(frozen=True)
class ReversePlayGenerator:
  height: int = 10
  width: int = 10
  num_boxes: int = 4
  floor_fraction: float = 0.5  # the topology walk stops once this share of the interior is floor
  reverse_steps: int = 1000
  pull_probability: float = 0.8
  max_attempts: int = 30

  def __post_init__(self):
    interior = (self.height - 2) * (self.width - 2)
    if self.height < 4 or self.width < 4 or self.num_boxes < 1 or interior < 2 * self.num_boxes + 2:
      raise ValueError(f"cannot place {self.num_boxes} boxes in a {self.height}x{self.width} room")

  def topology(self, rng: np.random.Generator) -> np.ndarray:
    """bool [H, W] floor mask carved by a persistent random walk inside the border walls."""
    h, w = self.height, self.width
    floor = np.zeros((h, w), bool)
    r, c = int(rng.integers(1, h - 1)), int(rng.integers(1, w - 1))
    wanted, carved = self.floor_fraction * (h - 2) * (w - 2), 0
    steps = 20 * (h + w)
    turn, new_dir, widen, side = (rng.random(steps) < 0.35, rng.integers(4, size=steps),
                                  rng.random(steps) < 0.3, rng.integers(4, size=steps))
    dr, dc = _STEPS[int(rng.integers(4))]
    for i in range(steps):
      if carved >= wanted:
        break
      if turn[i]:
        dr, dc = _STEPS[new_dir[i]]
      r, c = min(max(r + dr, 1), h - 2), min(max(c + dc, 1), w - 2)
      cells = [(r, c)]
      if widen[i]:  # widen the corridor now and then so boxes have room to move
        sr, sc = _STEPS[side[i]]
        cells.append((min(max(r + sr, 1), h - 2), min(max(c + sc, 1), w - 2)))
      for cell in cells:
        if not floor[cell]:
          floor[cell] = True
          carved += 1
    return floor

  def sample(self, rng: np.random.Generator) -> np.ndarray:
    """One solvable level, int8 [H, W], all boxes off target unless `max_attempts` tries fail."""
    fallback = None
    for _ in range(self.max_attempts):
      floor = self.topology(rng)
      cells = np.argwhere(floor)
      # a box can leave its target only if two cells in a row next to it are floor (player pulls)
      pullable = np.argwhere(floor & solver.live_cells(~floor, floor) & _pull_room(floor))
      if len(cells) < 2 * self.num_boxes + 2 or len(pullable) < self.num_boxes:
        continue
      targets = pullable[rng.choice(len(pullable), self.num_boxes, replace=False)]
      rest = np.array([c for c in cells if not any((c == targets).all(1))])
      player = rest[rng.integers(len(rest))]
      found = self._reverse_play(rng, floor, targets, player)
      if found is None:
        continue
      (start_boxes, start_player), off = found
      level = np.where(floor, lv.FLOOR, lv.WALL).astype(np.int8)
      level[tuple(targets.T)] = lv.TARGET
      for r, c in start_boxes:
        level[r, c] = lv.BOX_ON_TARGET if level[r, c] == lv.TARGET else lv.BOX
      r, c = start_player
      level[r, c] = lv.PLAYER_ON_TARGET if level[r, c] == lv.TARGET else lv.PLAYER
      if off == self.num_boxes:
        return level
      if fallback is None or off > fallback[1]:  # keep the best partial one in case none is perfect
        fallback = (level, off)
    if fallback is not None:
      return fallback[0]
    raise RuntimeError(f"no level after {self.max_attempts} attempts for {self}")

  def _reverse_play(self, rng, floor, targets, player):
    """Random reverse moves; the (boxes, player) with most boxes off target, then most displaced."""
    origins = [tuple(map(int, t)) for t in targets]
    target_set = set(origins)
    boxes = list(origins)
    box_at = {b: i for i, b in enumerate(boxes)}
    pr, pc = map(int, player)
    dirs = rng.integers(4, size=self.reverse_steps)
    pulls = rng.random(self.reverse_steps) < self.pull_probability
    best, best_score = None, (0, 0)
    for d, pull in zip(dirs, pulls):
      dr, dc = _STEPS[d]
      nxt = (pr + dr, pc + dc)
      if not floor[nxt] or nxt in box_at:
        continue
      behind = (pr - dr, pc - dc)
      if pull and behind in box_at:
        i = box_at.pop(behind)
        boxes[i] = (pr, pc)
        box_at[(pr, pc)] = i
      pr, pc = nxt
      off = sum(b not in target_set for b in boxes)
      if not pull or off == 0:
        continue
      score = (off, sum(abs(b[0] - o[0]) + abs(b[1] - o[1]) for b, o in zip(boxes, origins)))
      if score > best_score:
        best, best_score = (list(boxes), (pr, pc)), score
    return None if best is None else (best, best_score[0])


def _pull_room(floor: np.ndarray) -> np.ndarray:
  """bool [H, W]: cells with two floor cells in a row beside them in some direction."""
  pad = np.pad(floor, 2)
  h, w = floor.shape
  room = np.zeros_like(floor)
  for dr, dc in _STEPS:
    room |= (pad[2 + dr:2 + dr + h, 2 + dc:2 + dc + w] & pad[2 + 2 * dr:2 + 2 * dr + h, 2 + 2 * dc:2 + 2 * dc + w])
  return room


def generate_levels(seed: int, num_levels: int, height: int = 10, width: int = 10, num_boxes: int = 4,
                    min_moves: int = 1, max_moves: int | None = None, max_states: int = 200_000,
                    **generator_kwargs) -> np.ndarray:
  """`num_levels` distinct levels, int8 [N, H, W], deterministic in `seed`.

  With `max_moves` set, each level is solved by BFS and kept only if its optimal action count is in
  [min_moves, max_moves] (levels the solver gives up on are dropped).
  """
  gen = ReversePlayGenerator(height, width, num_boxes, **generator_kwargs)
  rng = np.random.default_rng(seed)
  out, seen = [], set()
  for _ in range(200 * num_levels):
    level = gen.sample(rng)
    if level.tobytes() in seen:
      continue
    if max_moves is not None:
      n = solver.solve(level, max_states).length
      if n is None or not min_moves <= n <= max_moves:
        continue
    seen.add(level.tobytes())
    out.append(level)
    if len(out) == num_levels:
      return np.stack(out)
  raise RuntimeError(f"only {len(out)} of {num_levels} levels met the constraints")


def cached_levels(path: str, **kwargs) -> np.ndarray:
  """Loads the .npy bank at `path`, or generates it with `generate_levels(**kwargs)` and saves it.

  The file is not keyed by the arguments: name it after them (e.g. `sokoban_s0_n256_10x10_b4.npy`).
  """
  if os.path.exists(path):
    return np.load(path)
  levels = generate_levels(**kwargs)
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  np.save(path, levels)
  return levels
