"""A Python simulator of the Minecraft world facts the GenCoord workcell tasks need.

State: agents (position, inventory, workcell mode), named locations (resource sources, build
sites, chests incl. `order_chest`, depot, marker, crafting table, furnace), container contents,
furnace slots, item stacks lying on the ground and built components. Actions are small
NamedTuples applied by `World.apply`, which raises `ActionError` when Minecraft would not allow
the action (out of reach, missing items, no station, wrong tool, a workcell that cannot craft).

The static layout (`Layout`) is shared between episodes; `Layout.reset()` builds a fresh mutable
`World` by copying only the small per-episode dicts, so the closed loop stays cheap.
"""
import dataclasses
import math
from typing import NamedTuple

from envs.minecraft import recipes

REACH = 4.5            # survival-mode block interaction reach, in blocks
PICKUP_RANGE = 2.0     # an item entity is collected when a player is this close
MODES = ("GENERAL", "RAW_PROCESSOR", "FINISHED_RECEIVER")
LOCATION_KINDS = ("source", "site", "chest", "station", "marker")


class ActionError(RuntimeError):
  """An action the world refuses; the executor turns it into EXECUTION_FAILURE."""


@dataclasses.dataclass(frozen=True)
class Location:
  name: str
  kind: str                 # one of LOCATION_KINDS
  pos: tuple                # (x, z) block coordinates
  block: str = ""           # sources: the mined block; stations: crafting_table / furnace


# --------------------------------------------------------------------------------- actions
class Navigate(NamedTuple):
  agent: str
  location: str


class NavigateToAgent(NamedTuple):
  agent: str
  other: str


class Mine(NamedTuple):
  agent: str
  source: str
  count: int


class Craft(NamedTuple):
  agent: str
  item: str
  times: int


class Toss(NamedTuple):
  agent: str
  item: str
  count: int


class PickUp(NamedTuple):
  agent: str


class OpenChest(NamedTuple):
  agent: str
  chest: str


class Deposit(NamedTuple):
  agent: str
  chest: str
  item: str
  count: int


class Place(NamedTuple):
  agent: str
  site: str
  component: str
  item: str
  count: int


class FurnaceLoad(NamedTuple):
  agent: str
  furnace: str
  slot: str                 # "input" or "fuel"
  item: str
  count: int


class FurnaceCollect(NamedTuple):
  agent: str
  furnace: str
  count: int


class Wait(NamedTuple):
  agent: str
  ticks: int


# ----------------------------------------------------------------------------------- state
@dataclasses.dataclass
class Agent:
  pos: tuple
  inventory: dict
  mode: str = "GENERAL"


@dataclasses.dataclass
class Furnace:
  input: list               # [item, count]
  fuel: list                # [item, count]
  output: list              # [item, count]
  burn_left: float = 0.0    # items the current fuel can still smelt


class World:
  """Mutable episode state over a static `Layout`."""

  def __init__(self, layout: "Layout", agents: dict, containers: dict):
    self.layout = layout
    self.locations = layout.locations
    self.agents = agents
    self.containers = containers
    self.furnaces = {n: Furnace(["", 0], ["", 0], ["", 0]) for n in layout.furnace_names}
    self.ground: list = []          # [pos, item, count] stacks
    self.built: list = []           # (site, component, item, count, builder)
    self.open_chest: dict = {}      # agent -> chest it has open
    self.ticks = 0

  # --------------------------------------------------------------- helpers
  def _agent(self, name: str) -> Agent:
    agent = self.agents.get(name)
    if agent is None:
      raise ActionError(f"unknown agent {name!r}")
    return agent

  def _location(self, name: str, kind: str | None = None) -> Location:
    loc = self.locations.get(name)
    if loc is None or (kind is not None and loc.kind != kind):
      raise ActionError(f"no {kind or 'location'} named {name!r}")
    return loc

  def _in_reach(self, agent: Agent, pos: tuple) -> bool:
    return math.dist(agent.pos, pos) <= REACH

  def _take(self, agent_name: str, item: str, count: int) -> None:
    inv = self.agents[agent_name].inventory
    have = inv.get(item, 0)
    if count <= 0 or have < count:
      raise ActionError(f"{agent_name} has {have} {item}, needs {count}")
    if have == count:
      del inv[item]
    else:
      inv[item] = have - count

  def count(self, agent: str, item: str) -> int:
    return self.agents[agent].inventory.get(item, 0)

  # --------------------------------------------------------------- actions
  def apply(self, action) -> None:
    handler = _HANDLERS.get(type(action))
    if handler is None:
      raise ActionError(f"unknown action {action!r}")
    handler(self, action)

  def _navigate(self, a: Navigate) -> None:
    agent = self._agent(a.agent)
    loc = self._location(a.location)
    self.ticks += int(math.dist(agent.pos, loc.pos) * 4)   # ~4.3 blocks/s walking, 20 ticks/s
    agent.pos = loc.pos

  def _navigate_to_agent(self, a: NavigateToAgent) -> None:
    agent, other = self._agent(a.agent), self._agent(a.other)
    target = (other.pos[0] + 1, other.pos[1])
    self.ticks += int(math.dist(agent.pos, target) * 4)
    agent.pos = target

  def _mine(self, a: Mine) -> None:
    agent = self._agent(a.agent)
    loc = self._location(a.source, "source")
    if not self._in_reach(agent, loc.pos):
      raise ActionError(f"{a.agent} is not within reach of {a.source}")
    drop, tool = recipes.BLOCK_DROPS[loc.block]
    if tool == "pickaxe" and not any(agent.inventory.get(p) for p in recipes.PICKAXES):
      raise ActionError(f"{a.agent} needs a pickaxe to mine {loc.block}")
    if a.count <= 0:
      raise ActionError("mine count must be positive")
    agent.inventory[drop] = agent.inventory.get(drop, 0) + a.count
    self.ticks += 30 * a.count

  def _craft(self, a: Craft) -> None:
    agent = self._agent(a.agent)
    if agent.mode == "FINISHED_RECEIVER":
      raise ActionError(f"{a.agent}'s workcell cannot transform material")
    recipe = recipes.CRAFTING.get(a.item)
    if recipe is None or a.times <= 0:
      raise ActionError(f"cannot craft {a.times} x {a.item}")
    if recipe.grid == 3 and not any(
        loc.kind == "station" and loc.block == "crafting_table" and
        self._in_reach(agent, loc.pos) for loc in self.locations.values()):
      raise ActionError(f"{a.item} needs a crafting table within reach of {a.agent}")
    for item, n in recipe.inputs:
      if agent.inventory.get(item, 0) < n * a.times:
        raise ActionError(f"{a.agent} lacks {n * a.times} {item} to craft {a.item}")
    for item, n in recipe.inputs:
      self._take(a.agent, item, n * a.times)
    agent.inventory[a.item] = agent.inventory.get(a.item, 0) + recipe.count * a.times

  def _toss(self, a: Toss) -> None:
    agent = self._agent(a.agent)
    self._take(a.agent, a.item, a.count)
    self.ground.append([agent.pos, a.item, a.count])

  def _pick_up(self, a: PickUp) -> None:
    agent = self._agent(a.agent)
    kept = []
    for stack in self.ground:
      pos, item, n = stack
      if math.dist(agent.pos, pos) <= PICKUP_RANGE and _accepts(agent.mode, item):
        agent.inventory[item] = agent.inventory.get(item, 0) + n
      else:
        kept.append(stack)
    self.ground = kept

  def _open_chest(self, a: OpenChest) -> None:
    agent = self._agent(a.agent)
    loc = self._location(a.chest, "chest")
    if not self._in_reach(agent, loc.pos):
      raise ActionError(f"{a.agent} is not within reach of {a.chest}")
    self.open_chest[a.agent] = a.chest

  def _deposit(self, a: Deposit) -> None:
    if self.open_chest.get(a.agent) != a.chest:
      raise ActionError(f"{a.agent} has not opened {a.chest}")
    self._take(a.agent, a.item, a.count)
    box = self.containers[a.chest]
    box[a.item] = box.get(a.item, 0) + a.count

  def _place(self, a: Place) -> None:
    agent = self._agent(a.agent)
    loc = self._location(a.site)
    if loc.kind not in ("site", "marker"):
      raise ActionError(f"{a.site} is not a build site")
    if not self._in_reach(agent, loc.pos):
      raise ActionError(f"{a.agent} is not within reach of {a.site}")
    self._take(a.agent, a.item, a.count)
    self.built.append((a.site, a.component, a.item, a.count, a.agent))

  def _furnace(self, name: str, agent: Agent) -> Furnace:
    loc = self._location(name, "station")
    if name not in self.furnaces or not self._in_reach(agent, loc.pos):
      raise ActionError(f"no furnace {name!r} within reach")
    return self.furnaces[name]

  def _furnace_load(self, a: FurnaceLoad) -> None:
    agent = self._agent(a.agent)
    furnace = self._furnace(a.furnace, agent)
    if a.slot == "input" and a.item not in recipes.SMELTING:
      raise ActionError(f"{a.item} cannot be smelted")
    if a.slot == "fuel" and a.item not in recipes.FUEL_VALUE:
      raise ActionError(f"{a.item} is not a fuel")
    slot = furnace.input if a.slot == "input" else furnace.fuel
    if slot[1] and slot[0] != a.item:
      raise ActionError(f"furnace {a.slot} slot holds {slot[0]}")
    self._take(a.agent, a.item, a.count)
    slot[0], slot[1] = a.item, slot[1] + a.count
    self._smelt(furnace)

  def _smelt(self, furnace: Furnace) -> None:
    # Smelting runs to completion between actions: the host loop does not model time slices.
    while furnace.input[1] > 0:
      if furnace.burn_left < 1.0 - 1e-9:
        if furnace.fuel[1] == 0:
          return
        furnace.burn_left += recipes.FUEL_VALUE[furnace.fuel[0]]
        furnace.fuel[1] -= 1
      out = recipes.SMELTING[furnace.input[0]]
      if furnace.output[1] and furnace.output[0] != out:
        return
      furnace.input[1] -= 1
      furnace.burn_left -= 1.0
      furnace.output[0], furnace.output[1] = out, furnace.output[1] + 1
      self.ticks += 200

  def _furnace_collect(self, a: FurnaceCollect) -> None:
    agent = self._agent(a.agent)
    furnace = self._furnace(a.furnace, agent)
    item, have = furnace.output
    if have < a.count or a.count <= 0:
      raise ActionError(f"furnace {a.furnace} holds {have} output, {a.count} requested")
    furnace.output[1] -= a.count
    agent.inventory[item] = agent.inventory.get(item, 0) + a.count

  def _wait(self, a: Wait) -> None:
    self._agent(a.agent)
    self.ticks += max(0, a.ticks)


def _accepts(mode: str, item: str) -> bool:
  if mode == "RAW_PROCESSOR":
    return item in recipes.RAW_ITEMS
  if mode == "FINISHED_RECEIVER":
    return item in recipes.FINISHED_ITEMS
  return True


_HANDLERS = {
    Navigate: World._navigate, NavigateToAgent: World._navigate_to_agent, Mine: World._mine,
    Craft: World._craft, Toss: World._toss, PickUp: World._pick_up,
    OpenChest: World._open_chest, Deposit: World._deposit, Place: World._place,
    FurnaceLoad: World._furnace_load, FurnaceCollect: World._furnace_collect, Wait: World._wait,
}


@dataclasses.dataclass(frozen=True)
class Layout:
  """Static episode layout: locations and the initial agent/container state to copy on reset."""
  locations: dict           # name -> Location
  agent_starts: dict        # name -> (pos, ((item, count), ...), mode)
  container_starts: dict    # chest name -> ((item, count), ...)

  @property
  def furnace_names(self) -> tuple:
    names = self.__dict__.get("_furnaces")
    if names is None:       # computed once per layout (layouts are shared across episodes)
      names = tuple(n for n, loc in self.locations.items()
                    if loc.kind == "station" and loc.block == "furnace")
      object.__setattr__(self, "_furnaces", names)
    return names

  def reset(self) -> World:
    agents = {n: Agent(pos, dict(inv), mode) for n, (pos, inv, mode) in self.agent_starts.items()}
    containers = {n: dict(c) for n, c in self.container_starts.items()}
    return World(self, agents, containers)

  def with_mode(self, agent: str, mode: str) -> "Layout":
    if mode not in MODES:
      raise ValueError(f"unknown workcell mode {mode!r}")
    starts = dict(self.agent_starts)
    pos, inv, _ = starts[agent]
    starts[agent] = (pos, inv, mode)
    return dataclasses.replace(self, agent_starts=starts)
