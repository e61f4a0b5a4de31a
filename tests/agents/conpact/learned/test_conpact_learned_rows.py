"""Study rows (agents/conpact/learned/rows.py) and discussion / ReAct demonstrations."""
import pytest

from agents.conpact import compare, parse, prompts, schemas, textenv
from agents.conpact import demonstrations as demo
from agents.conpact.learned import rows as study_rows

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
  study_rows.write_jsonl(actor, path)
  assert study_rows.read_jsonl(path) == actor
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
