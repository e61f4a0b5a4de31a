"""Evaluation split: 6 tasks x seeds 1000..1004 with the paper's per-task limits, and the
instances are Farama's levels at those seeds."""
import gymnasium as gym
import minigrid  # noqa: F401
import numpy as np

from envs.minigrid import splits, text
from envs.minigrid.limits import LIMITS


def test_eval_instances_table():
  rows = splits.eval_instances()
  assert len(rows) == 30
  assert {r["seed"] for r in rows} == {1000, 1001, 1002, 1003, 1004}
  limits = {r["task"]: r["action_limit"] for r in rows}
  assert limits == {"BabyAI-BlockedUnlockPickup-v0": 136, "BabyAI-GoTo-v0": 200,
                    "BabyAI-GoToDoor-v0": 84, "BabyAI-GoToLocal-v0": 60,
                    "BabyAI-GoToObj-v0": 60, "BabyAI-GoToRedBall-v0": 60}
  assert all(r["call_limit"] == r["action_limit"] for r in rows)


def test_farama_instances_are_farama_levels():
  for task in LIMITS:
    state, params = splits.instance(task, 1002)
    env = gym.make(task)
    env.reset(seed=1002)
    u = env.unwrapped
    np.testing.assert_array_equal(np.asarray(state.grid), u.grid.encode())
    assert tuple(int(v) for v in state.agent_pos) == tuple(int(v) for v in u.agent_pos)
    assert text.mission_text(state) == u.mission
    assert params.max_steps_in_episode == u.max_steps
