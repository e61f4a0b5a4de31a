"""The eight forward task templates (Table S4): four families, two balanced bindings each.

A template is the public task structure for one coordination edge: `compose(binding, snd, rcv,
k)` returns the branch selected by `binding` (sender path, requested receiver path, terminal
world predicate) for a goal count of `k` orders (every quantity scales with k). `branch(...,
held=)` then nets the sender's starting holdings out of its obtain steps (`net_of_holdings`: it
obtains what the goal needs minus what it holds). This is the deterministic public composer that
the rule policies, the data builder, the resolver and the materializer share. The active binding
is private to the sender; the receiver sees the template and both admissible branches, never
which one is on. Goal count and inventories are the world's facts (facts.py).

Every requested path carries `bind=<binding>` on its first task, as in the paper's examples.
"""
import dataclasses
import importlib
from typing import Callable

from agents.gencoord.skills import task
from envs.minecraft.predicates import Built, ChestHolds, Holds


@dataclasses.dataclass(frozen=True)
class Branch:
  sender_path: tuple
  receiver_path: tuple
  terminal: tuple


@dataclasses.dataclass(frozen=True)
class Template:
  name: str
  family: str
  title: str
  material: str
  bindings: tuple                  # balanced admissible bindings (public codebook, in order)
  changed_field: str
  compose: Callable                # (binding, snd, rcv, k) -> Branch
  counted: bool = True             # False: the binding code carries the count, k is unused

  def branch(self, binding: str, snd: str, rcv: str, k: int = 1, held=None) -> Branch:
    """The branch of `binding` at goal count k, the sender holding `held` ({item: n}) at
    the start (None: nothing that its path obtains)."""
    key = (self.name, binding, snd, rcv, k)
    branch = _BRANCH_CACHE.get(key)
    if branch is None:
      if binding not in self.bindings:
        raise ValueError(f"{binding!r} is not a binding of template {self.name}")
      branch = self.compose(binding, snd, rcv, k)
      if MEMOISE and len(_BRANCH_CACHE) < 65_536:   # the composer is pure: memoise its output
        _BRANCH_CACHE[key] = branch
    return net_of_holdings(branch, held) if held else branch


_BRANCH_CACHE: dict = {}
MEMOISE = True        # benchmarks switch memoisation off for the baseline loop


def net_of_holdings(branch: Branch, held) -> Branch:
  """The branch with each sender obtain step reduced by what the sender already holds.

  The first `resource.obtain` of an item gets q = need - held[item]; handoff and later steps
  keep the full quantities. Holdings that cover the whole need raise ValueError: the suites
  draw holdings strictly below every need (facts.py), so an obtain step never disappears."""
  held = dict(held or {})
  path, seen = [], set()
  for t in branch.sender_path:
    item = t.args.get("item")
    if t.skill == "resource.obtain" and held.get(item) and item not in seen:
      seen.add(item)
      q = t.args["q"] - held[item]
      if q <= 0:
        raise ValueError(f"the sender holds {held[item]} {item}, the goal needs {t.args['q']}")
      t = task(t.skill, **{**t.args, "q": q})
    path.append(t)
  if not seen:
    return branch
  return Branch(tuple(path), branch.receiver_path, branch.terminal)


def _obtain_and_hand(item, q, rcv):
  return (task("resource.obtain", q=q, item=item), task("resource.deliver", q=q, item=item, to=rcv))


def _build_site(b, snd, rcv, k):
  site = {"SITE_A": "site_a", "SITE_B": "site_b"}[b]
  return Branch(_obtain_and_hand("oak_planks", 4 * k, rcv),
                (task("build.component", bind=b, q=4 * k, item="oak_planks", site=site),),
                (Built(site, "platform", "oak_planks", 4 * k),))


def _chest_ab(b, snd, rcv, k):
  chest = {"CHEST_A": "chest_a", "CHEST_B": "chest_b"}[b]
  return Branch(_obtain_and_hand("cobblestone", 4 * k, rcv),
                (task("resource.deliver", bind=b, q=4 * k, item="cobblestone", dst=chest),),
                (ChestHolds(chest, "cobblestone", 4 * k),))


def _chest_or_table(b, snd, rcv, k):
  # The transformation and the handed-off quantity both follow the binding.
  item, planks = {"CHEST": ("chest", 8 * k), "CRAFTING_TABLE": ("crafting_table", 4 * k)}[b]
  craft = task("craft.item", bind=b, q=k, input="oak_planks", item=item)
  if item == "chest":
    craft = task("craft.item", bind=b, q=k, input="oak_planks", item=item,
                 station="crafting_table")
  return Branch(_obtain_and_hand("oak_planks", planks, rcv),
                (craft, task("resource.deliver", q=k, item=item, dst="order_chest")),
                (ChestHolds("order_chest", item, k),))


def _planks_or_sticks(b, snd, rcv, k):
  if b == "PLANKS":
    suffix = (task("resource.deliver", bind=b, q=4 * k, item="oak_planks", dst="order_chest"),)
    goal = ChestHolds("order_chest", "oak_planks", 4 * k)
  else:
    suffix = (task("craft.item", bind=b, q=8 * k, input="oak_planks", item="stick"),
              task("resource.deliver", q=8 * k, item="stick", dst="order_chest"))
    goal = ChestHolds("order_chest", "stick", 8 * k)
  return Branch(_obtain_and_hand("oak_planks", 4 * k, rcv), suffix, (goal,))


def _deposit_or_build(b, snd, rcv, k):
  # The binding allocates who builds the foundation and who stocks the depot.
  obtain = task("resource.obtain", q=8 * k, item="cobblestone")
  hand = task("resource.deliver", q=4 * k, item="cobblestone", to=rcv)
  build = dict(q=4 * k, item="cobblestone", site="site_a", component="foundation")
  stock = dict(q=4 * k, item="cobblestone", dst="depot")
  if b == "BUILD":
    sender = (obtain, task("resource.deliver", **stock), hand)
    receiver = (task("build.component", bind=b, **build),)
    builder = rcv
  else:
    sender = (obtain, task("build.component", **build), hand)
    receiver = (task("resource.deliver", bind=b, **stock),)
    builder = snd
  return Branch(sender, receiver, (Built("site_a", "foundation", "cobblestone", 4 * k, builder),
                                   ChestHolds("depot", "cobblestone", 4 * k)))


def _dual_build(b, snd, rcv, k):
  mine, theirs = {"ROOF": ("wall", "roof"), "WALL": ("roof", "wall")}[b]
  sender = (task("resource.obtain", q=8 * k, item="oak_planks"),
            task("build.component", q=4 * k, item="oak_planks", site="site_a", component=mine),
            task("resource.deliver", q=4 * k, item="oak_planks", to=rcv))
  receiver = (task("build.component", bind=b, q=4 * k, item="oak_planks", site="site_a",
                   component=theirs),)
  return Branch(sender, receiver, (Built("site_a", mine, "oak_planks", 4 * k, snd),
                                   Built("site_a", theirs, "oak_planks", 4 * k, rcv)))


def _active_order(b, snd, rcv, k):
  # Eight planks cross the boundary either way; the active branch picks what they become.
  if b == "WORK_BRANCH":
    craft = task("craft.item", bind=b, q=k, input="oak_planks", item="crafting_table")
    goal = Holds(rcv, "crafting_table", k)
  else:
    craft = task("craft.item", bind=b, q=k, input="oak_planks", item="chest",
                 station="crafting_table")
    goal = Holds(rcv, "chest", k)
  return Branch(_obtain_and_hand("oak_planks", 8 * k, rcv), (craft,), (goal,))


def _remaining_terminal(b, snd, rcv, k):
  if b == "DEPOT":
    suffix = task("resource.deliver", bind=b, q=4 * k, item="oak_planks", dst="depot")
    goal = ChestHolds("depot", "oak_planks", 4 * k)
  else:
    suffix = task("build.component", bind=b, q=4 * k, item="oak_planks", site="marker",
                  component="marker_post")
    goal = Built("marker", "marker_post", "oak_planks", 4 * k)
  return Branch(_obtain_and_hand("oak_planks", 4 * k, rcv), (suffix,), (goal,))


TEMPLATES = {t.name: t for t in (
    Template("build_site", "destination", "Build Site A/B", "oak_planks", ("SITE_A", "SITE_B"),
             "destination", _build_site),
    Template("chest_ab", "destination", "Chest A/B", "cobblestone", ("CHEST_A", "CHEST_B"),
             "destination", _chest_ab),
    Template("chest_or_table", "recipe", "Chest/Crafting Table", "oak_planks",
             ("CHEST", "CRAFTING_TABLE"), "transform; handoff item", _chest_or_table),
    Template("planks_or_sticks", "recipe", "Planks/Sticks", "oak_planks", ("PLANKS", "STICKS"),
             "transform; handoff item", _planks_or_sticks),
    Template("deposit_or_build", "allocation", "Deposit/Build", "cobblestone",
             ("BUILD", "DEPOSIT"), "actor and remaining work", _deposit_or_build),
    Template("dual_build", "allocation", "Dual Build", "oak_planks", ("ROOF", "WALL"),
             "actor and component", _dual_build),
    Template("active_order", "active_branch", "Active Order", "oak_planks",
             ("STORAGE_BRANCH", "WORK_BRANCH"), "downstream continuation", _active_order),
    Template("remaining_terminal", "active_branch", "Remaining Terminal", "oak_planks",
             ("DEPOT", "MARKER"), "downstream continuation", _remaining_terminal),
)}
FAMILIES = ("destination", "recipe", "allocation", "active_branch")


def register(template: Template) -> None:
  """Adds a template (suites for other motifs); an existing name raises."""
  if template.name in TEMPLATES:
    raise ValueError(f"template {template.name!r} is already registered")
  TEMPLATES[template.name] = template


# Modules that register further templates (Goal x Capability, cross-products, motifs).
_EXTENSIONS = ("agents.gencoord.capability", "agents.gencoord.crossproduct",
               "agents.gencoord.motifs", "agents.gencoord.templates_heldout")


def load_all() -> dict:
  for module in _EXTENSIONS:
    importlib.import_module(module)
  return TEMPLATES


def get(name: str) -> Template:
  if name not in TEMPLATES:
    load_all()
  if name not in TEMPLATES:
    raise KeyError(f"unknown template {name!r}; valid: {', '.join(sorted(TEMPLATES))}")
  return TEMPLATES[name]
