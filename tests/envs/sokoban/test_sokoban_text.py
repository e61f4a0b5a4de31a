"""Sokoban text view and state facts, checked against stepping the env itself."""
import re

import jax
import jax.numpy as jnp
import numpy as np

from envs.sokoban import env as sk
from envs.sokoban import generator, text
from envs.sokoban import levels as lv

LEVEL = """\
#######
#$   .#
#  @$ #
# $#. #
#  .  #
#######"""

_move = jax.jit(lambda state, a: sk.move(state, a)[0])


def test_render_text_grid_matches_board_and_lists_objects():
  state = sk.state_from_level(jnp.asarray(lv.from_ascii(LEVEL)))
  out = text.render_text(state)
  lines = out.split("\n")
  assert lines[1].split() == [str(c) for c in range(7)]
  grid_rows = [line.split()[1:] for line in lines[2:8]]
  assert [line.split()[0] for line in lines[2:8]] == [str(r) for r in range(6)]
  expected = [row.replace(" ", "_") for row in LEVEL.split("\n")]
  assert ["".join(r) for r in grid_rows] == expected
  assert "Player at (2,3)." in out
  assert "Boxes: (1,1), (2,4), (3,2)." in out and "Targets: (1,5), (3,4), (4,3)." in out
  assert "Boxes on targets: 0 of 3." in out


def test_state_facts_moves_agree_with_env_steps():
  for level in generator.generate_levels(seed=9, num_levels=10, height=8, width=8, num_boxes=2):
    state = sk.state_from_level(jnp.asarray(level))
    rng = np.random.default_rng(0)
    for _ in range(15):
      facts = text.state_facts(state)
      for a, name in enumerate(sk.ACTION_NAMES):
        nxt = _move(state, jnp.int32(a))
        moved = not np.array_equal(nxt.player, state.player)
        pushed = not np.array_equal(nxt.boxes, state.boxes)
        expect = "push" if pushed else ("free" if moved else "blocked")
        assert facts["moves"][name] == expect
      assert facts["player"] == tuple(np.asarray(state.player).tolist())
      assert set(facts["boxes_on_targets"]) == set(facts["boxes"]) & set(facts["targets"])
      state = _move(state, jnp.int32(rng.integers(4)))


def test_dead_corner_boxes():
  level = "#######\n#$   .#\n#  @ .#\n#   .$#\n#   $ #\n#######"
  state = sk.state_from_level(jnp.asarray(lv.from_ascii(level)))
  facts = text.state_facts(state)
  # (1,1) is cornered and off target; (3,5) sits against the right wall only; (4,4) against the floor wall only
  assert facts["dead_corner_boxes"] == [(1, 1)]
  assert facts["moves"] == {"up": "free", "down": "free", "left": "free", "right": "free"}
  assert text.admissible_actions(state) == ["up", "down", "left", "right"]
  assert not facts["solved"] and facts["num_boxes"] == 3


def test_render_mentions_no_coordinates_outside_board():
  state = sk.state_from_level(jnp.asarray(lv.from_ascii(LEVEL)))
  for r, c in re.findall(r"\((\d+),(\d+)\)", text.render_text(state)):
    assert int(r) < 6 and int(c) < 7


def test_text_env_plays_the_seeded_level_and_matches_the_env():
  bank = np.stack([lv.from_ascii(LEVEL), np.rot90(lv.from_ascii(LEVEL), 2)]).astype(np.int8)
  env = text.text_env(bank, max_steps=3)
  for seed in (0, 1):
    obs, info = env.reset(seed)
    start = sk.state_from_level(jnp.asarray(bank[seed]), seed)
    assert obs == text.render_text(start) and info["state_facts"] == text.state_facts(start)
    assert info["success"] is False and int(env.state.level_index) == seed
  rules, params = sk.Sokoban(bank, 3), sk.Sokoban(bank, 3).default_params
  expected = start
  for t, name in enumerate(("left", "up", "right")):
    obs, reward, terminated, truncated, info = env.step(text.action_id(name))
    _, expected, want_reward, _, _ = rules.step_env(None, expected, text.action_id(name), params)
    assert obs == text.render_text(expected) and np.isclose(reward, float(want_reward))
    assert not terminated and truncated == (t == 2)  # the 3-step limit truncates the last step
  assert text.text_env(bank, max_steps=3).env is env.env  # one compiled env per bank and limit
  with np.testing.assert_raises(ValueError):
    text.action_id("north")
