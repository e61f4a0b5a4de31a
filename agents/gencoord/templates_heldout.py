"""Held-out templates: one new template per family, never used by the training pools.

They reuse the shared skill ontology and world but bind new objects and destinations, so the
80-cluster held-out-template pool (20 per family) tests transfer across templates rather than
across instances of a seen template.
"""
from agents.gencoord import templates
from agents.gencoord.skills import task
from envs.minecraft.predicates import Built, ChestHolds, Holds

HELDOUT = ("log_destination", "sticks_or_table", "wall_or_stock", "furnace_or_wall")


def _hand(item, q, rcv):
  return (task("resource.obtain", q=q, item=item), task("resource.deliver", q=q, item=item, to=rcv))


def _log_destination(b, snd, rcv, k):
  dst = {"CHEST_C": "chest_c", "DEPOT": "depot"}[b]
  return templates.Branch(_hand("oak_log", 4 * k, rcv),
                          (task("resource.deliver", bind=b, q=4 * k, item="oak_log", dst=dst),),
                          (ChestHolds(dst, "oak_log", 4 * k),))


def _sticks_or_table(b, snd, rcv, k):
  item, q = {"STICKS": ("stick", 8 * k), "CRAFTING_TABLE": ("crafting_table", k)}[b]
  return templates.Branch(_hand("oak_planks", 4 * k, rcv),
                          (task("craft.item", bind=b, q=q, input="oak_planks", item=item),
                           task("resource.deliver", q=q, item=item, dst="order_chest")),
                          (ChestHolds("order_chest", item, q),))


def _wall_or_stock(b, snd, rcv, k):
  obtain = task("resource.obtain", q=8 * k, item="oak_planks")
  hand = task("resource.deliver", q=4 * k, item="oak_planks", to=rcv)
  wall = dict(q=4 * k, item="oak_planks", site="site_b", component="wall")
  stock = dict(q=4 * k, item="oak_planks", dst="chest_c")
  if b == "WALL":
    sender, receiver, builder = ((obtain, task("resource.deliver", **stock), hand),
                                 (task("build.component", bind=b, **wall),), rcv)
  else:
    sender, receiver, builder = ((obtain, task("build.component", **wall), hand),
                                 (task("resource.deliver", bind=b, **stock),), snd)
  return templates.Branch(sender, receiver, (Built("site_b", "wall", "oak_planks", 4 * k, builder),
                                             ChestHolds("chest_c", "oak_planks", 4 * k)))


def _furnace_or_wall(b, snd, rcv, k):
  if b == "FURNACE_BRANCH":
    suffix = task("craft.item", bind=b, q=k, input="cobblestone", item="furnace",
                  station="crafting_table")
    goal = Holds(rcv, "furnace", k)
  else:
    suffix = task("build.component", bind=b, q=8 * k, item="cobblestone", site="marker",
                  component="wall")
    goal = Built("marker", "wall", "cobblestone", 8 * k)
  return templates.Branch(_hand("cobblestone", 8 * k, rcv), (suffix,), (goal,))


for _t in (
    templates.Template("log_destination", "destination", "Chest C/Depot", "oak_log",
                       ("CHEST_C", "DEPOT"), "destination", _log_destination),
    templates.Template("sticks_or_table", "recipe", "Sticks/Crafting Table", "oak_planks",
                       ("STICKS", "CRAFTING_TABLE"), "transform; handoff item",
                       _sticks_or_table),
    templates.Template("wall_or_stock", "allocation", "Wall/Stock", "oak_planks",
                       ("WALL", "STOCK"), "actor and remaining work", _wall_or_stock),
    templates.Template("furnace_or_wall", "active_branch", "Furnace/Wall", "cobblestone",
                       ("FURNACE_BRANCH", "WALL_BRANCH"), "downstream continuation",
                       _furnace_or_wall),
):
  templates.register(_t)
