"""Transform-order motifs for the task-structure visibility suite (Section S9).

`familiar` reuses the Active Order post-handoff branch. `post_transform` smelts after the
handoff (the receiver loads the furnace, fuels it with its own planks and collects stone);
`pre_transform` smelts before the handoff (the sender does it and hands off stone). Each motif
has two balanced destination bindings so the sender still holds a private fact.
"""
from agents.gencoord import templates
from agents.gencoord.skills import task
from envs.minecraft.predicates import ChestHolds

MOTIFS = ("familiar", "post_transform", "pre_transform")
MOTIF_TEMPLATES = {"familiar": "active_order", "post_transform": "motif_post_transform",
                   "pre_transform": "motif_pre_transform"}
FUEL_PLANKS = 3          # 1.5 smelts per plank: 3 planks fuel 4 cobblestone (4.5 smelts)
_DST = {"CHEST_A": "chest_a", "CHEST_B": "chest_b"}


def _smelt(n: int):
  return (task("transform.supply_input", q=n, item="cobblestone", station="furnace"),
          task("transform.supply_fuel", q=FUEL_PLANKS * n // 4, item="oak_planks",
               station="furnace"),
          task("transform.collect_output", q=n, item="stone", station="furnace"))


def _post(b, snd, rcv, k):
  n = 4 * k
  sender = (task("resource.obtain", q=n, item="cobblestone"),
            task("resource.deliver", q=n, item="cobblestone", to=rcv))
  first, *rest = _smelt(n)
  first = task(first.skill, bind=b, **first.args)
  receiver = (first, *rest, task("resource.deliver", q=n, item="stone", dst=_DST[b]))
  return templates.Branch(sender, receiver, (ChestHolds(_DST[b], "stone", n),))


def _pre(b, snd, rcv, k):
  n = 4 * k
  sender = (task("resource.obtain", q=n, item="cobblestone"), *_smelt(n),
            task("resource.deliver", q=n, item="stone", to=rcv))
  receiver = (task("resource.deliver", bind=b, q=n, item="stone", dst=_DST[b]),)
  return templates.Branch(sender, receiver, (ChestHolds(_DST[b], "stone", n),))


templates.register(templates.Template("motif_post_transform", "visibility",
                                      "Unseen post-handoff transform", "cobblestone",
                                      tuple(_DST), "destination", _post))
templates.register(templates.Template("motif_pre_transform", "visibility",
                                      "Unseen pre-handoff transform", "cobblestone",
                                      tuple(_DST), "destination", _pre))
