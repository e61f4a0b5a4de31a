"""Per-environment assertion schemas: the task-relevant state fields both roles report.

A schema is a table of fields, each with a value type; `truth(facts)` maps an env's ground-truth
`state_facts` (envs/*/text.py) onto the same fields. Canonical values are
hashable Python values so that equality is the comparison rule:

  cell     (row, col) / (x, y) int pair              cells    frozenset of int pairs
  int      int                                        bool     bool
  enum     one lower-case word from `choices`         enumset  frozenset of words from `choices`
  text     free lower-case text (articles dropped)    counts   tuple of sorted (name, count > 0)

`None` means "not stated"/"unknown" and never contradicts anything. A truth of None means the
field does not apply to that state (e.g. the target's position when it is not visible); such
fields are not scored for correctness.
"""
import dataclasses
import re
from typing import Any, Callable

DIRECTIONS = ("up", "down", "left", "right")
COMPASS = ("north", "south", "east", "west")
CRAFTER_RESOURCES = ("tree", "water", "stone", "coal", "iron", "diamond", "lava", "table",
                     "furnace", "sand")
_UNKNOWN = {"", "unknown", "?", "n/a", "na", "none stated", "unsure", "not sure", "unclear"}
_INT = re.compile(r"-?\d+")


class InvalidValue(ValueError):
  """A stated value that cannot be read as the field's type (counted, then treated as unknown)."""


@dataclasses.dataclass(frozen=True)
class Field:
  name: str
  kind: str  # cell | cells | int | bool | enum | enumset | text | counts
  doc: str
  choices: tuple[str, ...] = ()


def is_unknown(value: Any) -> bool:
  return value is None or (isinstance(value, str) and value.strip().lower() in _UNKNOWN)


def _pair(v) -> tuple[int, int]:
  if isinstance(v, dict):
    keys = [k for k in ("row", "r", "x") if k in v], [k for k in ("col", "column", "c", "y") if k in v]
    if keys[0] and keys[1]:
      return int(v[keys[0][0]]), int(v[keys[1][0]])
    raise InvalidValue(f"cannot read a cell from {v!r}")
  if isinstance(v, str):
    nums = _INT.findall(v)
    if len(nums) != 2:
      raise InvalidValue(f"a cell needs two integers, got {v!r}")
    return int(nums[0]), int(nums[1])
  if isinstance(v, (list, tuple)) and len(v) == 2 and all(_is_int(x) for x in v):
    return int(v[0]), int(v[1])
  raise InvalidValue(f"cannot read a cell from {v!r}")


def _is_int(x) -> bool:
  return isinstance(x, int) and not isinstance(x, bool) or (isinstance(x, float) and x.is_integer()) \
      or (isinstance(x, str) and _INT.fullmatch(x.strip()) is not None)


def _cells(v) -> frozenset:
  if isinstance(v, str):
    nums = [int(n) for n in _INT.findall(v)]
    if len(nums) % 2:
      raise InvalidValue(f"odd number of coordinates in {v!r}")
    return frozenset(zip(nums[::2], nums[1::2]))
  if isinstance(v, (list, tuple)):
    if len(v) == 2 and all(_is_int(x) for x in v):  # a single cell written without the outer list
      return frozenset([_pair(v)])
    return frozenset(_pair(x) for x in v)
  raise InvalidValue(f"cannot read cells from {v!r}")


def _int(v) -> int:
  if _is_int(v):
    return int(float(v)) if not isinstance(v, str) else int(v.strip())
  if isinstance(v, str) and len(_INT.findall(v)) == 1:
    return int(_INT.findall(v)[0])
  raise InvalidValue(f"cannot read an integer from {v!r}")


def _bool(v) -> bool:
  if isinstance(v, bool):
    return v
  if isinstance(v, (int, float)) and v in (0, 1):
    return bool(v)
  if isinstance(v, str):
    s = v.strip().lower()
    if s in ("true", "yes", "y", "1", "visible", "present"):
      return True
    if s in ("false", "no", "n", "0", "not visible", "absent"):
      return False
  raise InvalidValue(f"cannot read a boolean from {v!r}")


def _word(v, choices) -> str:
  if not isinstance(v, str):
    raise InvalidValue(f"expected one of {choices}, got {v!r}")
  s = v.strip().lower()
  if s not in choices:
    raise InvalidValue(f"{v!r} is not one of {choices}")
  return s


def _words(v, choices) -> frozenset:
  if isinstance(v, str):
    v = [p for p in re.split(r"[,;/\s]+", v) if p] if v.strip().lower() not in ("none", "nothing") else []
  if not isinstance(v, (list, tuple, set, frozenset)):
    raise InvalidValue(f"expected a list of {choices}, got {v!r}")
  return frozenset(_word(x, choices) for x in v)


def _text(v) -> str:
  if v is False or (isinstance(v, (list, tuple)) and not v):
    return "nothing"
  if not isinstance(v, str):
    raise InvalidValue(f"expected text, got {v!r}")
  s = " ".join(v.strip().lower().split())
  s = re.sub(r"^(a|an|the)\s+", "", s)
  return "nothing" if s in ("none", "empty", "nothing", "floor", "empty floor") else s


def _counts(v) -> tuple:
  if isinstance(v, str):
    pairs = re.findall(r"([a-z_]+)\s*[:=x]?\s*(\d+)", v.lower())
    v = {k: int(n) for k, n in pairs}
  if not isinstance(v, dict):
    raise InvalidValue(f"expected name -> count, got {v!r}")
  return tuple(sorted((str(k).strip().lower(), _int(n)) for k, n in v.items() if _int(n) > 0))


_CANON: dict[str, Callable[[Any, tuple], Any]] = {
    "cell": lambda v, c: _pair(v), "cells": lambda v, c: _cells(v), "int": lambda v, c: _int(v),
    "bool": lambda v, c: _bool(v), "enum": _word, "enumset": _words,
    "text": lambda v, c: _text(v), "counts": lambda v, c: _counts(v),
}


def canonical(field: Field, value: Any) -> Any:
  """The canonical form of a stated value; None for unknown; raises InvalidValue."""
  if is_unknown(value):
    return None
  return _CANON[field.kind](value, field.choices)


def to_json(value: Any) -> Any:
  """A canonical value as plain JSON (sets -> sorted lists, counts -> dict)."""
  if isinstance(value, frozenset):
    return sorted(list(x) if isinstance(x, tuple) else x for x in value)
  if isinstance(value, tuple) and value and isinstance(value[0], tuple):
    return dict(value)
  if isinstance(value, tuple):
    return list(value)
  return value


@dataclasses.dataclass(frozen=True)
class Schema:
  env: str
  fields: tuple[Field, ...]
  truth_fn: Callable[[dict], dict]

  @property
  def names(self) -> tuple[str, ...]:
    return tuple(f.name for f in self.fields)

  def field(self, name: str) -> Field:
    for f in self.fields:
      if f.name == name:
        return f
    raise KeyError(f"{self.env} schema has no field {name!r}; fields: {self.names}")

  def truth(self, facts: dict) -> dict:
    """Ground truth as canonical values (None where a field does not apply)."""
    raw = self.truth_fn(facts)
    return {f.name: canonical(f, raw[f.name]) if raw[f.name] is not None else None
            for f in self.fields}

  def describe(self) -> str:
    """The schema as prompt text: one line per field."""
    return "\n".join(f'  "{f.name}": {f.doc}' for f in self.fields)


def _sokoban_truth(f: dict) -> dict:
  return {"player": f["player"], "boxes": f["boxes"], "boxes_on_targets": f["num_boxes_on_targets"],
          "blocked_moves": [d for d, o in f["moves"].items() if o == "blocked"]}


def _minigrid_truth(f: dict) -> dict:
  rel = f["target_relative"]
  return {"target_visible": f["target_visible"],
          "target_forward": rel["forward"] if rel else None,
          "target_right": rel["right"] if rel else None,
          "front_object": f["front_object"],
          "carrying": f["carrying"] or "nothing"}


def _procgen_truth(f: dict) -> dict:
  return {"target_visible": f["target_visible"], "hazard_nearby": f.get("hazard_nearby")}


def _crafter_truth(f: dict) -> dict:
  return {"facing": f["facing"],
          "nearby_resources": [m for m in f["nearby_resources"] if m in CRAFTER_RESOURCES],
          "inventory": f["inventory"], "hazard_nearby": f["hazard_nearby"]}


SCHEMAS = {
    "sokoban": Schema("sokoban", (
        Field("player", "cell", "[row, col] of the player"),
        Field("boxes", "cells", "list of [row, col] of every box"),
        Field("boxes_on_targets", "int", "number of boxes standing on targets"),
        Field("blocked_moves", "enumset", "moves that would do nothing now (subset of up/down/"
              "left/right): a wall, or a box that cannot be pushed", DIRECTIONS),
    ), _sokoban_truth),
    "minigrid": Schema("minigrid", (
        Field("target_visible", "bool", "true if an object matching the mission is in view"),
        Field("target_forward", "int", "steps forward (negative: back) to the nearest target"),
        Field("target_right", "int", "steps right (negative: left) to the nearest target"),
        Field("front_object", "text", 'what is in the cell right in front, e.g. "wall", '
              '"red ball", "locked blue door", "nothing"'),
        Field("carrying", "text", 'the carried object, or "nothing"'),
    ), _minigrid_truth),
    "crafter": Schema("crafter", (
        Field("facing", "enum", "north/south/east/west", COMPASS),
        Field("nearby_resources", "enumset", f"resources in view, from {list(CRAFTER_RESOURCES)}",
              CRAFTER_RESOURCES),
        Field("inventory", "counts", 'item -> count for items held, e.g. {"wood": 2}'),
        Field("hazard_nearby", "bool", "true if a zombie/skeleton/arrow is within 3 steps or lava "
              "within 2"),
    ), _crafter_truth),
}


# Procgen (paper Table 3): the game-specific referents of target_visible and hazard_nearby; maze
# has no hazard_nearby field. Schema names are "procgen-<game>".
PROCGEN_REFERENTS = {
    "bigfish": ("at least one visibly smaller fish", "a larger fish"),
    "chaser": ("at least one uncollected orb", "an enemy that is not vulnerable"),
    "coinrun": ("the goal coin", "a saw, an enemy or a deadly gap"),
    "jumper": ("the carrot", "spikes"),
    "maze": ("the cheese", None),
    "miner": ("at least one diamond", "a boulder or diamond that could fall onto the player"),
}


def _procgen_schema(game: str) -> Schema:
  target, threat = PROCGEN_REFERENTS[game]
  fields = [Field("target_visible", "bool", f"true if {target} is in view")]
  if threat is not None:
    fields.append(Field("hazard_nearby", "bool", f"true if {threat} is near the player"))
  return Schema(f"procgen-{game}", tuple(fields), _procgen_truth)


SCHEMAS.update({f"procgen-{g}": _procgen_schema(g) for g in PROCGEN_REFERENTS})


def get(env: str) -> Schema:
  if env not in SCHEMAS:
    raise KeyError(f"no assertion schema for env {env!r}; valid: {', '.join(SCHEMAS)}")
  return SCHEMAS[env]
