"""Terminal world predicates: small declarative facts checked against a `World` after execution.

A predicate is data (a NamedTuple), so episodes, suites and records can store and compare it;
`holds(world, predicates)` is the conjunction the verifier reads back at the end of an episode.
"""
from typing import NamedTuple

from envs.minecraft.world import World


class ChestHolds(NamedTuple):
  chest: str
  item: str
  count: int


class Built(NamedTuple):
  site: str
  component: str
  item: str
  count: int
  builder: str = ""          # "" = any builder


class Holds(NamedTuple):
  agent: str
  item: str
  count: int


def check(world: World, pred) -> bool:
  if isinstance(pred, ChestHolds):
    return world.containers.get(pred.chest, {}).get(pred.item, 0) >= pred.count
  if isinstance(pred, Built):
    placed = sum(n for site, comp, item, n, who in world.built
                 if site == pred.site and comp == pred.component and item == pred.item
                 and (not pred.builder or who == pred.builder))
    return placed >= pred.count
  if isinstance(pred, Holds):
    agent = world.agents.get(pred.agent)
    return agent is not None and agent.inventory.get(pred.item, 0) >= pred.count
  raise TypeError(f"unknown predicate {pred!r}")


def holds(world: World, predicates) -> bool:
  return all(check(world, p) for p in predicates)
