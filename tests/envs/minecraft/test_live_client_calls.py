"""Live backend: placing and walking are Mineflayer client calls the server has to act on.

A bot builds a two-block-high wall with `bot.placeBlock` (its planks start in the main inventory,
so `bot.equip` has to move them to the hotbar with window clicks first); the test then reads the
blocks and the inventory back from the server's own world. The same wall must stop a bot that
walks straight at a marker behind it, while the pathfinder walks around it. A reset puts the
agents on their start cells on the server and in the bots, however late a bot's login ends.
"""
import shutil
import time

import pytest

from envs.minecraft import world as W

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="live backend needs Node.js")

SITE, MARKER, START = (24, 20), (24, 14), (24, 24)
GROUND_Y = 5                                  # first air layer of the superflat world


def _layout(planks):
  # The wall site lies on the straight line from the start cell to the marker.
  locations = {"site_a": W.Location("site_a", "site", SITE, ""),
               "marker": W.Location("marker", "marker", MARKER, "")}
  starts = {"agent_a": (START, (("oak_planks", planks),), "GENERAL")}
  return W.Layout(locations, starts, {})


def _footprint(layers):
  return [[SITE[0] + dx, GROUND_Y + y, SITE[1] + dz]
          for y in range(layers) for dz in (-1, 0, 1) for dx in (-1, 0, 1)]


def test_placed_blocks_are_on_the_server_and_the_items_gone(rt):
  world = rt.reset(_layout(20), "place")
  assert set(rt.server_request("blocks", positions=_footprint(3))) == {"air"}
  world.apply(W.Navigate("agent_a", "site_a"))
  world.apply(W.Place("agent_a", "site_a", "wall", "oak_planks", 11))
  blocks = rt.server_request("blocks", positions=_footprint(2))
  assert blocks == ["oak_planks"] * 11 + ["air"] * 7           # row by row, then up a layer
  assert world.count("agent_a", "oak_planks") == 9
  assert world.built == [("site_a", "wall", "oak_planks", 11, "agent_a")]
  # More than the bot holds: refused like the simulator, nothing placed, nothing taken.
  with pytest.raises(W.ActionError):
    world.apply(W.Place("agent_a", "site_a", "wall", "oak_planks", 10))
  assert rt.server_request("blocks", positions=_footprint(2)) == blocks
  assert world.count("agent_a", "oak_planks") == 9
  # The next placement continues the footprint where the last one stopped.
  world.apply(W.Place("agent_a", "site_a", "roof", "oak_planks", 7))
  assert rt.server_request("blocks", positions=_footprint(2)) == ["oak_planks"] * 18
  assert world.count("agent_a", "oak_planks") == 2


def test_pathfinder_walks_around_a_wall_a_straight_walk_hits(rt):
  world = rt.reset(_layout(18), "wall")
  world.apply(W.Navigate("agent_a", "site_a"))
  world.apply(W.Place("agent_a", "site_a", "wall", "oak_planks", 18))   # 3 wide, 2 high
  goal = (MARKER[0] + 0.5, MARKER[1] + 2.5)    # where Navigate stands a bot beside the marker
  # Straight at the goal with the movement keys: the wall's south face (z = 22) stops the bot's
  # 0.6-wide body at z = 22.3, on both the client and the server.
  client = rt.bot_request("straight", agent="agent_a", target=list(goal), ticks=100)["pos"]
  server = world.agents["agent_a"].pos
  assert client[1] == pytest.approx(SITE[1] + 2.3, abs=0.05)
  assert server == pytest.approx(tuple(client), abs=1e-6)
  world.apply(W.Navigate("agent_a", "marker"))
  x, z = world.agents["agent_a"].pos
  assert (int(x // 1), int(z // 1)) == (int(goal[0]), int(goal[1]))
  assert rt.server_request("blocks", positions=_footprint(2)) == ["oak_planks"] * 18   # not dug


def test_the_server_teleports_a_walked_off_agent_back_and_its_bot_follows(rt):
  # The re-teleport of LiveRuntime._place_agents: a bot that stands elsewhere on both the client
  # and the server is put back on its start cell by the server's `place`, and `sync` sees it.
  rt.reset(_layout(0), "place-again")
  start = (START[0] + 0.5, START[1] + 0.5)
  away = rt.bot_request("straight", agent="agent_a", target=[START[0] + 0.5, START[1] - 3.5],
                        ticks=40)["pos"]
  assert abs(away[1] - start[1]) > 1.0
  rt.server_request("place", agents={"agent_a": list(start)})
  rt.bot_request("sync", agent="agent_a", pos=list(start))
  x, z = rt.state()["agents"]["agent_a"]["pos"]
  assert abs(x - start[0]) + abs(z - start[1]) < 0.5


def test_a_login_that_ends_late_does_not_undo_the_reset_teleport(rt):
  # flying-squid ends a login by sending the player back to where it logged in, once the bot's
  # first flying packet is in; on a loaded machine that packet can come after the reset's
  # teleport (held back here for `hold_s` after the bot spawns), which the login then undid:
  # `sync` saw the bot at its spawn point, "did not take the teleport".
  hold_s, start = 1.5, [START[0] + 0.5, START[1] + 0.5]
  rt.bot_request("connect", agents=["agent_late"], hold_ms=int(hold_s * 1000))
  try:
    rt.reset(W.Layout({}, {"agent_late": (START, (), "GENERAL")}, {}), "late-login")
    end = time.monotonic() + hold_s + 1.0      # the held packets are out and answered by then
    while time.monotonic() < end:
      x, z = rt.state()["agents"]["agent_late"]["pos"]
      assert abs(x - start[0]) + abs(z - start[1]) < 0.5, (x, z)
      time.sleep(0.05)
    x, z = rt.bot_request("straight", agent="agent_late", target=start, ticks=0)["pos"]
    assert abs(x - start[0]) + abs(z - start[1]) < 0.5, (x, z)      # the bot agrees
  finally:
    rt.bot_request("drop", agent="agent_late")
