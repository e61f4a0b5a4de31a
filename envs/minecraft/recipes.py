"""Minecraft Java 1.21 facts used by the workcell tasks: crafting recipes, smelting, fuel, blocks.

Quantities follow the vanilla 1.21 recipe book: one oak log gives four oak planks, four planks a
crafting table, two planks four sticks, eight planks a chest, eight cobblestone a furnace.
`grid` is the smallest crafting grid that fits the shape: 2 (the inventory 2x2 grid) or 3 (a
crafting table is needed).
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class Recipe:
  output: str
  count: int            # items produced per craft
  inputs: tuple         # ((item, count), ...) consumed per craft
  grid: int             # 2: inventory grid; 3: needs a crafting table within reach


CRAFTING = {r.output: r for r in (
    Recipe("oak_planks", 4, (("oak_log", 1),), 2),
    Recipe("stick", 4, (("oak_planks", 2),), 2),
    Recipe("crafting_table", 1, (("oak_planks", 4),), 2),
    Recipe("chest", 1, (("oak_planks", 8),), 3),
    Recipe("furnace", 1, (("cobblestone", 8),), 3),
    Recipe("wooden_pickaxe", 1, (("oak_planks", 3), ("stick", 2)), 3),
)}

# Furnace smelting: input -> output, one item per smelt (200 ticks each in vanilla).
SMELTING = {"cobblestone": "stone", "oak_log": "charcoal", "sand": "glass"}
# Items smelted per fuel item (vanilla burn time / 200 ticks).
FUEL_VALUE = {"coal": 8.0, "charcoal": 8.0, "oak_log": 1.5, "oak_planks": 1.5, "stick": 0.5}

# Mineable blocks: block -> (dropped item, tool needed or None).
BLOCK_DROPS = {
    "oak_log": ("oak_log", None),
    "stone": ("cobblestone", "pickaxe"),
    "sand": ("sand", None),
}
PICKAXES = ("wooden_pickaxe", "stone_pickaxe", "iron_pickaxe")

# Workcell intake categories: a raw-processor workcell takes raw material and transforms it;
# a finished-receiver workcell cannot transform and only takes finished goods.
RAW_ITEMS = frozenset({"oak_log", "oak_planks", "cobblestone", "sand", "coal"})
FINISHED_ITEMS = frozenset({"crafting_table", "stick", "chest", "furnace", "stone", "glass",
                            "charcoal", "wooden_pickaxe"})
ITEMS = RAW_ITEMS | FINISHED_ITEMS


def crafts_needed(item: str, count: int) -> int:
  """Number of crafts that yield at least `count` of `item`."""
  recipe = CRAFTING[item]
  return -(-count // recipe.count)


def raw_needed(item: str, count: int) -> dict:
  """Direct inputs consumed to craft at least `count` of `item` (one recipe level)."""
  times = crafts_needed(item, count)
  return {name: n * times for name, n in CRAFTING[item].inputs}
