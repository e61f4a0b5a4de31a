"""Text view, action names and state facts: exact strings on a fixed level, and facts checked
against Farama's own geometry (`front_pos`, `get_view_coords`, `agent_sees`) on real levels."""
import gymnasium as gym
import jax
import minigrid  # noqa: F401
import numpy as np
import pytest

from envs.minigrid import constants as C
from envs.minigrid import text
from envs.minigrid.convert import from_minigrid
from envs.minigrid.tasks import TASKS
from test_minigrid_env import fixed_level


def test_action_names_round_trip():
  names = text.admissible_actions()
  assert len(names) == 7
  assert [text.action_id(n) for n in names] == list(range(7))
  assert text.action_id("FORWARD") == C.FORWARD
  with pytest.raises(ValueError):
    text.action_id("jump")


def test_render_text_fixed_level():
  # Agent (1,1) facing east: right is south. Objects nearest first (Manhattan distance):
  # key 1 right; ball 2 ahead; box 1 ahead 2 right; green door 4 ahead; locked door (4,3)
  # 3 ahead 2 right. Walls: only the nearest left, right and ahead; the east wall behind the
  # closed green door is lit diagonally from (5,2), as in Farama's process_vis.
  expected = "\n".join([
      "Mission: go to the red ball.",
      "You are facing east. You carry nothing.",
      "You see:",
      "- a blue key 1 step right",
      "- a red ball 2 steps forward",
      "- a purple box 1 step forward and 2 steps right",
      "- a closed green door 4 steps forward",
      "- a locked blue door 3 steps forward and 2 steps right",
      "- a wall 1 step left",
      "- a wall 3 steps right",
      "- a wall 5 steps forward",
  ])
  assert text.render_text(fixed_level()) == expected


def test_state_facts_fixed_level():
  facts = text.state_facts(fixed_level())
  assert facts["agent_cell"] == [1, 1] and facts["agent_dir"] == "east"
  assert facts["front_cell"] == [2, 1] and facts["front_object"] == "nothing"
  assert facts["carrying"] is None and facts["mission"] == "go to the red ball"
  assert facts["target_visible"] and not facts["target_in_front"]
  assert facts["target_relative"]["forward"] == 2 and facts["target_relative"]["right"] == 0
  assert sorted((tuple(d["cell"]), d["state"]) for d in facts["doors"]) == [
      ((4, 3), "locked"), ((5, 1), "closed")]


@pytest.mark.parametrize("task", sorted(TASKS))
def test_state_facts_agree_with_farama_geometry(task):
  env = gym.make(task)
  rng = np.random.default_rng(0)
  for seed in range(3):
    env.reset(seed=seed)
    u = env.unwrapped
    for _ in range(12):
      state, _ = from_minigrid(env)
      facts = text.state_facts(state)
      assert facts["mission"] == u.mission
      assert facts["agent_cell"] == [int(v) for v in u.agent_pos]
      assert facts["front_cell"] == [int(v) for v in u.front_pos]
      desc = u.instrs.desc
      seen = []
      for x in range(u.width):
        for y in range(u.height):
          cell = u.grid.get(x, y)
          if (cell is not None and cell.type == desc.type
              and (desc.color is None or cell.color == desc.color) and u.agent_sees(x, y)):
            vx, vy = u.get_view_coords(x, y)
            seen.append((int(abs(6 - vy) + abs(vx - 3)), [x, y], 6 - vy, vx - 3))
      assert facts["target_visible"] == bool(seen)
      if seen:
        rel = facts["target_relative"]
        nearest = min(s[0] for s in seen)
        match = [s for s in seen if s[1] == rel["cell"]]
        assert match and match[0][0] == nearest
        assert (rel["forward"], rel["right"]) == (match[0][2], match[0][3])
      doors = {(x, y): ("open" if c.is_open else "locked" if c.is_locked else "closed")
               for x in range(u.width) for y in range(u.height)
               if (c := u.grid.get(x, y)) is not None and c.type == "door"}
      assert {tuple(d["cell"]): d["state"] for d in facts["doors"]} == doors
      carried = None if u.carrying is None else f"{u.carrying.color} {u.carrying.type}"
      assert facts["carrying"] == carried
      _, _, term, trunc, _ = env.step(int(rng.integers(0, 7)))
      if term or trunc:
        break


def test_text_env_draws_the_level_from_the_seed_and_reports_the_env_success():
  env = text.text_env("BabyAI-GoToRedBall-v0")
  obs, info = env.reset(7)
  _, start = env.env.reset_env(jax.random.split(jax.random.PRNGKey(7))[1], env.params)
  assert obs == text.render_text(start) and info == {"state_facts": text.state_facts(start),
                                                     "success": False}
  obs, _, terminated, _, info = env.step(text.action_id("turn left"))
  assert obs == text.render_text(env.state) and info["state_facts"]["step"] == 1
  assert info["success"] is False and not terminated
  assert text.text_env("BabyAI-GoToRedBall-v0").env is env.env  # one compiled env per task
