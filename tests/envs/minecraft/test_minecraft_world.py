"""Minecraft workcell world: recipes, reach, tools, handoff range, workcell modes, furnace."""
import pytest

from envs import registry
from envs.minecraft import predicates, recipes
from envs.minecraft import world as W
from envs.minecraft.env import WorkcellEnv
from envs.minecraft.layout import STANDARD_LOCATIONS, make_layout


def _world(variant=0, **kw):
  return make_layout(variant, **kw).reset()


def test_recipe_quantities_match_minecraft_1_21():
  # Vanilla recipe book facts (independent of how the table is written).
  facts = {"oak_planks": (4, {"oak_log": 1}), "stick": (4, {"oak_planks": 2}),
           "crafting_table": (1, {"oak_planks": 4}), "chest": (1, {"oak_planks": 8}),
           "furnace": (1, {"cobblestone": 8})}
  for item, (count, inputs) in facts.items():
    assert recipes.CRAFTING[item].count == count
    assert dict(recipes.CRAFTING[item].inputs) == inputs
  assert recipes.CRAFTING["chest"].grid == 3 and recipes.CRAFTING["crafting_table"].grid == 2
  assert recipes.crafts_needed("stick", 8) == 2 and recipes.raw_needed("stick", 8) == {
      "oak_planks": 4}
  assert recipes.FUEL_VALUE["oak_planks"] == 1.5 and recipes.FUEL_VALUE["coal"] == 8


def test_layout_is_deterministic_and_complete():
  a, b, c = make_layout(3), make_layout(3), make_layout(4)
  assert a.locations == b.locations and a.locations != c.locations
  assert set(a.locations) == set(STANDARD_LOCATIONS)
  positions = [loc.pos for loc in a.locations.values()]
  assert len(set(positions)) == len(positions)
  assert "quarry" not in make_layout(3, omit=("quarry",)).locations


def test_mine_craft_and_deposit_chain():
  w = _world()
  for action in (W.Navigate("agent_a", "forest"), W.Mine("agent_a", "forest", 2),
                 W.Craft("agent_a", "oak_planks", 2), W.Craft("agent_a", "crafting_table", 1),
                 W.Navigate("agent_a", "order_chest"), W.OpenChest("agent_a", "order_chest"),
                 W.Deposit("agent_a", "order_chest", "crafting_table", 1)):
    w.apply(action)
  assert w.count("agent_a", "oak_planks") == 4 and w.count("agent_a", "oak_log") == 0
  assert predicates.holds(w, (predicates.ChestHolds("order_chest", "crafting_table", 1),))
  assert not predicates.holds(w, (predicates.ChestHolds("order_chest", "crafting_table", 2),))


def test_refusals():
  w = _world()
  with pytest.raises(W.ActionError, match="reach"):
    w.apply(W.Mine("agent_a", "forest", 1))               # never walked there
  w.apply(W.Navigate("agent_a", "quarry"))
  no_pick = make_layout(0)
  starts = dict(no_pick.agent_starts)
  pos, _, mode = starts["agent_a"]
  starts["agent_a"] = (pos, (), mode)                     # empty hands: no wooden pickaxe
  w2 = W.Layout(no_pick.locations, starts, no_pick.container_starts).reset()
  w2.apply(W.Navigate("agent_a", "quarry"))
  with pytest.raises(W.ActionError, match="pickaxe"):
    w2.apply(W.Mine("agent_a", "quarry", 1))
  w.apply(W.Mine("agent_a", "quarry", 8))
  assert w.count("agent_a", "cobblestone") == 8
  with pytest.raises(W.ActionError, match="crafting table"):
    w.apply(W.Craft("agent_a", "furnace", 1))             # 3x3 recipe away from the table
  w.apply(W.Navigate("agent_a", "crafting_table"))
  w.apply(W.Craft("agent_a", "furnace", 1))
  assert w.count("agent_a", "furnace") == 1
  with pytest.raises(W.ActionError, match="lacks"):
    w.apply(W.Craft("agent_a", "chest", 1))
  with pytest.raises(W.ActionError, match="not opened"):
    w.apply(W.Deposit("agent_a", "chest_a", "furnace", 1))


def test_handoff_needs_pickup_range():
  w = _world(extra_items={"agent_a": {"oak_planks": 4}})
  w.apply(W.Navigate("agent_a", "forest"))                # far from agent_b
  w.apply(W.Toss("agent_a", "oak_planks", 4))
  w.apply(W.PickUp("agent_b"))
  assert w.count("agent_b", "oak_planks") == 0 and len(w.ground) == 1
  w.apply(W.Navigate("agent_b", "forest"))
  w.apply(W.PickUp("agent_b"))
  assert w.count("agent_b", "oak_planks") == 4 and not w.ground


def test_workcell_modes_filter_intake_and_crafting():
  layout = make_layout(1, extra_items={"agent_a": {"oak_planks": 4, "stick": 4}})
  raw = layout.with_mode("agent_b", "RAW_PROCESSOR").reset()
  fin = layout.with_mode("agent_b", "FINISHED_RECEIVER").reset()
  for w in (raw, fin):
    w.apply(W.NavigateToAgent("agent_a", "agent_b"))
    w.apply(W.Toss("agent_a", "oak_planks", 4))
    w.apply(W.Toss("agent_a", "stick", 4))
    w.apply(W.PickUp("agent_b"))
  assert raw.count("agent_b", "oak_planks") == 4 and raw.count("agent_b", "stick") == 0
  assert fin.count("agent_b", "oak_planks") == 0 and fin.count("agent_b", "stick") == 4
  fin.agents["agent_b"].inventory["oak_planks"] = 4
  with pytest.raises(W.ActionError, match="cannot transform"):
    fin.apply(W.Craft("agent_b", "crafting_table", 1))
  raw.apply(W.Craft("agent_b", "crafting_table", 1))
  assert raw.count("agent_b", "crafting_table") == 1
  with pytest.raises(ValueError):
    layout.with_mode("agent_b", "WIZARD")


def test_furnace_smelts_with_fuel_budget():
  w = _world(extra_items={"agent_a": {"cobblestone": 4, "oak_planks": 2}})
  w.apply(W.Navigate("agent_a", "furnace"))
  w.apply(W.FurnaceLoad("agent_a", "furnace", "input", "cobblestone", 4))
  w.apply(W.FurnaceLoad("agent_a", "furnace", "fuel", "oak_planks", 2))   # 2 x 1.5 = 3 smelts
  with pytest.raises(W.ActionError, match="holds 3"):
    w.apply(W.FurnaceCollect("agent_a", "furnace", 4))
  w.apply(W.FurnaceCollect("agent_a", "furnace", 3))
  assert w.count("agent_a", "stone") == 3 and w.furnaces["furnace"].input[1] == 1
  with pytest.raises(W.ActionError, match="not a fuel"):
    w.apply(W.FurnaceLoad("agent_a", "furnace", "fuel", "stone", 1))


def test_place_and_built_predicate_with_builder():
  w = _world(extra_items={"agent_b": {"oak_planks": 4}})
  w.apply(W.Navigate("agent_b", "site_a"))
  w.apply(W.Place("agent_b", "site_a", "roof", "oak_planks", 4))
  assert predicates.check(w, predicates.Built("site_a", "roof", "oak_planks", 4, "agent_b"))
  assert not predicates.check(w, predicates.Built("site_a", "roof", "oak_planks", 4, "agent_a"))
  assert not predicates.check(w, predicates.Built("site_a", "wall", "oak_planks", 4))


def test_reset_copies_state():
  layout = make_layout(2, extra_items={"agent_a": {"oak_planks": 4}})
  w1 = layout.reset()
  w1.apply(W.Toss("agent_a", "oak_planks", 4))
  assert layout.reset().count("agent_a", "oak_planks") == 4


def test_host_loop_env_api_and_registry():
  terminal = (predicates.ChestHolds("chest_a", "oak_log", 2),)
  env = registry.make("MinecraftWorkcell-v0", variant=5, terminal=terminal, max_steps=5)
  assert isinstance(env, WorkcellEnv)
  obs, info = env.reset(0)
  assert obs["agents"]["agent_a"]["inventory"] == {"wooden_pickaxe": 1} and not info["terminal"]
  _, r, term, trunc, info = env.step(W.Mine("agent_a", "forest", 2))
  assert info["error"] and r == 0.0 and not term
  rewards = []
  for action in (W.Navigate("agent_a", "forest"), W.Mine("agent_a", "forest", 2),
                 W.Navigate("agent_a", "chest_a"), W.OpenChest("agent_a", "chest_a")):
    _, r, term, trunc, info = env.step(action)
    rewards.append(r)
  assert trunc and not term                      # 5 steps used, goal not reached
  env.max_steps = 10
  _, r, term, trunc, info = env.step(W.Deposit("agent_a", "chest_a", "oak_log", 2))
  assert r == 1.0 and term and not trunc and sum(rewards) == 0


def _random_action(rng, names):
  agent = ["agent_a", "agent_b"][rng.integers(2)]
  loc = names[rng.integers(len(names))]
  item = ["oak_log", "oak_planks", "stick", "cobblestone", "crafting_table"][rng.integers(5)]
  n = int(rng.integers(1, 5))
  return [W.Navigate(agent, loc), W.NavigateToAgent(agent, "agent_a"), W.Mine(agent, loc, n),
          W.Craft(agent, item, 1), W.Toss(agent, item, n), W.PickUp(agent),
          W.OpenChest(agent, loc), W.Deposit(agent, loc, item, n),
          W.Place(agent, loc, "platform", item, n), W.FurnaceLoad(agent, loc, "input", item, n),
          W.FurnaceCollect(agent, loc, n), W.Wait(agent, n)][rng.integers(12)]


def _random_episode(seed):
  import numpy as np
  rng = np.random.default_rng(seed)
  env = WorkcellEnv(make_layout(seed), (predicates.ChestHolds("chest_a", "oak_log", 99),), 200)
  obs, _ = env.reset(seed)
  names = sorted(env.layout.locations)
  trace = []
  for _ in range(200):
    obs, r, term, trunc, info = env.step(_random_action(rng, names))
    trace.append((repr(obs), r, term, trunc, info["error"]))
    if term or trunc:
      break
  return trace, env.world


def test_random_episodes_are_safe_and_deterministic():
  for seed in range(3):
    (a, world), (b, _) = _random_episode(seed), _random_episode(seed)
    assert a == b and a[-1][3]                     # same seed, same trajectory; truncated
    assert any(err is None for *_, err in a) and any(err for *_, err in a)
    stocks = [*world.containers.values(), *(ag.inventory for ag in world.agents.values())]
    assert all(n > 0 for stock in stocks for n in stock.values())   # no empty/negative stacks
