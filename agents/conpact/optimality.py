"""Recorded non-optimal actions: the judge ConPAct-R uses to drop actor targets (paper Table 8).

An actor reply's action is judged against the frame that reply saw -- the current observation of
its prompt, which the text envs render from the true state (a misperceiving model may misread it;
the text itself is exact). `non_optimal(env, frame, action)` answers True (non-optimal), False
(optimal) or None (not judged):

  sokoban   the BFS solver (`envs.sokoban.solver` through `scripted.solve_board`) on the true
            board: with L = the shortest solution length, the action is optimal iff it starts a
            shortest solution, i.e. the board after the move is solved in L - 1 actions (a solved
            board counts as 0). A move into a wall or an unpushable box changes nothing and is
            non-optimal; a move that makes the board unsolvable is non-optimal. Not judged when the
            solver gives up (`solvable is None`) or the board was unsolvable already.
  minigrid  (the BabyAI GoTo/PickUp missions) the target's egocentric offset (forward, right) in
            the text view; distance = fewest of go forward / turn left / turn right until the
            target is the cell in front. The text view shows the cell in front but not a full
            map, so "go forward" counts as blocked only when something stands in front; farther
            obstacles are not modelled (our choice; the BabyAI bot needs the full Farama state,
            which the logs do not hold). Optimal iff the action lowers the distance by one, or at
            distance 0 it is the mission's verb ("pick up" / "done"). Not judged when the target
            is out of view or the mission is not a go-to / pick-up mission.
  other envs  not judged (None): there is no solver for them here.
"""
import collections
import functools

from agents.conpact import scripted

_SOKOBAN_DELTAS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
_REACH = 40  # offsets farther than this (in cells) are outside any text view we render


def _sokoban_move(board: dict, action: str) -> dict | None:
  """The board after `action`, or None when the move changes nothing (wall / unpushable box)."""
  dr, dc = _SOKOBAN_DELTAS[action]
  (r, c), walls, boxes = board["player"], board["walls"], board["boxes"]
  nr, nc = r + dr, c + dc
  if walls[nr, nc]:
    return None
  if boxes[nr, nc]:
    br, bc = nr + dr, nc + dc
    if walls[br, bc] or boxes[br, bc]:
      return None
    boxes = boxes.copy()
    boxes[nr, nc], boxes[br, bc] = False, True
  return {**board, "boxes": boxes, "player": (nr, nc)}


def _sokoban_length(board: dict) -> int | None | bool:
  """Shortest solution length; False when unsolvable; None when the solver gave up."""
  if not (board["boxes"] & ~board["targets"]).any():
    return 0
  sol = scripted.solve_board(board)
  if sol is None or sol.solvable is None:
    return None
  return sol.length if sol.solvable else False


def sokoban_non_optimal(frame: str, action: str) -> bool | None:
  board = scripted.SokobanPerception().clean(frame)
  length = _sokoban_length(board)
  if length is None or length is False or length == 0:
    return None
  after = _sokoban_move(board, action)
  if after is None:
    return True
  rest = _sokoban_length(after)
  if rest is None:
    return None
  return rest is False or rest != length - 1


def _turn(offset: tuple[int, int], action: str) -> tuple[int, int]:
  """The target's (forward, right) offset after the agent turns: turning left makes the old left
  the new forward, so (f, r) -> (-r, f); turning right: (f, r) -> (r, -f)."""
  f, r = offset
  return (-r, f) if action == "turn left" else (r, -f)


@functools.lru_cache(maxsize=None)
def _distances() -> dict[tuple[int, int], int]:
  """Fewest forward/turn actions from each egocentric offset to (1, 0) (target in front), on an
  open floor: breadth-first search backwards from (1, 0)."""
  dist = {(1, 0): 0}
  queue = collections.deque([(1, 0)])
  while queue:
    cur = queue.popleft()
    # predecessors: an offset that one action maps onto `cur`
    preds = [(cur[0] + 1, cur[1]), _turn(cur, "turn right"), _turn(cur, "turn left")]
    for p in preds:
      if max(abs(p[0]), abs(p[1])) <= _REACH and p not in dist:
        dist[p] = dist[cur] + 1
        queue.append(p)
  return dist


def minigrid_non_optimal(frame: str, action: str) -> bool | None:
  try:
    board = scripted.MiniGridPerception().clean(frame)
  except (AttributeError, IndexError):  # no go-to / pick-up mission or carry line in the frame
    return None
  if board["target"] is None:
    return None
  dist = _distances()
  offset = tuple(board["target"])
  if offset not in dist:
    return None
  if dist[offset] == 0:
    return action != ("pick up" if board["verb"] == "pick up" else "done")
  if action == "go forward":
    if board["front"] != "nothing":
      return True
    after = (offset[0] - 1, offset[1])
  elif action in ("turn left", "turn right"):
    after = _turn(offset, action)
  else:
    return True
  return dist.get(after, dist[offset] + 1) != dist[offset] - 1


JUDGES = {"sokoban": sokoban_non_optimal, "minigrid": minigrid_non_optimal}


def non_optimal(env: str, frame: str, action: str) -> bool | None:
  """Whether `action` taken at the observation text `frame` of `env` is non-optimal (see module
  doc); None when it cannot be judged."""
  judge = JUDGES.get(env)
  return None if judge is None else judge(frame, action)
