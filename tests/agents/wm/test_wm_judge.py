"""Judge prompt rules, verdict parsing, the LLM judge through a scripted backend, the offline judge."""
import re

import pytest

from agents.wm.judge import (RULE_BASED_JUDGE_NAME, JudgeItem, LLMJudge, RuleBasedJudge,
                             judge_prompt, parse_verdict, prediction_accuracy)
from lib.backends.protocol import Backend, Completion, failed
from lib.backends.scripted import ScriptedBackend


def test_prompt_has_the_four_rules_and_fields():
  p = judge_prompt("scienceworld", "boil water", "hall", "go to kitchen", "You move to the kitchen.",
                   "I walk into the kitchen.")
  for field in ("boil water", "hall", "go to kitchen", "You move to the kitchen.",
                "I walk into the kitchen."):
    assert field in p
  assert re.search(r"1\. Meaning, not wording", p) and "2. Judge the effect" in p
  assert "3. Details that only the action itself reveals" in p and "4. Over-prediction" in p
  assert p.rstrip().endswith("`VERDICT: INCORRECT`.")


@pytest.mark.parametrize("reply,expected", [
    ("The prediction matches.\nVERDICT: CORRECT", True),
    ("Wrong location.\nVERDICT: INCORRECT", False),
    ("**Verdict:** **INCORRECT**", False),
    ("verdict: correct", True),
    ("It says VERDICT: CORRECT is tempting, but...\nVERDICT: INCORRECT", False),  # last one wins
    ("I think it is correct.", None),
])
def test_parse_verdict(reply, expected):
  assert parse_verdict(reply) is expected


class ContainsTruth:
  """Scripted judge: CORRECT iff the predicted block repeats the truth block verbatim."""

  def respond(self, messages, rng):
    text = messages[-1]["content"]
    truth = text.split("## True next observation\n")[1].split("\n\n")[0]
    pred = text.split("## Predicted next observation\n")[1].split("\n\n")[0]
    return "Compared.\nVERDICT: " + ("CORRECT" if truth == pred else "INCORRECT")


class OneFails(Backend):
  name = "flaky"

  def _generate(self, conversations, params):
    return [failed("http_429") if i == 0 else Completion(text="hmm, no verdict")
            for i, _ in enumerate(conversations)]


def items():
  return [JudgeItem("alfworld", "t", "o", "go to desk 1", "You arrive at desk 1.",
                    "You arrive at desk 1."),
          JudgeItem("alfworld", "t", "o", "open drawer 1", "Nothing happens.",
                    "You open the drawer 1."),
          JudgeItem("alfworld", "t", "o", "look", "You are in a room.", None)]


def test_llm_judge_with_scripted_backend():
  backend = ScriptedBackend(ContainsTruth())
  verdicts = LLMJudge(backend).judge(items())
  assert [v.correct for v in verdicts] == [True, False, False]
  assert verdicts[2].error == "no_prediction"
  assert backend.usage.snapshot()["calls"] == 2          # no call for the missing prediction
  acc = prediction_accuracy(verdicts)
  assert acc["accuracy"] == pytest.approx(100 / 3) and acc["no_verdict"] == 0


def test_llm_judge_records_failed_calls_and_missing_verdicts():
  verdicts = LLMJudge(OneFails()).judge(items()[:2])
  assert [(v.correct, v.error) for v in verdicts] == [(None, "http_429"), (None, "no_verdict")]
  assert prediction_accuracy(verdicts) == {"n": 2, "correct": 0, "no_verdict": 2,
                                           "accuracy": 0.0}


def test_rule_based_judge_is_named_and_follows_its_rules():
  judge = RuleBasedJudge()
  assert judge.name == RULE_BASED_JUDGE_NAME and "rule-based" in judge.name
  got = judge.judge(items() + [
      JudgeItem("alfworld", "t", "o", "go to desk 1", "You arrive at desk 1. On it: a pen 1.",
                "You arrive at the desk 1."),                   # paraphrase, same effect
      JudgeItem("alfworld", "t", "o", "open drawer 1", "Nothing happens.",
                "Nothing happens because it is locked."),        # both failures
  ])
  assert [v.correct for v in got] == [True, False, False, True, True]
