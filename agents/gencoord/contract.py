"""ContractCheck: the typed schema check of a parsed proposal against ξ_pub (separate from parsing).

Rejects unknown keys, wrong value types, non-positive quantities, unknown agents or peers,
self-addressed handoffs, unknown or wrong-kind locations, inadmissible bindings and missing
required fields. `check_proposal` returns a list of readable violations (empty = valid), so a
failure record can say why; `valid_proposal` is the boolean used by the protocol.
"""
from agents.gencoord.dsl import Proposal, Task
from agents.gencoord.episode import PublicInstance
from agents.gencoord.skills import ROLES, SCHEMAS
from envs.minecraft import recipes

_LOCATION_KINDS = {"container": ("chest",), "site": ("site", "marker"),
                   "station": ("station",), "source": ("source",),
                   "loc": ("source", "site", "chest", "station", "marker")}


def _type_error(tag: str, v, actor: str, pub: PublicInstance) -> str | None:
  if tag == "qty":
    ok = type(v) is int and v > 0
    return None if ok else "must be a positive integer"
  if not isinstance(v, str):
    return f"must be a string, got {type(v).__name__}"
  if tag == "item":
    return None if v in recipes.ITEMS else "unknown item"
  if tag == "craftable":
    return None if v in recipes.CRAFTING else "no crafting recipe"
  if tag == "smeltable":
    return None if v in recipes.SMELTING else "cannot be smelted"
  if tag == "fuel":
    return None if v in recipes.FUEL_VALUE else "not a fuel"
  if tag == "agent":
    if v not in pub.agents:
      return "unknown agent"
    return "handoff addressed to its own actor" if v == actor else None
  if tag in _LOCATION_KINDS:
    kind = pub.locations.get(v)
    return None if kind in _LOCATION_KINDS[tag] else f"not a {tag} of this episode"
  if tag == "bind":
    return None if v in pub.codebook else "inadmissible binding"
  if tag == "role":
    return None if v in ROLES else "unknown role"
  if tag == "atom":
    return None
  raise ValueError(f"unknown type tag {tag!r}")


def check_task(t: Task, actor: str, pub: PublicInstance) -> list[str]:
  schema = SCHEMAS.get(t.skill)
  if schema is None:
    return [f"{t.skill}: unknown skill"]
  errors = []
  for key in schema.required:
    if key not in t.args:
      errors.append(f"{t.skill}: missing required {key!r}")
  for key, v in t.args.items():
    tag = schema.required.get(key) or schema.optional.get(key)
    if tag is None:
      errors.append(f"{t.skill}: unknown key {key!r}")
      continue
    why = _type_error(tag, v, actor, pub)
    if why:
      errors.append(f"{t.skill}: {key}={v!r} {why}")
  if t.skill == "resource.deliver" and ("to" in t.args) == ("dst" in t.args):
    errors.append("resource.deliver: needs exactly one of 'to' (agent) or 'dst' (container)")
  if t.skill == "craft.item" and "input" in t.args and t.args.get("item") in recipes.CRAFTING:
    inputs = [i for i, _ in recipes.CRAFTING[t.args["item"]].inputs]
    if t.args["input"] not in inputs:
      errors.append(f"craft.item: input {t.args['input']!r} is not in the recipe {inputs}")
  return errors


def check_proposal(q: Proposal, actor: str, pub: PublicInstance) -> list[str]:
  """All contract violations of proposal `q` made by `actor` (empty list = valid)."""
  if actor not in pub.agents:
    return [f"unknown decision agent {actor!r}"]
  errors = []
  for t in q.self_plan:
    errors += check_task(t, actor, pub)
  for req in q.peer_requests:
    if req.target not in pub.agents:
      errors.append(f"REQ: unknown peer {req.target!r}")
      continue
    if req.target == actor:
      errors.append("REQ: an agent cannot request work from itself")
      continue
    for t in req.requested_plan:
      errors += check_task(t, req.target, pub)
  return errors


def valid_proposal(q: Proposal, actor: str, pub: PublicInstance) -> bool:
  return not check_proposal(q, actor, pub)
