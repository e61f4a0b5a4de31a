"""Factorised order template for the composition reference (Table S15).

A binding here is a cross-product of four public factors, written as one atom:
`<RECIPE>+<DESTINATION>+<ACTOR>+X<m>`, e.g. `STICKS+CHEST_B+RCV+X2`. The explicit-factor
composer builds the branch field by field; a complete-case table can only replay codes it has
seen. `split(code)` puts half of the 120 cross-products in training and the other 60 in the
unseen pool, with every single factor value present on both sides.
"""
import itertools

from agents.gencoord import templates
from agents.gencoord.skills import task
from envs.minecraft import recipes
from envs.minecraft.predicates import ChestHolds

# recipe factor -> (product, raw input obtained by the sender)
RECIPES = {"PLANKS": ("oak_planks", "oak_log"), "STICKS": ("stick", "oak_planks"),
           "CRAFTING_TABLE": ("crafting_table", "oak_planks"), "CHEST": ("chest", "oak_planks")}
DESTINATIONS = {"CHEST_A": "chest_a", "CHEST_B": "chest_b", "CHEST_C": "chest_c",
                "DEPOT": "depot", "ORDER_CHEST": "order_chest"}
ACTORS = ("SND", "RCV")          # who performs the transformation
MULTIPLIERS = (1, 2, 3)
FACTORS = (tuple(RECIPES), tuple(DESTINATIONS), ACTORS, tuple(f"X{m}" for m in MULTIPLIERS))
CODES = tuple("+".join(f) for f in itertools.product(*FACTORS))


def factors(code: str) -> tuple:
  parts = tuple(code.split("+"))
  if len(parts) != 4 or any(p not in values for p, values in zip(parts, FACTORS)):
    raise ValueError(f"not a cross-product code: {code!r}")
  return parts


def is_unseen(code: str) -> bool:
  """The held-out half: factor indices with odd sum (a checkerboard over the product)."""
  return sum(values.index(p) for p, values in zip(factors(code), FACTORS)) % 2 == 1


def compose_factors(recipe: str, dest: str, actor: str, mult: str, snd: str, rcv: str,
                    code: str) -> templates.Branch:
  product, raw = RECIPES[recipe]
  count = recipes.CRAFTING[product].count * int(mult[1:])
  need = recipes.raw_needed(product, count)[raw]
  craft = dict(q=count, input=raw, item=product)
  deposit = dict(q=count, item=product, dst=DESTINATIONS[dest])
  if actor == "SND":
    sender = (task("resource.obtain", q=need, item=raw), task("craft.item", **craft),
              task("resource.deliver", q=count, item=product, to=rcv))
    receiver = (task("resource.deliver", bind=code, **deposit),)
  else:
    sender = (task("resource.obtain", q=need, item=raw),
              task("resource.deliver", q=need, item=raw, to=rcv))
    receiver = (task("craft.item", bind=code, **craft), task("resource.deliver", **deposit))
  return templates.Branch(sender, receiver, (ChestHolds(DESTINATIONS[dest], product, count),))


def _compose(code, snd, rcv, k):
  del k  # the multiplier factor carries the quantity
  return compose_factors(*factors(code), snd, rcv, code)


# counted=False: the multiplier factor, private to the sender, is the count (no goal count).
TEMPLATE = templates.Template("order_xprod", "composition", "Factorised Order", "oak_planks",
                              CODES, "recipe x destination x actor x count", _compose,
                              counted=False)
templates.register(TEMPLATE)
