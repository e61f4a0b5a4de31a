"""Reasoning-trace annotation (Table 3): steps from rows, entities, rule labels, the LLM path."""
import pytest

from agents.wm import traces
from lib.backends.protocol import Completion

ADM = ["go north", "take rusty key", "open wooden box"]


def _step(think, action, admissible=None, env="textworld", obs=("o",)):
  return traces.TraceStep(env, "list" if admissible else "no-list", "X", 0, "t", 0, think,
                          action, tuple(obs), None if admissible is None else tuple(admissible),
                          5)


def test_steps_from_row_pairs_calls_with_actions(make_row):
  row = make_row("GRPO-GT", [("<think>the key</think><action>take rusty key</action>",
                              "take rusty key", "Taken."),
                             ("garbled", None, "Nothing."),
                             ("<think>go</think><action>go north</action>", "go north", "North.")],
                 "action_budget", admissible=ADM, level=3, failed_call_at=2)
  steps = traces.steps_from_row(row, seed=7)
  assert [s.action for s in steps] == ["take rusty key", None, "go north"]
  assert [s.think for s in steps] == ["the key", "", "go"]
  assert [s.eligible for s in steps] == [True, False, True]
  # o_0..o_t: what the agent had seen when it replied; the failed call produced no step
  assert steps[2].observations == ("You are in a kitchen. You see a rusty key.", "Taken.",
                                   "Nothing.")
  assert steps[0].admissible == tuple(ADM) and steps[0].seed == 7
  assert steps[0].task_id == "textworld/3" and steps[0].output_tokens == 4
  nolist = traces.steps_from_row(make_row("B", [("<think>x</think>", "go", "A")], "success",
                                          regime="no-list"))
  assert nolist[0].admissible is None


def test_sample_steps_eligible_only_seeded_and_capped():
  steps = [_step("t" if i % 2 else "", f"a{i}") for i in range(20)]
  got = traces.sample_steps(steps, 4, seed=0)
  assert len(got) == 4 and all(s.eligible for s in got)
  assert got == traces.sample_steps(steps, 4, seed=0)            # deterministic
  assert traces.sample_steps(steps, 100) == [s for s in steps if s.eligible]
  assert traces.sample_steps(steps, 4, seed=1) != got


def test_entities_and_references():
  obs = ("You arrive at drawer 3. On the countertop 1, you see a apple 2, a red mug and the "
         "rusty key. There is an exit to the north.")
  assert traces.entities(obs) == {"drawer 3", "countertop", "countertop 1", "apple 2", "apple",
                                  "mug", "key"}
  assert traces.references_entity("The mugs could hold it", ["You see a red mug."])
  assert traces.references_entity("open drawer 3", [obs])
  assert not traces.references_entity("go north to the next room", [obs])
  assert not traces.references_entity("take the key", [])
  assert not traces.references_entity("take the keyboard", ["You see a key."])


@pytest.mark.parametrize("think,action,admissible,want", [
    # list regime: admissible actions named (articles ignored), weighed with "or", one set aside
    ("I could take the rusty key or open the wooden box, but the box first.",
     "open wooden box", ADM, (2, True, True)),
    # a sequential plan is one candidate: two mentions but no comparison, nothing rejected
    ("go north, then take rusty key", "go north", ADM, (2, False, False)),
    ("I will take rusty key", "take rusty key", ADM, (1, False, False)),
    ("", "go north", ADM, (0, False, False)),
    # no-list regime: "<verb> <object>" phrases of the env's action forms
    ("Maybe go north. However the key is here so I take the key instead.", "take rusty key",
     None, (2, True, True)),
    ("I should open the box or examine the table", "open box", None, (2, True, False)),
    ("My task is to find the key. I will go east", "go east", None, (1, False, False)),
])
def test_rule_labels(think, action, admissible, want):
  got = traces.rule_labels(_step(think, action, admissible))
  assert (got["n_candidates"], got["multiple"], got["revision"]) == want


def test_parse_annotation():
  ok = 'Reasoning... {"candidates": ["a", "b"], "n_candidates": 2, "rejected": "yes"}'
  assert traces.parse_annotation(ok) == {"n_candidates": 2, "multiple": True, "revision": True}
  one = '{"n_candidates": 1, "rejected": "no"} then {"n_candidates": 0, "rejected": "No"}'
  assert traces.parse_annotation(one) == {"n_candidates": 0, "multiple": False,
                                          "revision": False}      # the last object counts
  for bad in ("no json here", '{"n_candidates": 5, "rejected": "no"}',
              '{"n_candidates": 1, "rejected": "maybe"}', '{"n_candidates": true, '
              '"rejected": "no"}', '{"rejected": "no"}', ""):
    assert traces.parse_annotation(bad) is None


class _FakeJudge:
  name = "fake-judge"

  def __init__(self, replies):
    self.replies, self.calls, self.seen = replies, 0, []

  def generate(self, convs, params):
    del params
    self.calls += 1
    self.seen += convs
    return [Completion(error="timeout") if r is None else Completion(text=r)
            for r in self.replies[:len(convs)]]


def test_llm_annotator_one_batched_call_and_null_verdicts():
  judge = _FakeJudge(['{"n_candidates": 2, "rejected": "no"}', None, "I cannot tell."])
  ann = traces.LLMTraceAnnotator(judge)
  steps = [_step("go north or take key", "go north", ADM), _step("x", "y"), _step("z", "w")]
  labels = ann.annotate(steps)
  assert judge.calls == 1 and len(judge.seen) == 3
  assert "THINK: go north or take key\nFINAL ACTION: go north" in judge.seen[0][0]["content"]
  assert labels == [{"n_candidates": 2, "multiple": True, "revision": False}, None, None]
  assert ann.name == "LLM judge (fake-judge)"
  assert ann.annotate([]) == [] and judge.calls == 1
  row = traces.table3_row(steps, steps, labels, ann.name)
  # percentages over judged steps only: the two steps without a verdict are not counted as "no"
  assert row["judged"] == 1 and row["candidates"] == 100.0 and row["revision"] == 0.0


def test_table3_row_values_and_nulls():
  steps = [_step("the key is here", "take rusty key", obs=("You see a key.",)),
           _step("go north", "go north", obs=("You see a key.",)),
           _step("", None)]
  steps[2] = traces.TraceStep(*[getattr(steps[2], f) for f in (
      "env", "regime", "condition", "seed", "task_id", "step", "think", "action",
      "observations", "admissible")], None)                  # no token count
  sampled = traces.sample_steps(steps, 10)
  labels = traces.RuleBasedTraceAnnotator().annotate(sampled)
  row = traces.table3_row(steps, sampled, labels, traces.RULE_BASED_ANNOTATOR_NAME)
  assert row == {"steps": 3, "eligible": 2, "sampled": 2, "judged": 2, "tokens": 5.0,
                 "entity": 50.0, "revision": 0.0, "candidates": 0.0,
                 "annotator": traces.RULE_BASED_ANNOTATOR_NAME}
  empty = traces.table3_row([], [], [], "x")
  assert empty["tokens"] is None and empty["entity"] is None and empty["revision"] is None
  assert empty["candidates"] is None
