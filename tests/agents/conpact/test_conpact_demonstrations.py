"""Supervision rows from expert play (agents/conpact/demonstrations.py)."""
import numpy as np
import pytest

from agents.conpact import demonstrations as demo
from agents.conpact import parse, schemas, scripted, textenv
from envs import splits
from envs.sokoban import solver
from envs.sokoban import text as sokoban_text

SOKOBAN = schemas.get("sokoban")


def _parsed(row, schema):
  a = parse.parse_assertion(row["target"], schema)
  assert a.found and not a.invalid and not a.extra
  return a.values


def _canonical_truth(row, schema):
  return {f.name: schemas.canonical(f, row["meta"]["truth"][f.name]) for f in schema.fields}


def test_sokoban_rows_without_noise_state_the_truth_and_solve_the_level():
  actor = demo.actor_rows("sokoban", [0, 1], 0.0, seed=0)
  planner = demo.planner_rows("sokoban", [0, 1], 0.0, seed=0)
  names = textenv.SOKOBAN_TASK.action_names
  for row in actor + planner:
    assert [m["role"] for m in row["messages"]] == ["system", "user"]
    assert _parsed(row, SOKOBAN) == _canonical_truth(row, SOKOBAN)
    assert not row["meta"]["wrong"]
  for row in planner:
    assert parse.extract_tag(row["target"], "subgoal")
  # Replaying the demonstrated actions in a fresh env solves each level.
  env = sokoban_text.text_env(splits.sokoban_instances("source").levels)
  for index in (0, 1):
    env.reset(index)
    acts = [parse.parse_action(r["target"], names) for r in actor if r["meta"]["instance"] == index]
    assert acts and None not in acts
    for a in acts:
      _, _, terminated, _, info = env.step(sokoban_text.action_id(a))
    assert terminated and info["success"]
  # The actor's window holds at most three frames and the planner's at most three.
  assert all(r["messages"][1]["content"].count("Observation ") <= 3 for r in actor + planner)


@pytest.mark.parametrize("task", ["BabyAI-GoToRedBall-v0", "BabyAI-GoToDoor-v0"])
def test_babyai_rows_without_noise_follow_the_bot_that_succeeds(task):
  schema = schemas.get("minigrid")
  rows = demo.actor_rows(task, [0], 0.0, seed=0)
  _, _, actions, success = demo.expert_episode(task, 0)
  assert success
  names = textenv.MINIGRID_TASK.action_names
  assert [parse.parse_action(r["target"], names) for r in rows] == list(actions)
  for row in rows + demo.planner_rows(task, [0], 0.0, seed=0):
    assert _parsed(row, schema) == _canonical_truth(row, schema)


def test_wrong_share_is_close_to_the_noise_rate_and_seeded():
  rows = demo.actor_rows("sokoban", range(20), 0.3, seed=3)
  wrong = np.mean([r["meta"]["wrong"] for r in rows])
  n = len(rows)
  assert n >= 200 and abs(wrong - 0.3) < 3 * np.sqrt(0.3 * 0.7 / n)
  for r in rows:  # a wrong assertion states the belief, and only misperceived rows are wrong
    assert _parsed(r, SOKOBAN) == {f.name: schemas.canonical(f, r["meta"]["belief"][f.name])
                                   for f in SOKOBAN.fields}
    assert r["meta"]["noisy"] or not r["meta"]["wrong"]
  assert [r["target"] for r in demo.actor_rows("sokoban", range(20), 0.3, seed=3)] == \
      [r["target"] for r in rows]
  assert [r["target"] for r in demo.actor_rows("sokoban", range(20), 0.3, seed=4)] != \
      [r["target"] for r in rows]
  planner = demo.planner_rows("sokoban", range(20), 0.3, seed=3)
  assert [r["meta"]["t"] for r in planner if r["meta"]["noisy"]] != \
      [r["meta"]["t"] for r in rows if r["meta"]["noisy"]][:len(planner)]


def test_a_misperceived_action_is_the_experts_for_the_believed_board():
  rows = [r for r in demo.actor_rows("sokoban", range(4), 0.5, seed=1) if r["meta"]["wrong"]]
  assert rows
  percept = scripted.SokobanPerception()
  names = textenv.SOKOBAN_TASK.action_names
  differs = 0
  for r in rows:
    frame = scripted.current_frame(r["messages"][1]["content"])
    believed = percept.apply(percept.clean(frame), r["meta"]["belief"])
    level = scripted.sokoban_level(**believed)
    action = parse.parse_action(r["target"], names)
    if level is None:
      continue
    sol = solver.solve(level, max_states=20_000)
    if sol.solvable and sol.actions:
      assert action == scripted.MOVES[sol.actions[0]]
      differs += action != r["meta"]["expert_action"]
  assert differs  # some beliefs change the action, so assertions drive behaviour


def test_constructed_misperception_states_the_belief_it_acts_on():
  frames, facts, _, _ = demo.expert_episode("sokoban", 0)
  board, assertion = demo.believe("sokoban", frames, facts, 0, True, np.random.default_rng(0))
  truth = demo.believe("sokoban", frames, facts, 0, False, None)[1]
  wrong = [k for k in truth if truth[k] != assertion[k]]
  assert wrong and set(wrong) <= {"player", "boxes", "blocked_moves", "boxes_on_targets"}
  # The wrong fields are exactly what the corrupted board shows, the rest is the truth.
  seen = scripted.SokobanPerception().facts(board)
  assert {k: seen[k] for k in wrong} == {k: assertion[k] for k in wrong}


def test_bad_inputs_raise():
  with pytest.raises(ValueError, match="noise"):
    demo.actor_rows("sokoban", [0], 1.5, seed=0)
  with pytest.raises(KeyError, match="no demonstrations"):
    demo.planner_rows("procgen-maze", [0], 0.0, seed=0)
