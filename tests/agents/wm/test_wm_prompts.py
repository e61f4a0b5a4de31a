"""Agent/world-model prompts carry the appendix fields; the action parser tolerates slips."""
import pytest

from agents.wm.prompts import agent_prompt, parse_action, parse_think, world_model_prompt
from agents.wm.rewards import extract_next_state


def test_list_and_no_list_regimes():
  hist = [("You are in a room.", "go to desk 1"), ("You arrive at desk 1.", None)]
  listed = agent_prompt("alfworld", "put a mug on desk", hist, "On the desk 1 you see a mug 1.",
                        steps_taken=7, admissible=["take mug 1 from desk 1", "look"])
  free = agent_prompt("alfworld", "put a mug on desk", hist, "On the desk 1 you see a mug 1.",
                      steps_taken=7)
  for p in (listed, free):
    assert "put a mug on desk" in p and "Steps taken so far: 7" in p and "step 8" in p
    # the window continues the episode's numbering: steps 6 and 7
    assert "Observation 6: You are in a room." in p and "Action 7: (no valid action)" in p
    assert "<think>" in p and "<action>" in p
  assert "[take mug 1 from desk 1, look]" in listed and "take (object) from" not in listed
  assert "take (object) from (receptacle)" in free and "Actions available now" not in free
  with pytest.raises(ValueError):
    agent_prompt("nethack", "t", [], "o", 0)


def test_world_model_prompt_and_teacher_variant():
  p = world_model_prompt("scienceworld", "boil water", [("hall", "open door to kitchen")],
                         "The door is now open.", "go to kitchen")
  assert "<next_state>" in p and "<think>" in p and "Action taken: go to kitchen" in p
  assert "Privileged" not in p
  t = world_model_prompt("scienceworld", "boil water", [], "o", "a", privileged_next="You move.")
  assert t.startswith(p[:40]) and t.rstrip().endswith("You move.")
  # the reward side reads the prediction back with agents.wm.rewards' extractor
  assert extract_next_state("<think>x</think><next_state> You move. </next_state>") == "You move."


@pytest.mark.parametrize("reply,expected", [
    ("<think>go</think><action>go to desk 1</action>", "go to desk 1"),
    ("<think>maybe <action>look</action>?</think> <action>open drawer 1</action>", "open drawer 1"),
    ("<THINK>x</THINK><Action> `take mug 1 from desk 1`. </Action>", "take mug 1 from desk 1"),
    ("<think>x</think>\n<action>go   north", "go north"),            # unclosed final tag
    ("reasoning...\nAction: **inventory**", "inventory"),             # no tags at all
    ("<think>I am unsure</think>", None),
    ("<action>  </action>", None),
    ("", None),
])
def test_parse_action(reply, expected):
  assert parse_action(reply) == expected


def test_parse_action_canonicalises_to_admissible():
  adm = ["take type X latchkey", "go north"]
  assert parse_action("<action>Take Type x  Latchkey</action>", adm) == "take type X latchkey"
  assert parse_action("<action>dance</action>", adm) == "dance"  # the env judges it
  assert parse_think("<think> a </think><action>b</action>") == "a"
