"""Loop ratio, action failure and aggregation on hand-built trajectories with known answers."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agents.wm.metrics import aggregate, consecutive_repeats, episode_metrics, loop_mask
from agents.wm.trajectory import Step, Trajectory


def traj(obs, actions, failed=(), success=False):
  """obs holds o_0..o_T, actions a_0..a_{T-1}."""
  steps = [Step(obs[t], actions[t], obs[t + 1], action_failed=t in failed)
           for t in range(len(actions))]
  return Trajectory("textworld", "tw/g/0", "task", steps, success, 100.0 * success)


@pytest.mark.parametrize("obs,actions,expected", [
    # a 2-cycle A->B->A walked twice: the second walk (steps 2, 3) repeats it
    ("ABABA", "xyxy", [0, 0, 1, 1]),
    # three walks of the 2-cycle: every step after the first walk repeats
    ("ABABAB", "xyxyxy", [0, 0, 1, 1, 1, 1]),
    # the same failing action answered by the same observation: a 1-cycle at N
    ("ANNNN", "tttt", [0, 0, 1, 1]),
    # returning to A with a different action is exploration, not a loop
    ("ABACD", "xyzw", [0, 0, 0, 0]),
    # a repeat cut off by the episode end is not a complete block
    ("ABAB", "xyx", [0, 0, 0]),
    # A,A,B is not a cycle (observations not distinct), so its repeat is not counted
    ("AABAAB", "xyzxyz", [0, 0, 0, 0, 0, 0]),
    # a loop after a prefix: C D, then the 2-cycle A B twice
    ("CDABABX", "uvxyxy", [0, 0, 0, 0, 1, 1]),
])
def test_loop_mask_known_answers(obs, actions, expected):
  assert loop_mask(list(obs), list(actions)).astype(int).tolist() == expected


def test_unparsed_actions_compare_equal():
  assert loop_mask(list("ANNN"), [None, None, None]).astype(int).tolist() == [0, 0, 1]


@settings(max_examples=60, deadline=None)
@given(prefix=st.integers(0, 4), length=st.integers(1, 4), reps=st.integers(1, 4),
       suffix=st.integers(0, 3))
def test_loop_steps_of_repeated_simple_cycle(prefix, length, reps, suffix):
  # unique prefix observations, `reps` walks of a cycle of `length` distinct observations, a
  # unique suffix: exactly (reps - 1) * length steps repeat the preceding walk
  obs = [f"p{i}" for i in range(prefix)] + [f"c{j}" for j in range(length)] * reps
  obs += [f"s{i}" for i in range(suffix)] + ["end"]
  acts = [f"go{i}" for i in range(prefix)] + [f"a{j}" for j in range(length)] * reps
  acts += [f"t{i}" for i in range(suffix)]
  assert loop_mask(obs, acts).sum() == (reps - 1) * length


def test_consecutive_repeat_ratio_differs_from_loop_ratio():
  # "take" refused four times: 3 consecutive repeats, but the first refusal (from A) is not
  # part of the N-cycle, so only 2 steps are repeating under the cycle definition
  t = traj(list("ANNNN"), ["take"] * 4, failed={0, 1, 2, 3})
  m = episode_metrics(t)
  assert (m["turns"], m["action_failures"], m["loop_steps"], m["repeat_steps"]) == (4, 4, 2, 3)
  assert m["loop_ratio"] == 0.5 and m["repeat_ratio"] == 0.75
  assert consecutive_repeats(["a", "b", "b", None, None]) == 2


def test_action_failure_counts_parse_and_env_failures():
  t = traj(list("ABCD"), ["x", None, "z"], failed={2})
  m = episode_metrics(t)
  assert m["action_failures"] == 2 and m["parse_failures"] == 1
  assert m["action_failure_rate"] == pytest.approx(2 / 3)


def test_aggregate_step_vs_trajectory_normalisation():
  a = episode_metrics(traj(list("ABABA"), list("xyxy"), success=True))  # 2 of 4 repeating
  b = episode_metrics(traj(list("CDE"), list("uv")))                    # 0 of 2
  err = {**episode_metrics(traj(list("ABABA"), list("xyxy"))), "env_error": "env_died"}
  agg = aggregate([a, b, err])
  assert agg["episodes"] == 2 and agg["env_errors"] == 1
  assert agg["loop_ratio_step"] == pytest.approx(100 * 2 / 6)
  assert agg["loop_ratio_traj"] == pytest.approx(100 * (0.5 + 0.0) / 2)
  assert agg["success"] == 50.0 and agg["turns"] == 3.0
  assert aggregate([a, b, err], include_env_errors=True)["episodes"] == 3


def test_loop_mask_rejects_short_observation_list():
  with pytest.raises(ValueError):
    loop_mask(["A"], ["x", "y"])
  assert loop_mask([], []).shape == (0,)
  assert isinstance(loop_mask(["A", "B"], ["x"]), np.ndarray)
