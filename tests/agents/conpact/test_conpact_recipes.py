"""ConPAct-S vs ConPAct-R target selection, the Table 20 data switches, and the non-optimal-action
judge, on hand-built logged rows (agents/conpact/recipes.py, curate.py, optimality.py)."""
import json

import pytest

from agents.conpact import curate, optimality, schemas, scripted, textenv
from envs import splits
from envs.sokoban import text as sokoban_text

SCH, TASK = schemas.get("sokoban"), textenv.task("sokoban")
# Player (2,2), a box at (2,3), its target at (2,4): "right" solves it (L = 1).
BOARD = "\n".join([
    "Sokoban board (row, column), rows top to bottom, columns left to right:",
    "  0 1 2 3 4 5", "0 # # # # # #", "1 # _ _ _ _ #", "2 # _ @ $ . #", "3 # _ _ _ _ #",
    "4 # # # # # #"])
TRUTH = {"player": [2, 2], "boxes": [[2, 3]], "boxes_on_targets": 0, "blocked_moves": []}
WRONG = {**TRUTH, "boxes": [[1, 3]]}  # a belief both roles may share: a hypothetical error
OFF = {**TRUTH, "player": [2, 1]}  # the actor's misreading in the conflicted segment


def _user(subgoal=None):
  text = f"Observation 1 of 1 (current):\n{BOARD}\n\n"
  return text + (f"Sub-goal: {subgoal}\n\nYour reply:" if subgoal else "Your reply:")


def _reply(name, state, action=None, subgoal=None):
  tail = f"<action>{action}</action><status>ongoing</status>" if action else \
      f"<subgoal>{subgoal}</subgoal>"
  return f"<think>{name}</think><state>{json.dumps(state)}</state>{tail}"


def _call(tag, text, history=()):
  msgs = [{"role": "system", "content": f"ROLE: {tag}"},
          {"role": "user", "content": _user(None if tag.startswith("planner") else "push")}]
  return {"type": "call", "tag": tag, "text": text, "error": None, "messages": msgs + list(history)}


def _assert(state):
  return {"values": state, "found": True, "invalid": [], "extra": []}


def logged_row(success=True):
  """Three segments: consistent and correct (its second actor call takes a NON-OPTIMAL action);
  consistent but both roles share a WRONG box position; conflicted, then repaired."""
  calls = [
      _call("planner", _reply("p0", TRUTH, subgoal="push the box right")),          # 0
      _call("actor", _reply("a1", TRUTH, action="right")),                         # 1
      _call("actor", _reply("a2 nonoptimal", TRUTH, action="up")),                 # 2
      _call("planner", _reply("p3 hypothetical", WRONG, subgoal="go around")),     # 3
      _call("actor", _reply("a4 hypothetical", WRONG, action="right")),            # 4
      _call("planner", _reply("p5", TRUTH, subgoal="push the box right")),         # 5
      _call("actor", _reply("a6 conflicting", OFF, action="left")),                # 6
  ]
  conflict = [{"role": "user", "content": "CONFLICT: player"}]
  calls.append(_call("planner_discuss", _reply("p7 repaired", TRUTH, subgoal="push right"),
                     [{"role": "assistant", "content": calls[5]["text"]}] + conflict))  # 7
  calls.append(_call("actor_discuss", _reply("a8 repaired", TRUTH, action="right"),
                     [{"role": "assistant", "content": calls[6]["text"]}] + conflict))  # 8
  pair = lambda p, a, calls_, conflicts=(), discussion=None: {
      "kind": "pair", "t": 0, "truth": TRUTH, "planner": _assert(p), "actor": _assert(a),
      "conflicts": list(conflicts), "discussion": discussion, "calls": calls_}
  records = [
      pair(TRUTH, TRUTH, {"planner": 0, "actor": 1}),
      {"kind": "step", "t": 1, "truth": TRUTH, "actor": _assert(TRUTH), "calls": {"actor": 2}},
      pair(WRONG, WRONG, {"planner": 3, "actor": 4}),
      pair(TRUTH, OFF, {"planner": 5, "actor": 6},
           conflicts=[{"field": "player", "planner": [2, 2], "actor": [2, 1]}],
           discussion={"rounds": [{"planner_call": 7, "actor_call": 8, "conflicts": []}],
                       "repaired": True, "planner": _assert(TRUTH), "actor": _assert(TRUTH),
                       "final_conflicts": [], "agreed": "{}"}),
  ]
  return {"env": "sokoban", "success": success, "agent": {"records": records},
          "transcript": [{"type": "reset", "obs": BOARD}] + calls}


def _targets(recipe, **switches):
  cur = curate.curation([logged_row()], SCH, TASK.action_names,
                        curate.CurateConfig(recipe=recipe, **switches))
  return sorted((ex["source"], ex["target"].split("</think>")[0][7:]) for ex in cur.examples), \
      cur.excluded


def test_s_and_r_differ_exactly_on_hypothetical_errors_and_non_optimal_actions():
  s, s_excl = _targets("conpact_s")
  r, r_excl = _targets("conpact_r")
  repaired = [("reconciliation", "a8 repaired"), ("reconciliation", "p7 repaired"),
              ("replay", "a8 repaired"), ("replay", "p7 repaired")]
  assert r == sorted([("consistent", "a1"), ("consistent", "p0")] + repaired)
  assert sorted(set(s) - set(r)) == [("consistent", "a2 nonoptimal"),
                                     ("consistent", "a4 hypothetical"),
                                     ("consistent", "p3 hypothetical")]
  assert set(r) <= set(s)
  # the conflicting replies are context only, in both recipes
  assert s_excl == {"actor": {"inconsistent_segment": 1}, "planner": {"inconsistent_segment": 1}}
  assert r_excl == {"actor": {"inconsistent_segment": 1, "hypothetical_error": 1,
                              "non_optimal_action": 1},
                    "planner": {"inconsistent_segment": 1, "hypothetical_error": 1}}


@pytest.mark.parametrize("recipe", ["conpact_s", "conpact_r"])
def test_no_sup_and_no_replay_remove_exactly_their_examples(recipe):
  full, _ = _targets(recipe)
  no_sup, _ = _targets(recipe, reconciliation_supervision=False)
  no_replay, _ = _targets(recipe, reconciliation_replay=False)
  assert no_sup == [t for t in full if t[0] != "reconciliation"]
  assert no_replay == [t for t in full if t[0] != "replay"]
  assert {t[0] for t in full} == {"consistent", "reconciliation", "replay"}


def test_reconciliation_keeps_the_conflict_as_context_and_replay_the_original_prompt():
  ex = curate.curate([logged_row()], SCH, TASK.action_names, curate.CurateConfig())
  rec = [e for e in ex if e["source"] == "reconciliation" and e["role"] == "actor"][0]
  conflicting = logged_row()["transcript"][7]["text"]  # transcript[0] is the reset
  assert rec["messages"][-2] == {"role": "assistant", "content": conflicting}
  rep = [e for e in ex if e["source"] == "replay" and e["role"] == "actor"][0]
  assert [m["role"] for m in rep["messages"]] == ["system", "user"]


def test_filtering_off_and_failed_rollouts():
  unfiltered, excl = _targets("conpact_s", consistency_filtering=False)
  assert ("unfiltered", "a6 conflicting") in unfiltered and not excl
  cur = curate.curation([logged_row(success=False)], SCH, TASK.action_names, curate.CurateConfig())
  assert cur.examples == [] and cur.excluded == {"planner": {"unsuccessful_rollout": 4},
                                                 "actor": {"unsuccessful_rollout": 5}}
  with pytest.raises(KeyError, match="conpact_s, conpact_r"):
    curate.CurateConfig(recipe="conpact_x")


def test_sokoban_judge_on_a_hand_board():
  assert optimality.non_optimal("sokoban", BOARD, "right") is False
  assert optimality.non_optimal("sokoban", BOARD, "up") is True
  assert optimality.non_optimal("sokoban", BOARD.replace("2 # _ @ $ . #", "2 # _ @ $ _ #")
                                .replace("1 # _ _ _ _ #", "1 # . _ _ _ #"), "right") is True
  assert optimality.non_optimal("procgen-maze", BOARD, "right") is None


def test_sokoban_judge_accepts_every_solver_first_move_and_agrees_with_a_replay():
  """The solver's first move is optimal; any other move is optimal iff the solver's solution
  length after it (computed here from the real env's next frame) drops by one."""
  env = sokoban_text.text_env(splits.sokoban_instances("source").levels)
  for i in range(2):
    obs, _ = env.reset(i)
    sol = scripted.solve_board(scripted.SokobanPerception().clean(obs))
    assert optimality.non_optimal("sokoban", obs, scripted.MOVES[sol.actions[0]]) is False
    for move in scripted.MOVES:
      env.reset(i)
      nxt, _, done, _, _ = env.step(sokoban_text.action_id(move))
      after = 0 if done else scripted.solve_board(scripted.SokobanPerception().clean(nxt)).length
      assert optimality.non_optimal("sokoban", obs, move) == (after != sol.length - 1)


def _minigrid(seen: str, verb="go to") -> str:
  return f"Mission: {verb} a red ball.\nYou are facing east. You carry nothing.\nYou see:\n{seen}"


def test_minigrid_judge_counts_actions_to_face_the_target():
  frame = _minigrid("- a red ball 2 steps forward and 1 step right")  # target at (2, 1): 3 moves
  assert optimality.non_optimal("minigrid", frame, "go forward") is False
  assert optimality.non_optimal("minigrid", frame, "turn left") is True
  assert optimality.non_optimal("minigrid", frame, "turn right") is True
  blocked = frame + "\n- a wall 1 step forward"
  assert optimality.non_optimal("minigrid", blocked, "go forward") is True
  ahead = _minigrid("- a red ball 1 step forward", verb="pick up")
  assert optimality.non_optimal("minigrid", ahead, "pick up") is False
  assert optimality.non_optimal("minigrid", ahead, "done") is True
  behind = _minigrid("- a red ball 1 step back")  # two turns put it in front: either is optimal
  assert not optimality.non_optimal("minigrid", behind, "turn left")
  assert not optimality.non_optimal("minigrid", behind, "turn right")
  out_of_view = _minigrid("- a wall 1 step forward")
  assert optimality.non_optimal("minigrid", out_of_view, "turn left") is None
