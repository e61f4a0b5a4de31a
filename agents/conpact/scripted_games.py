"""Scripted perception for Procgen and Crafter (used by agents/conpact/scripted.py).

SCRIPTED -- numbers produced with these perceptions are mechanics demonstrations, not model results.

Each perception reads the rendered text frame like a model would (`clean`), misreads one
task-relevant fact when the policy's perception noise fires (`misread`), states the schema's facts
of what it perceived (`facts`), takes stated facts back (`apply`: verified or revised) and acts and
plans on its perceived board, so a wrong assertion comes with the action it implies.

Procgen (one perception per game, schema "procgen-<game>"): the board is the target and hazard
offsets listed in the frame. A misreading flips one schema fact: the visible targets are missed, or
a phantom target is seen one to three cells away; the nearby hazards are missed, or a phantom one
is seen next to the player (not in maze, which has no hazard field). It acts greedily: away from
the nearest perceived hazard, else towards the nearest perceived target, else a random move.

Crafter: the board is the facing, the faced thing, the inventory, the materials and creatures in
view (offsets from the frame). A misreading is one of: an inventory count one off (a stale count,
paper Figure 10), a resource in view missed, or the hazard missed. It plays the first tool
milestone: flee a threat within reach, collect wood, place a table once it believes it holds the
wood a table needs, make a wood pickaxe next to the table.
"""
import re

from agents.conpact import schemas

_PHRASE = re.compile(r"(\d+(?:\.\d+)?) (up|down|left|right)")
PROCGEN_MOVES = ("left_down", "left", "left_up", "down", "noop", "up", "right_down", "right",
                 "right_up")  # procgen's action order: index = 3 * (vx + 1) + (vy + 1)


def _procgen_offset(phrase: str) -> tuple[float, float]:
  dx = dy = 0.0
  for num, word in _PHRASE.findall(phrase):
    v = float(num)
    if word in ("up", "down"):
      dy = v if word == "up" else -v
    else:
      dx = v if word == "right" else -v
  return dx, dy


def _sign(v: float) -> int:
  return 0 if abs(v) < 0.25 else (1 if v > 0 else -1)


def _move(vx: int, vy: int) -> str:
  return PROCGEN_MOVES[3 * (vx + 1) + (vy + 1)]


def _nearest(offsets):
  return min(offsets, key=lambda d: (abs(d[0]) + abs(d[1]), d)) if offsets else None


class ProcgenPerception:
  """Perception of one Procgen game's text frame; see the module docstring."""

  def __init__(self, game: str):
    self.game = game
    self.fields = schemas.get(f"procgen-{game}").names
    self.has_hazard = "hazard_nearby" in self.fields

  def clean(self, frame: str) -> dict:
    targets, hazards = [], []
    m = re.search(r"^Targets in view \((\d+), nearest first\): (.*)$", frame, re.M)
    if m:
      shown = [p for p in m.group(2).rstrip(".").split("; ") if not p.startswith("and ")]
      targets = [_procgen_offset(p) for p in shown]
    m = re.search(r"^Hazards nearby: (.*)\.$", frame, re.M)
    if m:
      hazards = [_procgen_offset(p) for p in m.group(1).split("; ")]
    return {"targets": targets, "hazards": hazards}

  def misread(self, board: dict, rng) -> dict:
    options = ["miss_targets" if board["targets"] else "phantom_target"]
    if self.has_hazard:
      options.append("miss_hazards" if board["hazards"] else "phantom_hazard")
    kind = options[int(rng.integers(len(options)))]
    if kind == "miss_targets":
      return {**board, "targets": []}
    if kind == "phantom_target":
      return {**board, "targets": [(float(rng.choice([-1, 1]) * rng.integers(1, 4)),
                                    float(rng.integers(-1, 2)))]}
    if kind == "miss_hazards":
      return {**board, "hazards": []}
    return {**board, "hazards": [(float(rng.choice([-1, 1])), 0.0)]}

  def facts(self, board: dict) -> dict:
    out = {"target_visible": bool(board["targets"])}
    if self.has_hazard:
      out["hazard_nearby"] = bool(board["hazards"])
    return out

  def apply(self, board: dict, state: dict) -> dict:
    out = dict(board)
    if state.get("target_visible") is False:
      out["targets"] = []
    if state.get("hazard_nearby") is False:
      out["hazards"] = []
    return out

  def act(self, board: dict, rng, mission: str) -> str:
    del mission
    hazard = _nearest(board["hazards"])
    if hazard is not None:
      return _move(-_sign(hazard[0]) or int(rng.choice([-1, 1])), -_sign(hazard[1]))
    moving = [t for t in board["targets"] if _sign(t[0]) or _sign(t[1])]
    target = _nearest(moving)
    if target is not None:
      return _move(_sign(target[0]), _sign(target[1]))
    return PROCGEN_MOVES[int(rng.choice([0, 1, 2, 3, 5, 6, 7, 8]))]

  def subgoal(self, board: dict, rng) -> str:
    del rng
    if board["hazards"]:
      return "move away from the hazard at {:.1f} right, {:.1f} up".format(*_nearest(board["hazards"]))
    if board["targets"]:
      return "reach the target at {:.1f} right, {:.1f} up".format(*_nearest(board["targets"]))
    return "explore until a target is in view"


# ---- Crafter ----------------------------------------------------------------------------------

_STEP = re.compile(r"(\d+) steps? (north|south|east|west)")
_COMPASS_MOVE = {"north": "move_up", "south": "move_down", "west": "move_left", "east": "move_right"}
_THREATS = ("zombie", "skeleton", "arrow")


def _crafter_offset(phrase: str) -> tuple[int, int]:
  dx = dy = 0
  for num, word in _STEP.findall(phrase):
    if word in ("north", "south"):
      dy = -int(num) if word == "north" else int(num)
    else:
      dx = -int(num) if word == "west" else int(num)
  return dx, dy


def _towards(dx: int, dy: int) -> str:
  if abs(dx) >= abs(dy) and dx:
    return "move_right" if dx > 0 else "move_left"
  return "move_down" if dy > 0 else "move_up"


class CrafterPerception:
  """Perception of Crafter's text frame; see the module docstring."""
  fields = schemas.get("crafter").names

  def __init__(self, table_wood: int):
    self.table_wood = table_wood

  def clean(self, frame: str) -> dict:
    face = re.search(r"^You face (\w+): (.+) is 1 step", frame, re.M)
    inv = re.search(r"^Inventory: (.*)\.$", frame, re.M).group(1)
    inventory = {} if inv == "empty" else {k: int(n) for k, n in
                                           (p.rsplit(" ", 1) for p in inv.split(", "))}
    materials, creatures = {}, []
    for line in frame.splitlines():
      m = re.match(r"^- ([a-z ]+): (?:(\d+) cells?, nearest )?(.+)$", line)
      if not m:
        continue
      if m.group(2):
        materials[m.group(1)] = _crafter_offset(m.group(3))
      else:
        creatures.append((m.group(1), _crafter_offset(m.group(3))))
    dist = lambda o: abs(o[0]) + abs(o[1])
    hazard = any(k in _THREATS and dist(o) <= 3 for k, o in creatures) \
        or ("lava" in materials and dist(materials["lava"]) <= 2)
    return {"facing": face.group(1), "faced": face.group(2), "inventory": inventory,
            "materials": materials, "creatures": creatures, "hazard": hazard}

  def misread(self, board: dict, rng) -> dict:
    options = ["inventory", "hazard"]
    resources = [k for k in board["materials"] if k in schemas.CRAFTER_RESOURCES]
    if resources:
      options.append("resource")
    kind = options[int(rng.integers(len(options)))]
    if kind == "inventory":
      inv = dict(board["inventory"])
      item = "wood" if "wood" in inv or not inv else str(rng.choice(sorted(inv)))
      inv[item] = max(0, inv.get(item, 0) + (1 if inv.get(item, 0) == 0 else int(rng.choice([-1, 1]))))
      return {**board, "inventory": {k: v for k, v in inv.items() if v > 0}}
    if kind == "resource":
      gone = str(rng.choice(resources))
      return {**board, "materials": {k: v for k, v in board["materials"].items() if k != gone}}
    return {**board, "hazard": not board["hazard"]}

  def facts(self, board: dict) -> dict:
    return {"facing": board["facing"],
            "nearby_resources": [m for m in sorted(board["materials"]) if m in schemas.CRAFTER_RESOURCES],
            "inventory": dict(board["inventory"]), "hazard_nearby": board["hazard"]}

  def apply(self, board: dict, state: dict) -> dict:
    out = dict(board)
    if state.get("inventory") is not None:
      out["inventory"] = {str(k): int(v) for k, v in dict(state["inventory"]).items()}
    if state.get("hazard_nearby") is not None:
      out["hazard"] = bool(state["hazard_nearby"])
    if state.get("nearby_resources") is not None:
      seen = set(state["nearby_resources"])
      out["materials"] = {k: v for k, v in board["materials"].items()
                          if k not in schemas.CRAFTER_RESOURCES or k in seen}
    return out

  def _goal(self, board: dict) -> tuple[str, str | None]:
    inv, mats = board["inventory"], board["materials"]
    if board["hazard"]:
      threats = [o for k, o in board["creatures"] if k in _THREATS]
      if threats:
        return "flee", None
    if inv.get("wood_pickaxe"):
      return "done", None
    if "table" in mats and inv.get("wood", 0) >= 1:
      return "make", "table"
    if "table" not in mats and inv.get("wood", 0) >= self.table_wood:
      return "place", None
    return "wood", "tree"

  def act(self, board: dict, rng, mission: str) -> str:
    del mission
    goal, near = self._goal(board)
    if goal == "flee":
      threat = min((o for k, o in board["creatures"] if k in _THREATS),
                   key=lambda o: abs(o[0]) + abs(o[1]))
      return _towards(-threat[0], -threat[1]) if threat != (0, 0) else "move_left"
    if goal == "place":
      return "place_table"
    if goal == "make":
      dx, dy = board["materials"]["table"]
      return "make_wood_pickaxe" if max(abs(dx), abs(dy)) <= 1 else _towards(dx, dy)
    if goal == "wood":
      if board["faced"] == "tree":
        return "do"
      if "tree" in board["materials"]:
        return _towards(*board["materials"]["tree"])
    return str(rng.choice(list(_COMPASS_MOVE.values())))

  def subgoal(self, board: dict, rng) -> str:
    del rng
    goal, _ = self._goal(board)
    wood = board["inventory"].get("wood", 0)
    return {"flee": "move away from the threat", "done": "keep the pickaxe and survive",
            "make": "make a wood pickaxe at the table", "place": f"place a table (wood {wood})",
            "wood": f"collect wood (have {wood})"}[goal]


def crafter_perception() -> CrafterPerception:
  """Crafter's perception, with the wood a table costs read from crafter's own rules."""
  # crafter is an optional dependency (the `envs` extra): imported only when Crafter is asked for
  from crafter import constants  # pylint: disable=import-outside-toplevel
  return CrafterPerception(int(constants.place["table"]["uses"]["wood"]))


PERCEPTIONS = {"crafter": crafter_perception,
               **{f"procgen-{g}": (lambda g=g: ProcgenPerception(g)) for g in schemas.PROCGEN_REFERENTS}}
