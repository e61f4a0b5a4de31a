"""Crafter as a host-loop text environment for LLM agents, over the `crafter` package.

`CrafterText.reset(seed) -> (text, info)`, `step(action) -> (text, reward, terminated, truncated,
info)`; `terminated` is the player's death, `truncated` the step limit. Rewards are crafter's own
(+1 per first unlock of an achievement, +-0.1 per health point). Progression is unlocked
achievements / 22.

The text view describes what the agent sees, the 9x7 window crafter renders (4 cells east and west,
3 north and south): status, inventory, the faced cell, every creature in the window with its exact
offset, and every terrain/resource type in the window with its count and nearest cell. Offsets are
written as axis steps ("2 steps north and 1 step west"), never as diagonals, because the agent can
only move along the axes. North is `move_up` (y - 1), south `move_down`, west `move_left` (x - 1),
east `move_right`.

`state_facts(env)` is the ground truth assertions are checked against: inventory, vitals, faced
cell, nearby resources and creatures with offsets, and `hazard_nearby` = a zombie, skeleton or
arrow within HAZARD_CREATURE_DISTANCE steps (Manhattan) or lava within HAZARD_LAVA_DISTANCE steps.
"""
import collections
import copy

import crafter
from crafter import constants, objects

VIEW_RADIUS = (4, 3)  # (x, y) half-extent of crafter's rendered local view for view=(9, 9)
NUM_ACHIEVEMENTS = len(constants.achievements)  # 22
HAZARD_CREATURE_DISTANCE = 3
HAZARD_LAVA_DISTANCE = 2
ACTION_NAMES = tuple(constants.actions)
_DIRECTION_NAMES = {(0, -1): "north", (0, 1): "south", (-1, 0): "west", (1, 0): "east"}
_CREATURES = {objects.Zombie: "zombie", objects.Skeleton: "skeleton", objects.Cow: "cow",
              objects.Arrow: "arrow", objects.Plant: "plant"}


def offset_phrase(dx: int, dy: int) -> str:
  """(dx, dy) in world cells -> "2 steps north and 1 step west"; axis steps only."""
  parts = []
  if dy:
    parts.append(f"{abs(dy)} step{'s' if abs(dy) > 1 else ''} {'north' if dy < 0 else 'south'}")
  if dx:
    parts.append(f"{abs(dx)} step{'s' if abs(dx) > 1 else ''} {'west' if dx < 0 else 'east'}")
  return " and ".join(parts) or "at your position"


def _creature_name(obj) -> str:
  name = _CREATURES.get(type(obj), type(obj).__name__.lower())
  return "ripe plant" if isinstance(obj, objects.Plant) and obj.ripe else name


def _window(env):
  """Yields (dx, dy, material, object) for every in-world cell of the view window."""
  px, py = (int(v) for v in env._player.pos)
  for dy in range(-VIEW_RADIUS[1], VIEW_RADIUS[1] + 1):
    for dx in range(-VIEW_RADIUS[0], VIEW_RADIUS[0] + 1):
      material, obj = env._world[(px + dx, py + dy)]
      if material is not None:
        yield dx, dy, material, obj


def _nearest_key(offset):
  dx, dy = offset
  return (abs(dx) + abs(dy), dy, dx)  # ties: northmost, then westmost, so the text is deterministic


def state_facts(env) -> dict:
  """Ground truth of a live `crafter.Env` (after reset); see the module docstring."""
  player = env._player
  materials: dict[str, list[tuple[int, int]]] = {}
  creatures = []
  for dx, dy, material, obj in _window(env):
    if (dx, dy) != (0, 0):  # the ground under the player is not something to walk to
      materials.setdefault(material, []).append((dx, dy))
    if obj is not None and obj is not player:
      creatures.append({"kind": _creature_name(obj), "offset": (dx, dy), "direction": offset_phrase(dx, dy)})
  creatures.sort(key=lambda c: _nearest_key(c["offset"]))
  nearby = {}
  for material, cells in sorted(materials.items()):
    near = min(cells, key=_nearest_key)
    nearby[material] = {"count": len(cells), "nearest": near, "direction": offset_phrase(*near)}
  fx, fy = (int(v) for v in player.facing)
  faced_material, faced_obj = env._world[(int(player.pos[0]) + fx, int(player.pos[1]) + fy)]
  dist = lambda o: abs(o[0]) + abs(o[1])
  hazard = any(c["kind"] in ("zombie", "skeleton", "arrow") and dist(c["offset"]) <= HAZARD_CREATURE_DISTANCE
               for c in creatures)
  hazard |= any(dist(o) <= HAZARD_LAVA_DISTANCE for o in materials.get("lava", []))
  unlocked = sorted(name for name, n in player.achievements.items() if n > 0)
  return {
      "position": (int(player.pos[0]), int(player.pos[1])),
      "facing": _DIRECTION_NAMES[(fx, fy)],
      "faced_material": faced_material,
      "faced_object": None if faced_obj is None else _creature_name(faced_obj),
      "vitals": {k: int(player.inventory[k]) for k in ("health", "food", "drink", "energy")},
      "inventory": {k: int(v) for k, v in player.inventory.items()
                    if k not in ("health", "food", "drink", "energy") and v > 0},
      "sleeping": bool(player.sleeping),
      "nearby_resources": nearby,
      "nearby_creatures": creatures,
      "hazard_nearby": bool(hazard),
      "achievements": unlocked,
      "progression": len(unlocked) / NUM_ACHIEVEMENTS,
  }


def admissible_actions(env) -> list[str]:
  """Actions that can take effect now, by crafter's own rules (`constants.place`/`make`).

  Movement, noop, do and sleep are always admissible; place_* needs the items and a free faced cell
  of an allowed material; make_* needs the items and the required stations in the 3x3 around the
  player. While asleep only noop and sleep are listed (crafter turns every action into sleep).
  """
  player = env._player
  if player.sleeping:
    return ["noop", "sleep"]
  out = [a for a in ACTION_NAMES if not a.startswith(("place_", "make_"))]
  target = (int(player.pos[0] + player.facing[0]), int(player.pos[1] + player.facing[1]))
  material, obj = env._world[target]
  has = lambda uses: all(player.inventory[k] >= v for k, v in uses.items())
  near, _ = env._world.nearby(player.pos, 1)
  for action in ACTION_NAMES:
    kind, _, name = action.partition("_")
    if kind == "place":
      info = constants.place[name]
      if obj is None and material in info["where"] and has(info["uses"]):
        out.append(action)
    elif kind == "make":
      info = constants.make[name]
      if all(u in near for u in info["nearby"]) and has(info["uses"]):
        out.append(action)
  return out


def render_text(env) -> str:
  f = state_facts(env)
  v = f["vitals"]
  inventory = ", ".join(f"{k} {n}" for k, n in f["inventory"].items()) or "empty"
  faced = f["faced_object"] or f["faced_material"] or "the edge of the world"
  lines = [
      f"Status: health {v['health']}/9, food {v['food']}/9, drink {v['drink']}/9, energy {v['energy']}/9"
      + (", sleeping." if f["sleeping"] else "."),
      f"Inventory: {inventory}.",
      f"You face {f['facing']}: {faced} is 1 step {f['facing']}.",
      f"In view (up to {VIEW_RADIUS[0]} steps east/west and {VIEW_RADIUS[1]} north/south):",
  ]
  for c in f["nearby_creatures"]:
    lines.append(f"- {c['kind']}: {c['direction']}")
  for material, info in f["nearby_resources"].items():
    lines.append(f"- {material}: {info['count']} cell{'s' if info['count'] > 1 else ''}, "
                 f"nearest {info['direction']}")
  lines.append(f"Achievements: {len(f['achievements'])}/{NUM_ACHIEVEMENTS}"
               + (f" ({', '.join(f['achievements'])})." if f["achievements"] else "."))
  lines.append("Actions: " + ", ".join(admissible_actions(env)) + ".")
  return "\n".join(lines)


_WORLDS: collections.OrderedDict = collections.OrderedDict()  # (seed, area, max_steps) -> env
WORLD_CACHE_SIZE = 256


def _fresh_env(seed: int, area, max_steps: int):
  env = crafter.Env(area=area, length=max_steps, seed=int(seed))
  env.reset()
  return env


def _reset_env(seed: int, area, max_steps: int):
  """A just-reset crafter env: a copy of the cached world of this seed (world generation takes
  about 2 s; a copy of the reset env, its RNG state included, is the same episode start)."""
  key = (int(seed), tuple(area), int(max_steps))
  if key not in _WORLDS:
    _WORLDS[key] = _fresh_env(seed, area, max_steps)
    if len(_WORLDS) > WORLD_CACHE_SIZE:
      _WORLDS.popitem(last=False)
  _WORLDS.move_to_end(key)
  return copy.deepcopy(_WORLDS[key])


class CrafterText:
  """Host-loop Crafter with text observations; a fresh crafter world per `reset(seed)`.

  With `reuse_worlds`, a seed's world is generated once per process and each reset starts from a
  copy of it (for evaluations that reset the same seeds many times).
  """

  def __init__(self, max_steps: int = 10000, area=(64, 64), reuse_worlds: bool = False):
    self.max_steps = max_steps
    self.area = area
    self.reuse_worlds = reuse_worlds
    self.env = None

  @property
  def action_names(self) -> tuple[str, ...]:
    return ACTION_NAMES

  def reset(self, seed: int):
    make = _reset_env if self.reuse_worlds else _fresh_env
    self.env = make(seed, self.area, self.max_steps)
    return render_text(self.env), self._info()

  def step(self, action: int | str):
    if self.env is None:
      raise RuntimeError("call reset(seed) before step")
    if isinstance(action, str):
      if action not in ACTION_NAMES:
        raise ValueError(f"unknown Crafter action {action!r}; valid: {', '.join(ACTION_NAMES)}")
      action = ACTION_NAMES.index(action)
    if not 0 <= int(action) < len(ACTION_NAMES):
      raise ValueError(f"Crafter action index {action} out of range 0..{len(ACTION_NAMES) - 1}")
    _, reward, done, info = self.env.step(int(action))
    terminated = info["discount"] == 0.0
    truncated = bool(done and not terminated)
    return render_text(self.env), float(reward), bool(terminated), truncated, self._info()

  def _info(self) -> dict:
    facts = state_facts(self.env)
    return {"state_facts": facts, "progression": facts["progression"],
            "admissible_actions": admissible_actions(self.env), "step": int(self.env._step)}


def make_crafter_text(max_steps: int = 10000) -> CrafterText:
  return CrafterText(max_steps=max_steps)
