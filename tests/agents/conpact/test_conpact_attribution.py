"""Failure attribution, sub-goal adherence and CC/CW on hand-built episodes, against hand counts."""
import pytest

from agents.conpact import attribution


def assertion(values, found=True):
  return {"values": values, "found": found, "invalid": [], "extra": []}


def pair(planner, actor, conflicts=(), truth=None, discussion=None, actor_found=True):
  return {"kind": "pair", "planner": assertion(planner), "actor": assertion(actor, actor_found),
          "conflicts": [{"field": f} for f in conflicts], "truth": truth, "discussion": discussion}


def episode(success, records=(), plan=(), status=None):
  """plan: (subgoal, step within it, action) per action taken."""
  return {"success": success, "status": status or ("success" if success else "action_budget"),
          "agent": {"records": list(records),
                    "plan": [{"t": i, "subgoal": s, "step": j, "action": a}
                             for i, (s, j, a) in enumerate(plan)]}}


MOVES = "moves: right, up, up, left"


def test_sokoban_judge_follows_named_moves():
  assert attribution.sokoban_adheres(MOVES, 0, "right") is True
  assert attribution.sokoban_adheres(MOVES, 1, "left") is False
  assert attribution.sokoban_adheres(MOVES, 3, "left") is True
  assert attribution.sokoban_adheres(MOVES, 4, "left") is None  # the named moves ran out
  assert attribution.sokoban_adheres("free a box that is not stuck", 0, "up") is None


def test_minigrid_judge_approaches_the_stated_target():
  goal = "reach the target 3 forward, -1 right"
  assert attribution.minigrid_adheres(goal, 0, "go forward") is True
  assert attribution.minigrid_adheres(goal, 0, "turn left") is True
  assert attribution.minigrid_adheres(goal, 0, "turn right") is False
  assert attribution.minigrid_adheres(goal, 1, "turn right") is None  # frame has moved
  at = "reach the target 1 forward, 0 right"
  assert attribution.minigrid_adheres(at, 0, "pick up") is True
  assert attribution.minigrid_adheres(at, 0, "go forward") is False
  behind = "reach the target -2 forward, 0 right"
  assert attribution.minigrid_adheres(behind, 0, "turn right") is True
  assert attribution.minigrid_adheres(behind, 0, "go forward") is False
  assert attribution.minigrid_adheres("explore until the target is in view", 0, "go forward") is None


def test_subgoal_adherence_by_hand():
  rows = [episode(1, plan=[(MOVES, 0, "right"), (MOVES, 1, "down"), (MOVES, 2, "up"),
                           ("free a box", 0, "up")]),  # 3 judged, 2 adherent
          episode(1, plan=[(MOVES, 0, "right"), (MOVES, 1, "up")]),  # 2 judged, both adherent
          episode(1)]  # one role: nothing planned
  m = attribution.subgoal_adherence(rows, "sokoban")
  assert m["subgoal_adherence"] == pytest.approx((2 / 3 + 1) / 2)
  assert m["adherence_coverage"] == pytest.approx(5 / 6)
  none = attribution.subgoal_adherence([episode(1)], "sokoban")
  assert none["subgoal_adherence"] is None and none["adherence_coverage"] is None
  unjudged = attribution.subgoal_adherence(rows, "crafter")  # no judge for this env
  assert unjudged["subgoal_adherence"] is None and unjudged["adherence_coverage"] == 0.0


def test_failure_attribution_by_hand():
  agree = pair({"player": [1, 1]}, {"player": [1, 1]})
  clash = pair({"player": [1, 1]}, {"player": [1, 2]}, conflicts=["player"])
  silent = pair({"player": [1, 1]}, {"player": None}, actor_found=False)
  good, bad = [(MOVES, 0, "right")], [(MOVES, 0, "left")]
  rows = [episode(0, [clash, agree], good),    # state mismatch only
          episode(0, [agree], good + bad),     # non-adherence only
          episode(0, [agree], good),           # neither: capability
          episode(0, [silent], good),          # mismatch not judgeable: capability unjudged
          episode(1, [clash], bad),            # success: not a failure
          episode(0, [clash], bad, status="backend_error"),  # not the agent's failure
          episode(0, [clash], bad, status="env_error")]      # nor is a dead env worker
  labels = attribution.failure_labels(rows[3], "sokoban")
  assert labels == {"state_mismatch": None, "non_adherence": False, "capability": None}
  m = attribution.failure_attribution(rows, "sokoban")
  assert m["failed"] == 4
  assert m["fail_state_mismatch"] == pytest.approx(1 / 3) and m["fail_judged_state_mismatch"] == 3
  assert m["fail_non_adherence"] == pytest.approx(1 / 4) and m["fail_judged_non_adherence"] == 4
  assert m["fail_capability"] == pytest.approx(1 / 3) and m["fail_judged_capability"] == 3
  assert attribution.failure_attribution(rows[4:5], "sokoban")["fail_capability"] is None


def test_cc_cw_and_their_change_after_discussion():
  truth = {"player": [1, 1], "boxes": [[2, 2]], "n": 3, "blocked": None}
  wrong_box = {"player": [1, 1], "boxes": [[2, 3]], "n": 3, "blocked": ["up"]}
  rec = pair(wrong_box, {**wrong_box, "n": 4}, conflicts=["n"], truth=truth,
             discussion={"planner": assertion({**truth, "blocked": ["up"]}),
                         "actor": assertion(dict(truth)), "repaired": True})
  m = attribution.consistency_correctness([episode(1, [rec])])
  # player: agree + right (CC); boxes: agree + wrong (CW); n: disagree; blocked: no truth
  assert m["cc_fields"] == 3
  assert (m["CC"], m["CW"], m["D_field"]) == pytest.approx((1 / 3, 1 / 3, 1 / 3))
  # after discussion all three agree with the truth
  assert (m["CC_delta"], m["CW_delta"], m["D_field_delta"]) == pytest.approx((2 / 3, -1 / 3, -1 / 3))
  empty = attribution.consistency_correctness([episode(1)])
  assert empty["CC"] is None and empty["CC_delta"] is None and empty["cc_fields"] == 0
