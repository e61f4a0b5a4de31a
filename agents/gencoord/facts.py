"""Instance facts of a world: the goal count and every agent's starting inventory.

Instance goals, capabilities, inventories and bindings stay local to the agents (paper §3.1);
the commitment depends on them. A world (one binding pair: the clusters that share a world
variant) samples its facts once, from a NumPy generator seeded by its variant, so both bindings
and both role views of the pair see the same facts:

  goal_count  k, uniform in 1..4 orders; every quantity of the template scales with it
              (`Template.compose(binding, snd, rcv, k)`).
  inventory   per agent, besides the wooden pickaxe every agent starts with:
              - h of the item the sender path obtains, uniform in [0, need), need = the
                smallest obtain quantity of the pair's bindings at k. The sender obtains
                need - h (templates.net_of_holdings), which stays >= 1, so every branch keeps
                its obtain step (the single-step control's first step) and its shape.
              - the fuel its template feeds a furnace (the transform motifs), 0-4 above need;
              - 0-2 spare items (1-16 each) that no path or terminal predicate of the template
                names, which no branch reads: a commitment must take the count of the right
                item, not the count of whatever is held.

Training and evaluation draw their worlds from one distribution over disjoint halves of the view
space. A prompt is fixed by (template, agent, goal count, inventory) plus the binding or request;
`view_side` hashes that view key into "train" (1 - EVAL_SHARE of keys) or "eval", and `sample`
redraws a world, from the same generator, until every agent's view lies on the pool's side. So no
evaluation prompt is a training prompt, and both pools follow the same rule (rejecting against
the training pool's own views instead would leave evaluation the views training rarely draws:
busier inventories, larger counts).
"""
import dataclasses
import functools
import hashlib

import numpy as np

from agents.gencoord import templates
from agents.gencoord.materialize import obtain_route
from envs.minecraft import recipes
from envs.minecraft.layout import STARTING_KIT, make_layout

GOAL_COUNTS = (1, 2, 3, 4)
SPARE_POOL = ("oak_log", "oak_planks", "cobblestone", "sand", "coal", "stick", "stone",
              "glass", "charcoal")
SPARE_KINDS_MAX = 2
SPARE_MAX = 16
FUEL_EXTRA_MAX = 4
SEED = 4_801          # the facts' own stream; make_layout draws positions from another
MAX_DRAWS = 1_000
EVAL_SHARE = 0.25     # the share of view keys evaluation pools draw from
SIDES = ("train", "eval")
assert set(SPARE_POOL) <= recipes.ITEMS


@dataclasses.dataclass(frozen=True)
class Facts:
  goal_count: int
  inventories: tuple   # ((agent, ((item, count), ...)), ...): sampled items, pickaxe excluded

  def inventory(self, agent: str) -> dict:
    return dict(dict(self.inventories).get(agent, ()))


def _items(task) -> set:
  return {v for k, v in task.args.items() if k in ("item", "input")}


@functools.lru_cache(maxsize=None)
def touched(template_name: str) -> frozenset:
  """Items any branch of the template names (paths, terminal predicates, mined drops)."""
  tmpl = templates.get(template_name)
  out: set = set()
  for b in tmpl.bindings:
    br = tmpl.branch(b, "snd", "rcv", 1)
    for t in br.sender_path + br.receiver_path:
      out |= _items(t)
    out |= {p.item for p in br.terminal}
  locations = make_layout(0).locations
  for item in list(out):
    route = obtain_route(item, locations)
    if route is not None:
      out.add(route[1])             # the dropped block the obtain mines (oak_log for planks)
  return frozenset(out)


def obtain_needs(template_name: str, bindings: tuple, k: int) -> dict:
  """item -> smallest quantity the sender path of every binding obtains at goal count k."""
  tmpl = templates.get(template_name)
  per = []
  for b in bindings:
    got: dict = {}
    for t in tmpl.branch(b, "snd", "rcv", k).sender_path:
      if t.skill == "resource.obtain":
        got.setdefault(t.args["item"], t.args["q"])
    per.append(got)
  common = set.intersection(*(set(p) for p in per))
  return {item: min(p[item] for p in per) for item in sorted(common)}


def fuel_needs(template_name: str, bindings: tuple, k: int) -> dict:
  """item -> largest quantity any path of the bindings feeds a furnace as fuel at k."""
  tmpl = templates.get(template_name)
  out: dict = {}
  for b in bindings:
    br = tmpl.branch(b, "snd", "rcv", k)
    for t in br.sender_path + br.receiver_path:
      if t.skill == "transform.supply_fuel":
        out[t.args["item"]] = max(out.get(t.args["item"], 0), t.args["q"])
  return out


def view_key(template_name: str, agent: str, goal_count: int, inventory) -> tuple:
  """What fixes an agent's model-visible view of a world besides binding and request
  (`inventory`: the whole starting inventory it observes, the starting kit included)."""
  return (template_name, agent, goal_count, tuple(sorted(dict(inventory).items())))


def view_side(key: tuple) -> str:
  """"train" or "eval": which pools may hold view `key` (a fixed hash of its repr, so the
  partition does not depend on the order or number of worlds drawn)."""
  digest = hashlib.sha256(repr(key).encode("utf-8")).digest()
  return "eval" if int.from_bytes(digest[:8], "big") < EVAL_SHARE * 2 ** 64 else "train"


def _draw(rng, template_name, bindings, agents, goal_counts) -> Facts:
  k = int(rng.choice(goal_counts))
  needs = obtain_needs(template_name, bindings, k)
  fuel = fuel_needs(template_name, bindings, k)
  if set(needs) & set(fuel):
    raise ValueError(f"{template_name}: an obtained item is also fuel: {set(needs) & set(fuel)}")
  spares = [s for s in SPARE_POOL if s not in touched(template_name)]
  inventories = []
  for agent in agents:
    inv = {item: int(rng.integers(0, need)) for item, need in needs.items()}
    inv.update({item: q + int(rng.integers(0, FUEL_EXTRA_MAX + 1)) for item, q in fuel.items()})
    n_spare = int(rng.integers(0, SPARE_KINDS_MAX + 1))
    for item in rng.choice(spares, size=min(n_spare, len(spares)), replace=False):
      inv[str(item)] = int(rng.integers(1, SPARE_MAX + 1))
    inventories.append((agent, tuple(sorted((i, n) for i, n in inv.items() if n > 0))))
  return Facts(k, tuple(inventories))


def sample(template_name: str, bindings: tuple, variant: int, agents: tuple, side: str,
           goal_counts: tuple = GOAL_COUNTS) -> Facts:
  """The facts of world `variant` for a pair of `bindings` of a template.

  Args:
    template_name: the template the world instantiates.
    bindings: the bindings that share this world (a binding pair, or one binding).
    variant: the world variant; it seeds the generator.
    agents: the agents whose inventories are drawn.
    side: "train" for a training pool, "eval" for a validation or evaluation pool; every
      agent's view of the world lies on it (`view_side`).
    goal_counts: the goal counts to draw from (a template whose binding carries the count
      passes (1,)).
  Returns:
    The first draw, in the generator's order, whose views all lie on `side`.
  Raises:
    ValueError: `side` is not one of SIDES.
    RuntimeError: no admissible draw in MAX_DRAWS.
  """
  if side not in SIDES:
    raise ValueError(f"side must be one of {SIDES}, got {side!r}")
  rng = np.random.default_rng((SEED, int(variant)))
  for _ in range(MAX_DRAWS):
    f = _draw(rng, template_name, tuple(bindings), tuple(agents), tuple(goal_counts))
    if all(view_side(view_key(template_name, a, f.goal_count, {**STARTING_KIT, **dict(inv)}))
           == side for a, inv in f.inventories):
      return f
  raise RuntimeError(f"{template_name} variant {variant}: no draw in {MAX_DRAWS} has every "
                     f"view on the {side} side")
