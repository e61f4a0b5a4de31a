"""Scripted planner/actor for ConPAct mechanics: programmatic perception with seeded noise.

SCRIPTED -- numbers produced with this policy are mechanics demonstrations, not model results.

`ConPActScriptedPolicy.respond(messages, rng)` reads the prompt like a model would: the role from
the system prompt's first line, the current frame, an injected "Verified state" block, discussion
feedback. It *perceives* the frame by parsing the rendered text and, with probability
`noise.rate("perception")`, misreads one task-relevant fact (Sokoban: a box or the player one
column off, as in the paper's Figure 1; MiniGrid: the target one cell off; Procgen and Crafter:
agents/conpact/scripted_games.py). It asserts what it
perceived and acts on it (Sokoban: first move of the BFS solution of the perceived board; MiniGrid:
greedy approach of the perceived target). Injected verified facts replace perception. In a
discussion with conflict feedback it looks again carefully (a clean reading), missing with
probability `noise.rate("recheck_miss")` (then it repeats its claims); without feedback it just
looks again (a fresh, equally noisy reading).

Assertions are written in varied surface forms (JSON or Python literals, tuples or strings,
"unknown" or omitted fields) so the parser and comparator are exercised, and
`intended(messages, rng)` replays the structured assertion behind a reply -- the independent label
source for the comparator's precision/recall.
"""
import functools
import json
import re
import types

import numpy as np

from agents.conpact import parse, schemas, scripted_games
from envs.sokoban import solver
from envs.sokoban import text as sokoban_text
from lib.backends.scripted import NoiseModel

_SOKO_CODES = {"#": 1, "_": 0, ".": 2, "$": 3, "*": 4, "@": 5, "+": 6}
MOVES = ("up", "down", "left", "right")


def current_frame(user: str) -> str:
  part = user.split("(current):\n", 1)[-1]
  return part.split("\n\n", 1)[0]


def verified_state(user: str) -> dict | None:
  m = re.search(r"Verified state \(reliable, from the environment\):\n(\{.*\})", user)
  return json.loads(m.group(1)) if m else None


# ---- Sokoban ----------------------------------------------------------------------------------

def sokoban_grid(frame: str) -> np.ndarray:
  """The symbol grid of `sokoban_text.render_text` as level codes int8 [H, W]."""
  rows = []
  for line in frame.splitlines():
    toks = line.split()
    if len(toks) > 2 and toks[0].isdigit() and all(t in _SOKO_CODES for t in toks[1:]):
      rows.append([_SOKO_CODES[t] for t in toks[1:]])
  return np.array(rows, np.int8)


@functools.lru_cache(maxsize=50_000)
def _solve(level_bytes: bytes, shape: tuple[int, int]):
  """BFS solution of a perceived board, cached: rollouts and conditions revisit the same boards."""
  return solver.solve(np.frombuffer(level_bytes, np.int8).reshape(shape), max_states=20_000)


def solve_board(board: dict):
  lvl = sokoban_level(**board)
  return None if lvl is None else _solve(lvl.tobytes(), lvl.shape)


def _sokoban_state(walls, targets, boxes, player):
  return types.SimpleNamespace(walls=walls, targets=targets, boxes=boxes, player=np.array(player))


def sokoban_level(walls, targets, boxes, player) -> np.ndarray | None:
  """Level codes for a perceived board; None if the perception is physically impossible."""
  r, c = player
  if walls[r, c] or boxes[r, c] or (boxes & walls).any():
    return None
  lvl = np.where(walls, 1, 0).astype(np.int8)
  lvl[targets] = 2
  lvl[boxes] = np.where(targets[boxes], 4, 3)
  lvl[r, c] = 6 if targets[r, c] else 5
  return lvl


class SokobanPerception:
  fields = ("player", "boxes", "boxes_on_targets", "blocked_moves")

  def clean(self, frame: str) -> dict:
    g = sokoban_grid(frame)
    walls, targets = g == 1, np.isin(g, (2, 4, 6))
    boxes = np.isin(g, (3, 4))
    player = tuple(int(v) for v in np.argwhere(np.isin(g, (5, 6)))[0])
    return {"walls": walls, "targets": targets, "boxes": boxes, "player": player}

  def misread(self, board: dict, rng) -> dict:
    """One box or the player read one column left or right, onto a cell that looks free (tries
    the objects and sides in random order; unchanged only if nothing can shift)."""
    walls, boxes, player = board["walls"], board["boxes"], board["player"]
    items = [("box", tuple(int(v) for v in b)) for b in np.argwhere(boxes)] + [("player", player)]
    options = [(kind, cell, dc) for kind, cell in items for dc in (-1, 1)]
    for j in rng.permutation(len(options)):
      kind, (r, c), dc = options[j]
      if not 0 <= c + dc < walls.shape[1] or walls[r, c + dc] or boxes[r, c + dc] \
          or (r, c + dc) == player:
        continue
      if kind == "player":
        return {**board, "player": (r, c + dc)}
      moved = boxes.copy()
      moved[r, c], moved[r, c + dc] = False, True
      return {**board, "boxes": moved}
    return board

  def facts(self, board: dict) -> dict:
    st = _sokoban_state(board["walls"], board["targets"], board["boxes"], board["player"])
    f = sokoban_text.state_facts(st) if sokoban_level(**board) is not None else None
    if f is None:  # impossible reading: the roles still report what they "saw"
      boxes = [tuple(int(v) for v in b) for b in np.argwhere(board["boxes"])]
      return {"player": list(board["player"]), "boxes": [list(b) for b in boxes],
              "boxes_on_targets": int((board["boxes"] & board["targets"]).sum()),
              "blocked_moves": []}
    return {"player": list(f["player"]), "boxes": [list(b) for b in f["boxes"]],
            "boxes_on_targets": f["num_boxes_on_targets"],
            "blocked_moves": sorted(d for d, o in f["moves"].items() if o == "blocked")}

  def apply(self, board: dict, state: dict) -> dict:
    """A board whose player/boxes come from stated (e.g. verified or revised) facts."""
    out = dict(board)
    if state.get("player") is not None:
      out["player"] = tuple(int(v) for v in state["player"])
    if state.get("boxes") is not None:
      boxes = np.zeros_like(board["boxes"])
      for r, c in state["boxes"]:
        boxes[int(r), int(c)] = True
      out["boxes"] = boxes
    return out

  def act(self, board: dict, rng, mission: str) -> str:
    del mission
    sol = solve_board(board)
    if sol is None or not sol.solvable or not sol.actions:
      return MOVES[int(rng.integers(4))]
    return MOVES[sol.actions[0]]

  def subgoal(self, board: dict, rng) -> str:
    sol = solve_board(board)
    if sol is None or not sol.solvable:
      return "free a box that is not stuck"
    return "moves: " + ", ".join(MOVES[a] for a in sol.actions[:4])


# ---- MiniGrid ---------------------------------------------------------------------------------

_SEEN = re.compile(r"^- an? (.+?) (here|(\d+) steps? (forward|back)(?: and (\d+) steps? (left|right))?"
                   r"|(\d+) steps? (left|right))$")


def _seen_objects(frame: str) -> list[tuple[str, int, int]]:
  out = []
  for line in frame.splitlines():
    m = _SEEN.match(line.strip())
    if not m:
      continue
    name = m.group(1)
    if m.group(7):
      f, r = 0, int(m.group(7)) * (1 if m.group(8) == "right" else -1)
    elif m.group(3):
      f = int(m.group(3)) * (1 if m.group(4) == "forward" else -1)
      r = int(m.group(5) or 0) * (1 if m.group(6) == "right" else -1)
    else:
      f, r = 0, 0
    out.append((name, f, r))
  return out


def _matches(obj: str, noun: str) -> bool:
  return obj == noun or obj.endswith(" " + noun)


class MiniGridPerception:
  fields = ("target_visible", "target_forward", "target_right", "front_object", "carrying")

  def clean(self, frame: str) -> dict:
    mission = re.search(r"Mission: (go to|pick up) (?:a|the) (.+?)\.", frame)
    verb, noun = mission.group(1), mission.group(2)
    carry = re.search(r"You carry (?:a )?(.+?)\.", frame).group(1)
    objs = _seen_objects(frame)
    targets = sorted([(abs(f) + abs(r), f, r) for o, f, r in objs if _matches(o, noun)])
    front = next((o for o, f, r in objs if (f, r) == (1, 0)), "nothing")
    return {"verb": verb, "target": targets[0][1:] if targets else None, "front": front,
            "carrying": carry}

  def misread(self, board: dict, rng) -> dict:
    if board["target"] is None:
      return board
    f, r = board["target"]
    if rng.random() < 0.5:
      r += int(rng.choice([-1, 1]))
    else:
      f = f + 1 if f <= 1 else f + int(rng.choice([-1, 1]))
    return {**board, "target": (f, r)}

  def facts(self, board: dict) -> dict:
    t = board["target"]
    return {"target_visible": t is not None, "target_forward": None if t is None else t[0],
            "target_right": None if t is None else t[1], "front_object": board["front"],
            "carrying": board["carrying"]}

  def apply(self, board: dict, state: dict) -> dict:
    out = dict(board)
    if state.get("target_visible") is False:
      out["target"] = None
    elif state.get("target_forward") is not None and state.get("target_right") is not None:
      out["target"] = (int(state["target_forward"]), int(state["target_right"]))
    return out

  def act(self, board: dict, rng, mission: str) -> str:
    del mission
    free = board["front"] == "nothing"
    if board["target"] is None:  # explore
      if free and rng.random() < 0.75:
        return "go forward"
      return "turn left" if rng.random() < 0.5 else "turn right"
    f, r = board["target"]
    if (f, r) == (1, 0):
      return "pick up" if board["verb"] == "pick up" else "done"
    if f > 0 and (r == 0 or f > 1 or free):
      return "go forward" if free else ("turn left" if r < 0 else "turn right")
    if f > 0:
      return "go forward" if free else ("turn left" if r < 0 else "turn right")
    return "turn left" if r < 0 else "turn right"

  def subgoal(self, board: dict, rng) -> str:
    del rng
    if board["target"] is None:
      return "explore until the target is in view"
    return f"reach the target {board['target'][0]} forward, {board['target'][1]} right"


PERCEPTION = {"sokoban": SokobanPerception, "minigrid": MiniGridPerception,
              **scripted_games.PERCEPTIONS}  # Procgen games and Crafter


# ---- the policy -------------------------------------------------------------------------------

class ConPActScriptedPolicy:
  """See the module docstring. noise rates: "perception", "recheck_miss"; `abstain` is the
  per-field probability of reporting "unknown"/omitting a field."""

  def __init__(self, env: str, noise: NoiseModel, abstain: float = 0.1):
    if env not in PERCEPTION:
      raise KeyError(f"no scripted perception for {env!r}; valid: {', '.join(PERCEPTION)}")
    self.env = env
    self.percept = PERCEPTION[env]()
    self.noise = noise
    self.abstain = abstain
    noise.rate("perception"), noise.rate("recheck_miss")  # fail early on a missing rate

  def decide(self, messages, rng) -> dict:
    system, user, last = messages[0]["content"], messages[1]["content"], messages[-1]["content"]
    role = "planner" if system.startswith("ROLE: planner") else "actor"
    frame = current_frame(user)
    clean = self.percept.clean(frame)
    fired = self.noise.fires("perception", rng)
    board = self.percept.misread(clean, rng) if fired else clean
    verified = verified_state(user)
    if verified is not None:
      board = self.percept.apply(clean, verified)
    facts = self.percept.facts(board)
    if len(messages) > 2 and last.startswith(("CONFLICT:", "CHECK:")):
      # Its own earlier claims, read back from its previous reply (the policy keeps no memory).
      said = parse.parse_assertion(messages[-2]["content"], schemas.get(self.env)).values
      own = {k: schemas.to_json(v) for k, v in said.items() if v is not None}
      if last.startswith("CONFLICT:"):
        # Feedback names the disputed facts, so it looks again carefully: a clean reading of
        # the frame unless the re-check misses; a missed re-check repeats its earlier claims.
        if self.noise.fires("recheck_miss", rng):
          facts = {k: own.get(k, facts[k]) for k in facts}
        else:
          facts = self.percept.facts(clean)
      board = self.percept.apply(clean, facts) if verified is None else board
    keep = {k: v for k, v in facts.items() if rng.random() >= self.abstain}
    out = {"role": role, "state": keep if "<state>" in system else None}
    if role == "planner":
      out["subgoal"] = self.percept.subgoal(board, rng)
    else:
      out["action"] = self.percept.act(board, rng, "")
      out["status"] = "ongoing"
    return out

  def intended(self, messages, rng) -> dict | None:
    """The structured assertion behind the reply (None: no assertion requested); omitted
    fields are absent."""
    return self.decide(messages, rng)["state"]

  def respond(self, messages, rng) -> str:
    d = self.decide(messages, rng)
    parts = ["<think>scripted policy</think>"]
    if d["state"] is not None:
      parts.append("<state>" + render_state(d["state"], self.percept.fields, rng) + "</state>")
    if d["role"] == "planner":
      parts.append(f"<subgoal>{d['subgoal']}</subgoal>")
    else:
      parts.append(f"<action>{d['action']}</action><status>{d['status']}</status>")
    return "".join(parts)


def render_state(state: dict, fields, rng) -> str:
  """The assertion in one of several surface forms a model might use."""
  style = int(rng.integers(3))
  items = {}
  for k in fields:
    if k not in state:
      if rng.random() < 0.5:
        items[k] = "unknown"
      continue
    v = state[k]
    if style == 1 and isinstance(v, list) and v and isinstance(v[0], list):
      v = ", ".join(f"({a}, {b})" for a, b in v)
    elif style == 1 and isinstance(v, bool):
      v = "yes" if v else "no"
    elif style == 2 and isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) for x in v):
      v = tuple(v)
    items[k.replace("_", " ") if style == 1 else k] = v
  if style == 2:
    return repr(items)  # Python literal: single quotes, tuples, True/False/None
  return json.dumps(items)
