"""Agent state machines through the real host loop with a scripted backend (mechanics)."""
import numpy as np
import pytest

from agents.conpact import methods, textenv
from envs.sokoban import text as sokoban_text
from lib.backends.scripted import FunctionPolicy, ScriptedBackend
from lib.hostloop.loop import EpisodeJob, HostLoop
from lib.run.results import ResultsLog

SOKO = textenv.task("sokoban")
LEVEL = np.array([[1, 1, 1, 1, 1, 1, 1],
                  [1, 0, 0, 0, 0, 0, 1],
                  [1, 0, 5, 3, 0, 2, 1],
                  [1, 0, 0, 0, 0, 0, 1],
                  [1, 1, 1, 1, 1, 1, 1]], np.int8)
TRUE_STATE = '{"player": [2, 2], "boxes": [[2, 3]], "boxes_on_targets": 0, "blocked_moves": []}'
WRONG_STATE = '{"player": [2, 1], "boxes": [[2, 3]], "boxes_on_targets": 0, "blocked_moves": []}'


def run_episode(tmp_path, method, respond, actions=6, calls=40, **settings):
  backend = ScriptedBackend(FunctionPolicy(respond))
  spec = EpisodeJob({"i": 0}, make_env=lambda: sokoban_text.text_env(LEVEL[None]),
                     make_agent=lambda: methods.make_agent(method, SOKO, **settings), env_seed=0)
  with ResultsLog(str(tmp_path), key=("i",)) as log:
    HostLoop(backend, action_budget=actions, call_budget=calls, show_progress=False).run([spec], log)
    return log.rows()[0]


def calls_of(row):
  return [e for e in row["transcript"] if e["type"] == "call"]


def acted(row):
  return [e["tag"].split(":")[1] for e in row["transcript"] if e["type"] == "action"]


def test_plan_act_windows_and_replanning(tmp_path):
  def respond(msgs, rng):
    if msgs[0]["content"].startswith("ROLE: planner"):
      return "<subgoal>walk</subgoal>"
    return "<action>left</action><status>ongoing</status>"
  row = run_episode(tmp_path, "plan_act", respond, actions=7, max_subgoal_steps=2)
  tags = [c["tag"] for c in calls_of(row)]
  # plan, 2 actions, plan, 2 actions, ... : the planner is re-called every 2 actions
  assert tags[:7] == ["planner", "actor", "actor", "planner", "actor", "actor", "planner"]
  planner_users = [c["messages"][1]["content"] for c in calls_of(row) if c["tag"] == "planner"]
  assert [u.count("Observation ") for u in planner_users] == [1, 2, 3, 3]  # current + <= 2 starts
  actor_users = [c["messages"][1]["content"] for c in calls_of(row) if c["tag"] == "actor"]
  assert max(u.count("Observation ") for u in actor_users) == 3
  assert all("Sub-goal: walk" in u for u in actor_users)


def test_failed_status_replans_without_acting_done_acts_then_replans(tmp_path):
  replies = iter(["<subgoal>a</subgoal>", "<action>up</action><status>failed</status>",
                  "<subgoal>b</subgoal>", "<action>down</action><status>done</status>",
                  "<subgoal>c</subgoal>"] + ["<action>right</action>"] * 10)
  row = run_episode(tmp_path, "plan_act", lambda m, r: next(replies), actions=3)
  assert [c["tag"] for c in calls_of(row)][:5] == ["planner", "actor", "planner", "actor", "planner"]
  assert acted(row)[:1] == ["down"]  # the failed reply's "up" was never executed
  assert "Previous sub-goal: a (actor reported: failed)" in calls_of(row)[2]["messages"][1]["content"]


def conflict_policy(msgs, rng):
  """Planner misreads the player; in discussion with feedback it corrects itself. The actor
  reads the truth, first proposes up and, in any discussion, switches to right."""
  planner = msgs[0]["content"].startswith("ROLE: planner")
  last = msgs[-1]["content"]
  if planner:
    state = TRUE_STATE if last.startswith("CONFLICT:") else WRONG_STATE
    return f"<state>{state}</state><subgoal>push the box right</subgoal>"
  action = "right" if last.startswith(("CONFLICT:", "CHECK:")) else "up"
  return f"<state>{TRUE_STATE}</state><action>{action}</action><status>ongoing</status>"


@pytest.mark.parametrize("trigger,feedback,planner,expect_tags,first_action,repaired", [
    (False, False, False, ["planner", "actor"], "up", None),
    (True, False, True, ["planner", "actor", "planner_discuss", "actor_discuss"], "right", False),
    (True, True, False, ["planner", "actor", "actor_discuss"], "right", False),
    (True, True, True, ["planner", "actor", "planner_discuss", "actor_discuss"], "right", True),
])
def test_conpact_switches(tmp_path, trigger, feedback, planner, expect_tags, first_action, repaired):
  row = run_episode(tmp_path, "conpact_i", conflict_policy, actions=1, correction_trigger=trigger,
                    conflict_feedback=feedback, planner_participation=planner)
  calls = calls_of(row)
  assert [c["tag"] for c in calls] == expect_tags
  assert acted(row) == [first_action]
  rec = row["agent"]["records"][0]
  assert [c["field"] for c in rec["conflicts"]] == ["player"]
  assert rec["truth"]["player"] == [2, 2]
  if repaired is None:
    assert rec["discussion"] is None
    return
  assert rec["discussion"]["repaired"] is repaired
  discuss = [c for c in calls if c["tag"].endswith("_discuss")]
  for c in discuss:
    assert c["messages"][-2]["role"] == "assistant"  # its conflicting reply stays as context
    assert ('"player": planner says [2, 1], actor says [2, 2]' in c["messages"][-1]["content"]) \
        is feedback


def test_resample_majority_and_self_refine(tmp_path):
  votes = iter(["<action>up</action>", "<action>left</action>", "<action>left</action>"] * 5)
  row = run_episode(tmp_path, "resample", lambda m, r: next(votes), actions=1, samples=3)
  assert [c["tag"] for c in calls_of(row)] == ["actor", "actor_sample", "actor_sample"]
  assert acted(row) == ["left"]
  refine = lambda m, r: "<action>right</action>" if m[-1]["content"].startswith("REFINE:") \
      else "<action>up</action>"
  row = run_episode(tmp_path / "r", "self_refine", refine, actions=1)
  assert [c["tag"] for c in calls_of(row)] == ["actor", "actor_refine"] and acted(row) == ["right"]


def test_unparseable_reply_uses_counted_fallback(tmp_path):
  row = run_episode(tmp_path, "react", lambda m, r: "I am not sure.", actions=2)
  assert acted(row) == ["up", "up"] and row["agent"]["parse_failures"] == 2


def test_injected_truth_appears_only_for_chosen_role(tmp_path):
  def respond(msgs, rng):
    return "<subgoal>x</subgoal>" if msgs[0]["content"].startswith("ROLE: planner") \
        else "<action>up</action>"
  row = run_episode(tmp_path, "assertion", respond, actions=1, inject="actor")
  by_tag = {c["tag"]: c["messages"][1]["content"] for c in calls_of(row)}
  assert "Verified state" in by_tag["actor"] and "Verified state" not in by_tag["planner"]
  assert '"player": [2, 2]' in by_tag["actor"]
  with pytest.raises(KeyError):
    methods.make_agent("react", SOKO, windw=3)


def test_crafter_react_with_assertions_scores_against_truth(tmp_path):
  crafter = textenv.task("crafter")
  inst = textenv.crafter_instances("evaluation", n=1)[0]
  def respond(msgs, rng):  # asserts only the facing direction, read from the frame
    frame = msgs[1]["content"].split("(current):\n", 1)[1]
    facing = frame.split("You face ", 1)[1].split(":", 1)[0]
    return f'<state>{{"facing": "{facing}"}}</state><action>move_left</action>'
  spec = EpisodeJob({"i": 0}, make_env=inst.make_env, env_seed=inst.env_seed,
                     make_agent=lambda: methods.make_agent("react", crafter, assertions=True))
  with ResultsLog(str(tmp_path), key=("i",)) as log:
    HostLoop(ScriptedBackend(FunctionPolicy(respond)), action_budget=3, call_budget=3,
             show_progress=False).run([spec], log)
    row = log.rows()[0]
  recs = row["agent"]["records"]
  assert row["status"] == "action_budget" and len(recs) == 3
  # each record is about the frame its reply saw: the start frame, then frames after move_left
  assert [r["truth"]["facing"] for r in recs] == ["south", "west", "west"]
  for r in recs:
    assert r["actor"]["values"]["facing"] == r["truth"]["facing"]
    assert r["actor"]["values"]["inventory"] is None  # unstated: unknown, not scored
