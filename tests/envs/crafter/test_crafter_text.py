"""Crafter text view and facts, checked against crafter's own world arrays and rules."""
import re

import numpy as np
import pytest
from crafter import objects

import envs
from envs.crafter import text as ct

_LINE = re.compile(r"^- ([a-z ]+): (?:(\d+) cells?, nearest )?(.+)$")
_PART = re.compile(r"^(\d+) steps? (north|south|east|west)$")


def parse_phrase(phrase: str) -> tuple[int, int]:
  if phrase == "at your position":
    return (0, 0)
  dx = dy = 0
  for part in phrase.split(" and "):
    m = _PART.match(part)
    assert m, f"not an axis step phrase: {part!r}"
    n, word = int(m.group(1)), m.group(2)
    dy += {"north": -n, "south": n}.get(word, 0)
    dx += {"west": -n, "east": n}.get(word, 0)
  return dx, dy


def _listing(text):
  creatures, materials = [], {}
  for line in text.split("\n"):
    m = _LINE.match(line)
    if m and m.group(2):
      materials[m.group(1)] = (int(m.group(2)), parse_phrase(m.group(3)))
    elif m:
      creatures.append((m.group(1), parse_phrase(m.group(3))))
  return creatures, materials


def _expected_from_world(env):
  """Independent listing from crafter's raw material map and object list."""
  world, (px, py) = env._world, env._player.pos
  rx, ry = ct.VIEW_RADIUS
  names = {i: n for n, i in world._mat_ids.items()}
  x0, y0 = px - rx, py - ry
  materials = {}
  for mid in np.unique(world._mat_map[max(x0, 0):px + rx + 1, max(y0, 0):py + ry + 1]):
    xs, ys = np.nonzero(world._mat_map[max(x0, 0):px + rx + 1, max(y0, 0):py + ry + 1] == mid)
    dx, dy = xs + max(x0, 0) - px, ys + max(y0, 0) - py
    keep = (dx != 0) | (dy != 0)
    dx, dy = dx[keep], dy[keep]
    if len(dx):
      order = np.lexsort((dx, dy, np.abs(dx) + np.abs(dy)))
      materials[names[mid]] = (len(dx), (int(dx[order[0]]), int(dy[order[0]])))
  creatures = sorted(
      (type(o).__name__.lower(), (int(o.pos[0] - px), int(o.pos[1] - py))) for o in world.objects
      if o is not env._player and abs(o.pos[0] - px) <= rx and abs(o.pos[1] - py) <= ry)
  return creatures, materials


def test_text_lists_everything_in_view_with_axis_steps():
  env = ct.CrafterText(max_steps=400)
  rng = np.random.default_rng(0)
  checked_creatures = 0
  for seed in (1, 2):
    text, _ = env.reset(seed)
    for t in range(120):
      if t % 8 == 0:
        assert not re.search(r"north-?east|north-?west|south-?east|south-?west|diagonal", text)
        creatures, materials = _listing(text)
        exp_creatures, exp_materials = _expected_from_world(env.env)
        assert materials == exp_materials
        got = sorted((k.replace("ripe ", ""), o) for k, o in creatures)
        assert got == exp_creatures
        checked_creatures += len(got)
      text, *_ = env.step(int(rng.integers(0, 6)))
  assert checked_creatures > 0  # the comparison really covered creatures


def test_north_is_move_up_and_facing_matches_world():
  env = ct.CrafterText()
  env.reset(0)
  for action, direction, delta in (("move_up", "north", (0, -1)), ("move_left", "west", (-1, 0)),
                                   ("move_down", "south", (0, 1)), ("move_right", "east", (1, 0))):
    before = ct.state_facts(env.env)["position"]
    target = (before[0] + delta[0], before[1] + delta[1])
    free = env.env._player.is_free(target)
    text, _, _, _, info = env.step(action)
    facts = info["state_facts"]
    assert facts["facing"] == direction and f"You face {direction}:" in text
    assert facts["position"] == (target if free else before)
    pos = np.array(facts["position"]) + delta
    material, obj = env.env._world[pos]
    assert facts["faced_material"] == material
    assert facts["faced_object"] == (None if obj is None else ct._creature_name(obj))


def _free_grass(env, dist):
  px, py = env._player.pos
  for dx in range(-dist, dist + 1):
    dy = dist - abs(dx)
    for sy in (dy, -dy):
      pos = np.array([px + dx, py + sy])
      if env._world[pos][0] in ("grass", "sand", "path") and env._world[pos][1] is None:
        return pos
  raise AssertionError("no free cell at that distance")


def test_hazard_nearby_zombie_and_lava():
  env = ct.CrafterText()
  env.reset(5)
  world = env.env._world
  for obj in [o for o in world.objects if o is not env.env._player]:
    world.remove(obj)
  assert ct.state_facts(env.env)["hazard_nearby"] is False or "lava" in ct.state_facts(env.env)["nearby_resources"]
  far = objects.Zombie(world, _free_grass(env.env, 4), env.env._player)
  world.add(far)
  facts = ct.state_facts(env.env)
  assert not facts["hazard_nearby"] and facts["nearby_creatures"][0]["kind"] == "zombie"
  world.remove(far)
  world.add(objects.Zombie(world, _free_grass(env.env, 2), env.env._player))
  assert ct.state_facts(env.env)["hazard_nearby"]
  for obj in [o for o in world.objects if o is not env.env._player]:
    world.remove(obj)
  world[_free_grass(env.env, 1)] = "lava"
  assert ct.state_facts(env.env)["hazard_nearby"]


def test_admissible_place_and_make_follow_crafter_rules():
  env = ct.CrafterText()
  env.reset(7)
  player, world = env.env._player, env.env._world
  assert "make_wood_pickaxe" not in ct.admissible_actions(env.env)
  _, _, _, _, info = env.step("make_wood_pickaxe")  # not admissible: nothing happens
  assert "wood_pickaxe" not in info["state_facts"]["inventory"]
  player.inventory["wood"] = 5
  target = player.pos + np.array(player.facing)
  world[target] = "grass"
  if world[target][1] is not None:
    world.remove(world[target][1])
  assert "place_table" in ct.admissible_actions(env.env)
  _, _, _, _, info = env.step("place_table")
  assert info["state_facts"]["faced_material"] == "table" and "place_table" in info["state_facts"]["achievements"]
  assert "make_wood_pickaxe" in info["admissible_actions"] and "make_iron_pickaxe" not in info["admissible_actions"]
  _, reward, _, _, info = env.step("make_wood_pickaxe")
  assert info["state_facts"]["inventory"]["wood_pickaxe"] == 1 and reward >= 1.0
  assert info["progression"] == pytest.approx(len(info["state_facts"]["achievements"]) / 22)
  assert "Achievements: 2/22 (make_wood_pickaxe, place_table)." in env.step("noop")[0]


def test_reset_is_seeded_and_episode_ends():
  env = envs.make("CrafterText-v0", max_steps=5)
  a, _ = env.reset(11)
  outs = [env.step("noop") for _ in range(5)]
  assert [o[3] for o in outs] == [False] * 4 + [True] and not any(o[2] for o in outs)
  b, _ = env.reset(11)
  assert a == b
  env.env._player.health = 0
  _, _, terminated, truncated, _ = env.step("noop")
  assert terminated and not truncated
  assert env.reset(12)[0] != a
  with pytest.raises(ValueError, match="unknown Crafter action"):
    env.step("jump")


def test_reused_worlds_start_the_same_episode_as_fresh_ones():
  """A reset from the cached world (a copy, RNG included) replays a fresh world's trajectory,
  and stepping one copy leaves the cache untouched."""
  actions = ["move_left", "do", "move_up", "noop", "move_right", "do"] * 5
  runs = []
  for reuse in (False, True, True):
    env = ct.CrafterText(max_steps=100, reuse_worlds=reuse)
    text, info = env.reset(7)
    out = [(text, info["state_facts"])]
    for a in actions:
      text, reward, _, _, info = env.step(a)
      out.append((text, reward, info["state_facts"]))
    runs.append(out)
  assert runs[0] == runs[1] == runs[2]
