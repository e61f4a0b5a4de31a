"""Compile(D): lower each dispatched skill to low-level world actions, in dependency order.

navigate -> mine/obtain (+ 2x2 craft for planks), navigate-to-peer -> toss -> pick up,
navigate -> craft (crafting table when the recipe needs 3x3), navigate -> open chest ->
deposit, navigate -> place blocks at a site, furnace load / collect for the transform skills.
The executor counts one action per compiled call.
"""
import dataclasses

from agents.gencoord.materialize import DispatchPlan, obtain_route
from envs.minecraft import recipes
from envs.minecraft import world as W


@dataclasses.dataclass(frozen=True)
class Step:
  task_id: str
  actions: tuple
  check: object = None               # HandoffCheck for the handoff task


def _lower(t, locations) -> tuple:
  a, g = t.actor, t.args.get
  if t.skill == "resource.obtain":
    source, drop, craft = obtain_route(g("item"), locations)
    if g("from") is not None:
      source = g("from")
    if craft is None:
      return (W.Navigate(a, source), W.Mine(a, source, g("q")))
    recipe = recipes.CRAFTING[craft]
    times = recipes.crafts_needed(craft, g("q"))
    return (W.Navigate(a, source), W.Mine(a, source, times * recipe.inputs[0][1]),
            W.Craft(a, craft, times))
  if t.skill == "resource.deliver":
    if g("to") is not None:
      return (W.NavigateToAgent(a, g("to")), W.Toss(a, g("item"), g("q")), W.PickUp(g("to")))
    return (W.Navigate(a, g("dst")), W.OpenChest(a, g("dst")),
            W.Deposit(a, g("dst"), g("item"), g("q")))
  if t.skill == "craft.item":
    craft = W.Craft(a, g("item"), recipes.crafts_needed(g("item"), g("q")))
    return (W.Navigate(a, g("station")), craft) if g("station") else (craft,)
  if t.skill == "build.component":
    return (W.Navigate(a, g("site")), W.Place(a, g("site"), g("component"), g("item"), g("q")))
  if t.skill in ("transform.supply_input", "transform.supply_fuel"):
    slot = "input" if t.skill.endswith("input") else "fuel"
    return (W.Navigate(a, g("station")), W.FurnaceLoad(a, g("station"), slot, g("item"), g("q")))
  if t.skill == "transform.collect_output":
    return (W.Navigate(a, g("station")), W.FurnaceCollect(a, g("station"), g("q")))
  if t.skill == "control.wait":
    return (W.Wait(a, g("ticks")),)
  raise ValueError(f"no lowering for skill {t.skill!r}")


def compile_plan(plan: DispatchPlan, locations) -> tuple:
  """Steps in the plan's dependency order, one per dispatched task."""
  return tuple(Step(t.task_id, _lower(t, locations), t.check) for t in plan.tasks)
