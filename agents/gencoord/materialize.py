"""Materialize(C, K, ξ_pub): a validated commitment -> a canonical dispatch plan D.

The selected binding and the shared task structure rebuild the canonical branch at the world's
goal count, the sender's obtain net of its starting inventory (read from the layout, the same
inventory its observation shows); the plan is produced only when the commitment's normalised
paths equal that canonical object (static plan consistency, Table S8) and every task grounds
in this episode's world: a source for each obtained item, an existing station, container or
site. Each task instance gets an id, its
actor, its grounding location, its predecessors from the merged relation P_C and, for the
handoff, a checker attachment naming the intended inventory transfer.
"""
import dataclasses

from agents.gencoord import templates
from agents.gencoord.resolve import Commitment
from agents.gencoord.skills import normalize_path, value
from envs.minecraft import recipes
from envs.minecraft.layout import SOURCES
from envs.minecraft.world import Layout


@dataclasses.dataclass(frozen=True)
class HandoffCheck:
  giver: str
  taker: str
  item: str
  count: int


@dataclasses.dataclass(frozen=True)
class TaskInstance:
  task_id: str
  actor: str
  skill: str
  args: dict
  location: str | None
  preds: tuple
  check: HandoffCheck | None = None


@dataclasses.dataclass(frozen=True)
class DispatchPlan:
  binding: str | None
  tasks: tuple                       # TaskInstance in a topological order of P_C


@dataclasses.dataclass(frozen=True)
class MaterializationError:
  reason: str


def obtain_route(item: str, locations) -> tuple | None:
  """(source location, mined drop, craft-from-drop or None) for resource.obtain, or None."""
  for block, source in SOURCES.items():
    drop, _ = recipes.BLOCK_DROPS[block]
    if drop == item and source in locations:
      return source, drop, None
  recipe = recipes.CRAFTING.get(item)
  if recipe is not None and recipe.grid == 2 and len(recipe.inputs) == 1:
    route = obtain_route(recipe.inputs[0][0], locations)
    if route is not None and route[2] is None:
      return route[0], route[1], item
  return None


def _ground(n, locations) -> tuple:
  """(location or None, error or None) for one normalised task."""
  get = lambda k: value(n, k)  # noqa: E731
  if n.skill == "resource.obtain":
    src = get("from")
    if src is not None:
      return (src, None) if src in locations else (None, f"no source {src!r}")
    route = obtain_route(get("item"), locations)
    return (route[0], None) if route else (None, f"no source yields {get('item')!r}")
  ref = {"resource.deliver": get("dst"), "build.component": get("site"),
         "craft.item": get("station")}.get(n.skill)
  if n.skill.startswith("transform."):
    ref = get("station")
    if locations.get(ref) is None or locations[ref].block != "furnace":
      return None, f"no furnace {ref!r}"
  if ref is not None and ref not in locations:
    return None, f"location {ref!r} is absent from this world"
  return ref, None


_CANON: dict = {}
MEMOISE = True        # benchmarks switch memoisation off for the baseline loop


def canonical_paths(template: templates.Template, binding: str, snd: str, rcv: str,
                    k: int, held=None) -> tuple:
  """Normalised (sender path, receiver path) of the canonical branch of `binding` at goal
  count k, the sender holding `held` ({item: n}) at the start."""
  held = tuple(sorted(dict(held or {}).items()))
  key = (template.name, binding, snd, rcv, k, held)
  hit = _CANON.get(key) if MEMOISE else None
  if hit is None:
    canon = template.branch(binding, snd, rcv, k, dict(held))
    hit = normalize_path(canon.sender_path, snd), normalize_path(canon.receiver_path, rcv)
    if MEMOISE and len(_CANON) < 65_536:
      _CANON[key] = hit
  return hit


def materialize(c: Commitment, template: templates.Template, layout: Layout, goal_count: int,
                episode_id: str = "ep"):
  """D = Materialize(C, K, ξ_pub), or MaterializationError(reason)."""
  if c.binding not in template.bindings:
    return MaterializationError(f"binding {c.binding!r} is not in the public codebook")
  start = layout.agent_starts.get(c.sender)
  held = dict(start[1]) if start is not None else {}
  try:
    canon = canonical_paths(template, c.binding, c.sender, c.receiver, goal_count, held)
  except ValueError as e:          # the sender already holds a whole obtain (no such branch)
    return MaterializationError(str(e))
  if canon != (c.sender_path, c.receiver_path):
    return MaterializationError("commitment differs from the canonical task object of its "
                                "binding")
  preds: dict = {}
  for a, b in c.edges:
    preds.setdefault(b, []).append(a)
  nodes = {("S", k): n for k, n in enumerate(c.sender_path)}
  nodes.update({("R", k): n for k, n in enumerate(c.receiver_path)})
  tid = lambda node: f"{episode_id}/{node[0]}{node[1]}"  # noqa: E731
  order, done = [], set()
  pending = sorted(nodes)
  while pending:                   # deterministic Kahn order: first ready node in (S, R) order
    ready = next((v for v in pending if all(p in done for p in preds.get(v, ()))), None)
    if ready is None:
      return MaterializationError("predecessor relation has a cycle")
    pending.remove(ready)
    done.add(ready)
    order.append(ready)
  tasks = []
  giver, consumer, item, count = c.handoff
  for node in order:
    n = nodes[node]
    loc, why = _ground(n, layout.locations)
    if why:
      return MaterializationError(why)
    check = None
    if node == giver:
      check = HandoffCheck(n.actor, nodes[consumer].actor, item, count)
    tasks.append(TaskInstance(tid(node), n.actor, n.skill, {k: v for k, (_, v) in n.args},
                              loc, tuple(tid(p) for p in preds.get(node, ())), check))
  return DispatchPlan(c.binding, tuple(tasks))
