"""Seeded world-variant generator: where the named workcell locations and agents stand.

Every variant has the same named locations (so the shared prior can name them) at positions
drawn from a seeded NumPy Generator; agents start near the spawn point with a wooden pickaxe.
"""
import numpy as np

from envs.minecraft.world import Layout, Location

# name -> (kind, block)
STANDARD_LOCATIONS = {
    "forest": ("source", "oak_log"),
    "quarry": ("source", "stone"),
    "sand_pit": ("source", "sand"),
    "site_a": ("site", ""),
    "site_b": ("site", ""),
    "chest_a": ("chest", ""),
    "chest_b": ("chest", ""),
    "chest_c": ("chest", ""),
    "order_chest": ("chest", ""),
    "depot": ("chest", ""),
    "marker": ("marker", ""),
    "crafting_table": ("station", "crafting_table"),
    "furnace": ("station", "furnace"),
}
CONTAINERS = tuple(n for n, (kind, _) in STANDARD_LOCATIONS.items() if kind == "chest")
SITES = tuple(n for n, (kind, _) in STANDARD_LOCATIONS.items() if kind in ("site", "marker"))
STATIONS = tuple(n for n, (kind, _) in STANDARD_LOCATIONS.items() if kind == "station")
SOURCES = {block: n for n, (kind, block) in STANDARD_LOCATIONS.items() if kind == "source"}
STARTING_KIT = {"wooden_pickaxe": 1}      # every agent's inventory before `extra_items`


def make_layout(variant: int, agents=("agent_a", "agent_b"), extra_items=None,
                omit=(), size: int = 48) -> Layout:
  """A layout for world variant `variant` (same variant, same positions).

  extra_items: {agent: {item: count}} added to the starting inventories (STARTING_KIT); the
    GenCoord suites pass each world's sampled inventories here (agents/gencoord/facts.py).
  omit: location names left out of this world (used to test materialization failures).
  """
  rng = np.random.default_rng(10_007 * int(variant) + 17)
  # Distinct cells on a coarse grid keep locations apart (>= 6 blocks) like a real build area.
  cells = rng.permutation((size // 6) ** 2)[:len(STANDARD_LOCATIONS)]
  locations = {}
  for cell, (name, (kind, block)) in zip(cells, STANDARD_LOCATIONS.items()):
    if name in omit:
      continue
    pos = (int(cell % (size // 6)) * 6 + 3, int(cell // (size // 6)) * 6 + 3)
    locations[name] = Location(name, kind, pos, block)
  starts = {}
  for i, agent in enumerate(agents):
    inv = dict(STARTING_KIT)
    for item, n in (extra_items or {}).get(agent, {}).items():
      inv[item] = inv.get(item, 0) + n
    starts[agent] = ((size // 2 + 2 * i, size // 2), tuple(inv.items()), "GENERAL")
  containers = {name: () for name in locations if locations[name].kind == "chest"}
  return Layout(locations, starts, containers)
