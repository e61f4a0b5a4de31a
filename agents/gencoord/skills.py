"""Skill ontology and typed schema of the shared executable prior (S and Θ of K = (S, G, Θ, Γ)).

Each skill lists its required and optional argument keys with a type tag; `contract.py` checks
these tags against a public episode instantiation. `normalize_path` is N_path: alias keys are
already canonical after parsing, typed defaults are filled in (e.g. `craft.item` consumes its
recipe input, quantity 1, at a crafting table when the recipe needs one), and every task gets
its actor (Actorize), so two paths are semantically equal exactly when their normal forms are.
"""
import dataclasses

from agents.gencoord.dsl import SKILLS, Task
from envs.minecraft import recipes


@dataclasses.dataclass(frozen=True)
class SkillSchema:
  required: dict         # key -> type tag
  optional: dict         # key -> type tag


_COMMON = {"bind": "bind"}
SCHEMAS = {
    "control.wait": SkillSchema({}, {**_COMMON, "ticks": "qty"}),
    "resource.obtain": SkillSchema({"q": "qty", "item": "item"},
                                   {**_COMMON, "from": "source", "loc": "loc"}),
    "resource.deliver": SkillSchema(
        {"q": "qty", "item": "item"},
        {**_COMMON, "to": "agent", "dst": "container", "dst_role": "role", "from": "loc",
         "loc": "loc"}),
    "craft.item": SkillSchema({"item": "craftable"},
                              {**_COMMON, "q": "qty", "input": "item", "station": "station"}),
    "transform.supply_input": SkillSchema({"q": "qty", "item": "smeltable",
                                           "station": "station"}, dict(_COMMON)),
    "transform.supply_fuel": SkillSchema({"q": "qty", "item": "fuel", "station": "station"},
                                         dict(_COMMON)),
    "transform.collect_output": SkillSchema({"q": "qty", "item": "item", "station": "station"},
                                            dict(_COMMON)),
    "build.component": SkillSchema({"q": "qty", "item": "item", "site": "site"},
                                   {**_COMMON, "component": "atom"}),
}
assert set(SCHEMAS) == set(SKILLS)
ROLES = ("sender", "receiver", "requester", "peer")


def task(skill: str, **args) -> Task:
  """Builds a Task; keyword `from_` stands for the reserved word `from`."""
  if "from_" in args:
    args["from"] = args.pop("from_")
  return Task(skill, args)


def defaults(skill: str, args: dict) -> dict:
  """Typed defaults of the canonical schema (filled in before comparing paths)."""
  out = dict(args)
  if skill == "craft.item":
    recipe = recipes.CRAFTING.get(out.get("item"))
    out.setdefault("q", 1)
    if recipe is not None:
      out.setdefault("input", recipe.inputs[0][0])
      if recipe.grid == 3:
        out.setdefault("station", "crafting_table")
  elif skill == "build.component":
    out.setdefault("component", "platform")
  elif skill == "control.wait":
    out.setdefault("ticks", 20)
  return out


@dataclasses.dataclass(frozen=True)
class NormTask:
  """A grounded task after normalisation: actor, skill and sorted (key, value) pairs."""
  actor: str
  skill: str
  args: tuple


def normalize_task(t: Task, actor: str) -> NormTask:
  args = defaults(t.skill, dict(t.args))
  # Type-tagged values keep 1 and True (equal in Python) from comparing equal.
  return NormTask(actor, t.skill, tuple(sorted((k, (type(v).__name__, v))
                                               for k, v in args.items())))


def normalize_path(tasks, actor: str) -> tuple:
  """N_path(Actorize(tasks, actor))."""
  return tuple(normalize_task(t, actor) for t in tasks)


def value(norm: NormTask, key: str, default=None):
  for k, (_, v) in norm.args:
    if k == key:
      return v
  return default


def consumes(norm: NormTask) -> dict:
  """Items a normalised task takes out of its actor's inventory: {item: count}."""
  skill, get = norm.skill, (lambda k, d=None: value(norm, k, d))
  if skill == "craft.item":
    recipe = recipes.CRAFTING.get(get("item"))
    if recipe is None:
      return {}
    times = recipes.crafts_needed(recipe.output, get("q", 1))
    return {item: n * times for item, n in recipe.inputs}
  if skill in ("resource.deliver", "build.component", "transform.supply_input",
               "transform.supply_fuel"):
    return {get("item"): get("q")}
  return {}


def produces(norm: NormTask) -> dict:
  """Items a normalised task adds to its actor's inventory: {item: count}."""
  skill, get = norm.skill, (lambda k, d=None: value(norm, k, d))
  if skill == "craft.item":
    recipe = recipes.CRAFTING.get(get("item"))
    if recipe is None:
      return {}
    return {recipe.output: recipe.count * recipes.crafts_needed(recipe.output, get("q", 1))}
  if skill in ("resource.obtain", "transform.collect_output"):
    return {get("item"): get("q")}
  return {}
