"""Study rows (agents/conpact/learned/rows.py) and discussion / ReAct demonstrations."""
import numpy as np
import pytest

from agents.conpact import compare, parse, prompts, schemas, textenv
from agents.conpact import demonstrations as demo
from agents.conpact.learned import rows as study_rows
from lib.run.jsonl import read_jsonl, write_jsonl

TASK = "BabyAI-GoToRedBall-v0"


def test_build_gives_separately_noised_roles_discussions_react_and_a_clean_baseline(tmp_path):
  sets = study_rows.build([TASK], sokoban=0, babyai=3, noise={"planner": 0.5, "actor": 0.5},
                          seeds={"planner": 1, "actor": 2}, discuss=0.5)
  planner, actor, base = sets["planner"], sets["actor"], sets["baseline"]
  assert {r["meta"]["role"] for r in base} == {"planner", "actor"}
  assert not any(r["meta"]["noisy"] or r["meta"]["wrong"] for r in base)
  s = study_rows.stats(actor)
  assert s["noisy"] > 0 and s["wrong"] > 0 and s["discussion"] > 0 and s["react"] > 0
  assert study_rows.stats(planner)["discussion"] > 0
  path = str(tmp_path / "a.jsonl")
  write_jsonl(path, actor)
  assert read_jsonl(path) == actor
  with pytest.raises(ValueError, match="separate noise seeds"):
    study_rows.build([TASK], 0, 1, {"planner": 0.3, "actor": 0.3}, {"planner": 5, "actor": 5})


def test_discussion_rows_carry_the_conflict_turn_and_a_fresh_look():
  schema = schemas.get("minigrid")
  rows = demo.actor_rows(TASK, [0, 1, 2], 0.5, seed=3, discuss=1.0)
  talks = [r for r in rows if r["meta"].get("discussion")]
  assert talks
  for r in talks:
    roles = [m["role"] for m in r["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    turn = r["messages"][-1]["content"]
    assert turn.startswith("CONFLICT:") and turn.endswith(prompts.discussion_user(None, "actor")
                                                           .split("\n")[-1])
    # the conflict listed is real: the earlier reply and the teammate's claim differ there
    mine = parse.parse_assertion(r["messages"][2]["content"], schema).values
    other = parse.parse_assertion(f"<state>{prompts.state_json(r['meta']['teammate'])}</state>",
                                  schema).values
    assert compare.describe_conflicts(compare.contradictions(other, mine, schema)) in turn
    assert parse.parse_action(r["target"], textenv.MINIGRID_TASK.action_names) is not None
  # A fresh look at noise 0.5 corrects some wrong beliefs and keeps some right ones.
  fixed = [r for r in talks if not r["meta"]["wrong"]]
  assert 0 < len(fixed) <= len(talks)


def test_react_rows_use_the_single_role_prompt():
  rows = demo.actor_rows(TASK, [0], 0.0, seed=0, react=True)
  assert rows and all(r["meta"]["react"] for r in rows)
  assert "<state>" not in rows[0]["target"] and "<status>" not in rows[0]["target"]
  assert "sub-goal" not in rows[0]["messages"][0]["content"]
  assert "Sub-goal:" not in rows[0]["messages"][1]["content"]


def test_minigrid_source_instances_are_disjoint_from_evaluation():
  src = textenv.minigrid_instances((TASK,), per_task=3, split="source")
  ev = textenv.minigrid_instances((TASK,), per_task=3)
  assert [i.env_seed for i in src] == list(textenv.MINIGRID_SOURCE_SEEDS[:3])
  assert not {i.env_seed for i in src} & {i.env_seed for i in ev}
  assert not {i.instance_id for i in src} & {i.instance_id for i in ev}
  with pytest.raises(ValueError, match="split must be"):
    textenv.minigrid_instances((TASK,), per_task=1, split="test")


def _talks(rows):
  return [r for r in rows if r["meta"].get("discussion")]


def _prior(rows, talk):
  """The row a discussion row follows (its messages are that row's plus two turns)."""
  (row,) = [r for r in rows if r["messages"] == talk["messages"][:2] and not r["meta"].get(
      "discussion") and r["meta"]["t"] == talk["meta"]["t"]]
  return row


@pytest.mark.parametrize("env_id,instances", [(TASK, [0, 1, 2, 3]), ("sokoban", [0, 1, 2])])
def test_a_perfect_targeted_recheck_repairs_the_contested_fields_and_keeps_the_rest(env_id,
                                                                                    instances):
  rows = demo.actor_rows(env_id, instances, 0.5, seed=3, discuss=1.0, recheck=0.0)
  talks = _talks(rows)
  assert len(talks) >= 5
  for talk in talks:
    m, mine = talk["meta"], _prior(rows, talk)["meta"]["belief"]
    assert m["recheck"] and not m["recheck_failed"] and m["contested"]
    # contested fields read right, every other field exactly as the role stated it
    assert all(m["belief"][f] == m["truth"][f] for f in m["contested"])
    assert {k: v for k, v in m["belief"].items() if k not in m["contested"]} == \
        {k: v for k, v in mine.items() if k not in m["contested"]}
    if m["belief"] == m["truth"]:   # a repaired belief acts as the expert does
      names = textenv.task(demo.schema_name(env_id)).action_names
      assert parse.parse_action(talk["target"], names) == _prior(rows, talk)["meta"][
          "expert_action"]
  # a teammate's wrong claim is never adopted by a perfect re-check: rows whose own belief was
  # right keep it
  kept = [t for t in talks if not _prior(rows, t)["meta"]["wrong"]]
  assert kept and all(t["meta"]["belief"] == _prior(rows, t)["meta"]["belief"] for t in kept)


def test_a_failed_recheck_keeps_a_wrong_belief_or_adopts_the_teammates_wrong_claim():
  rows = demo.actor_rows(TASK, [0, 1, 2, 3], 0.5, seed=3, discuss=1.0, recheck=1.0)
  talks = _talks(rows)
  assert talks and all(t["meta"]["recheck_failed"] for t in talks)
  for talk in talks:
    prior, m = _prior(rows, talk)["meta"], talk["meta"]
    if prior["wrong"]:
      assert m["belief"] == prior["belief"]
    else:
      assert all(m["belief"][f] == m["teammate"][f] != m["truth"][f] for f in m["contested"])
    assert m["wrong"]


def test_recheck_failure_share_follows_its_rate_and_the_redraw_control_rerolls_the_belief():
  rows = demo.actor_rows(TASK, range(8), 0.3, seed=5, discuss=1.0, recheck=0.25)
  talks = _talks(rows)
  failed = np.mean([t["meta"]["recheck_failed"] for t in talks])
  assert len(talks) >= 30 and abs(failed - 0.25) < 3 * np.sqrt(0.25 * 0.75 / len(talks))
  # repair: a discussion after a wrong belief ends right at about 1 - recheck (R) vs 1 - noise (C)
  def repaired(rs):
    after_wrong = [t for t in _talks(rs) if _prior(rs, t)["meta"]["wrong"]]
    return np.mean([not t["meta"]["wrong"] for t in after_wrong]), len(after_wrong)
  r_rate, _ = repaired(demo.actor_rows(TASK, range(8), 0.3, seed=5, discuss=1.0, recheck=0.0))
  c_rows = demo.actor_rows(TASK, range(8), 0.3, seed=5, discuss=1.0)
  c_rate, n = repaired(c_rows)
  assert r_rate == 1.0 and n >= 10 and c_rate < 1.0
  assert not any("recheck" in t["meta"] for t in _talks(c_rows))   # the control is untouched
  with pytest.raises(ValueError, match="noise must lie in"):
    demo.actor_rows(TASK, [0], 0.3, seed=5, discuss=1.0, recheck=1.5)


def test_build_passes_the_recheck_rate_and_counts_failures():
  sets = study_rows.build([TASK], sokoban=0, babyai=3, noise={"planner": 0.5, "actor": 0.5},
                          seeds={"planner": 1, "actor": 2}, discuss=1.0, recheck=1.0)
  s = study_rows.stats(sets["actor"])
  assert s["discussion"] > 0 and s["recheck_failed"] == s["discussion"]
  assert study_rows.stats(sets["planner"])["recheck_failed"] > 0
