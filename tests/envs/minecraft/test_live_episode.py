"""Live backend end to end: flying-squid server + Mineflayer bots on 127.0.0.1 against the simulator.

Runs when Node.js is on PATH (node_modules is installed with `npm ci` on first use). The same
compiled action lists execute in the simulator and on the live server; verdicts, failure codes,
final inventories, chest contents and built components must agree, with the live side read back
from the server's own state.
"""
import shutil

import pytest

from agents.gencoord import protocol, suites, templates
from agents.gencoord.policies import registry as policies
from agents.gencoord.compile import compile_plan
from envs.minecraft import executor, recipes
from envs.minecraft import world as W
from envs.minecraft.layout import make_layout

pytestmark = [pytest.mark.skipif(shutil.which("node") is None, reason="live backend needs Node.js"),
              pytest.mark.long_module(45)]   # scheduled first: tests/conftest.py


def _one_per_family(suite="heldout"):
  pick = {}
  for ep in suites.suite(suite):
    pick.setdefault(templates.get(ep.template).family, ep)
  return list(pick.values())


def _snapshot(world):
  agents = world.agents
  return ({n: {k: v for k, v in a.inventory.items() if v} for n, a in sorted(agents.items())},
          {c: {k: v for k, v in box.items() if v} for c, box in sorted(world.containers.items())},
          sorted(tuple(b) for b in world.built))


def test_server_recipes_are_minecraft_data_1_21_4(rt):
  # The plugin crafts with minecraft-data's 1.21.4 recipe table; the simulator's table must be
  # one of its variants (same yield, same inputs, same grid size).
  table = rt.server_request("recipes", items=sorted(recipes.CRAFTING))
  for item, r in recipes.CRAFTING.items():
    variants = [(v["count"], sorted(map(tuple, v["inputs"])), v["grid"]) for v in table[item]]
    assert (r.count, sorted(r.inputs), r.grid) in variants, (item, variants)


def test_one_episode_per_family_matches_simulator(rt):
  eps = _one_per_family()
  assert len(eps) == 4
  backend = policies.make("rule_minimal_request")
  sim = protocol.run_forward(eps, backend, "true")
  live = protocol.run_forward(eps, backend, "true", world=rt.world_for)
  for a, b in zip(sim, live):
    assert b.success, (b.ep.template, b.result)
    assert (a.failure_code, a.executor_actions, a.handoff_verified) == (
        b.failure_code, b.executor_actions, b.handoff_verified)
    assert rt.episode_seconds[b.ep.episode_id] > 0
  # A wrong request must fail live exactly as it fails in the simulator.
  sim_bad = protocol.run_forward(eps[:2], backend, "alternative")
  live_bad = protocol.run_forward(eps[:2], backend, "alternative", world=rt.world_for)
  for a, b in zip(sim_bad, live_bad):
    assert not a.success
    assert (a.failure_code, a.executor_actions) == (b.failure_code, b.executor_actions)


def test_final_server_state_equals_simulator_state(rt):
  # The recipe family (mining, crafting, handoff), in a world whose agents both start with
  # sampled items beside the pickaxe: the server must start them with exactly those.
  ep = next(e for e in suites.suite("heldout") if templates.get(e.template).family == "recipe"
            and all(len(e.inventory(a)) > 1 for a in suites.AGENTS))
  rec = protocol.run_forward([ep], policies.make("rule_minimal_request"), "true")[0]
  steps = compile_plan(rec.result.plan, ep.layout.locations)
  sim_world = ep.layout.reset()
  assert executor.execute(sim_world, steps).error is None
  live_world = rt.world_for(ep)
  assert {n: dict(a.inventory) for n, a in live_world.agents.items()} == {
      a: ep.inventory(a) for a in suites.AGENTS}
  trace = executor.execute(live_world, steps)
  assert trace.error is None and trace.handoffs
  sim_snap = ({n: {k: v for k, v in a.inventory.items() if v}
               for n, a in sorted(sim_world.agents.items())},
              {c: {k: v for k, v in box.items() if v}
               for c, box in sorted(sim_world.containers.items())},
              sorted(sim_world.built))
  assert _snapshot(live_world) == sim_snap


def test_refusals_match_simulator_and_leave_state_unchanged(rt):
  layout = make_layout(2)
  bad = [W.Craft("agent_a", "chest", 1),                      # no planks, no table in reach
         W.Deposit("agent_a", "chest_a", "wooden_pickaxe", 1),  # chest not opened
         W.Mine("agent_b", "forest", 1),                       # forest out of reach
         W.Place("agent_a", "forest", "platform", "wooden_pickaxe", 1)]   # not a site
  live = rt.reset(layout, "refusals")
  before = _snapshot(live)
  for action in bad:
    sim = layout.reset()
    with pytest.raises(W.ActionError):
      sim.apply(action)
    with pytest.raises(W.ActionError):
      live.apply(action)
  assert _snapshot(live) == before


def test_chest_withdraw_reads_back_from_server(rt):
  from envs.minecraft.live.live_world import Withdraw
  layout = make_layout(1, extra_items={"agent_a": {"oak_planks": 6}})
  world = rt.reset(layout, "chest")
  for action in (W.Navigate("agent_a", "depot"), W.OpenChest("agent_a", "depot"),
                 W.Deposit("agent_a", "depot", "oak_planks", 6),
                 Withdraw("agent_a", "depot", "oak_planks", 2)):
    world.apply(action)
  assert world.containers["depot"] == {"oak_planks": 4}
  assert world.count("agent_a", "oak_planks") == 2
  with pytest.raises(W.ActionError):
    world.apply(Withdraw("agent_a", "depot", "oak_planks", 5))
