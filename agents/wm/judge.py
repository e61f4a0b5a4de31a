"""Prediction-accuracy judges: an LLM judge (any backend) and an offline rule-based judge.

The LLM judge sees the task, current observation, action, the environment's true next observation
and the model's prediction, and applies the audit's four rules (our wording): meaning over wording;
judge the action's effect; unpredictable specifics are not required; over-prediction is wrong. Its
reply must end with `VERDICT: CORRECT` or `VERDICT: INCORRECT`.

`RuleBasedJudge` needs no model: it compares success/failure of the action and content-word
overlap. It is a crude stand-in for offline tests and CPU demos and is named
`RULE_BASED_JUDGE_NAME` so every table it feeds says so.
"""
import dataclasses
import re
from typing import Sequence

from lib.backends.protocol import SamplingParams

RULE_BASED_JUDGE_NAME = "rule-based judge (offline heuristic, not the paper's LLM judge)"

_ENV_EFFECTS = {
    "alfworld": ("arriving somewhere, a receptacle opening or closing, taking or placing an "
                 "object, heating/cooling/cleaning/slicing, or the action failing "
                 "(\"Nothing happens.\")"),
    "scienceworld": ("moving to a room, a door or container opening or closing, picking up or "
                     "moving an object, switching a device on or off, focusing on an object, a "
                     "change of state (heated, melted, frozen, mixed), or the action failing "
                     "(\"No known action matches that input.\", \"The door is not open.\")"),
    "textworld": ("moving to another room, taking or dropping an object, opening, closing, "
                  "unlocking, eating, or the action being refused"),
}
_UNPREDICTABLE = {
    "alfworld": "which objects lie on a surface just reached or inside a container just opened",
    "scienceworld": ("which objects are in a room just entered or a container just opened, or a "
                     "measured number such as a temperature"),
    "textworld": "the exact contents of a room just entered or a container just opened",
}


def judge_prompt(env: str, task: str, obs: str, action: str, truth: str, prediction: str) -> str:
  """The judge's user message for one prediction."""
  if env not in _ENV_EFFECTS:
    raise ValueError(f"unknown env {env!r}; valid: {sorted(_ENV_EFFECTS)}")
  return (
      "You grade a world model. It saw an observation and an action in a text environment and "
      "predicted the next observation. You also get the next observation the environment really "
      "returned. Decide whether the prediction gets the EFFECT of the action right.\n\n"
      f"## Agent's task\n{task}\n\n## Observation before the action\n{obs}\n\n"
      f"## Action\n{action}\n\n## True next observation\n{truth}\n\n"
      f"## Predicted next observation\n{prediction}\n\n"
      "## Rules\n"
      "1. Meaning, not wording: paraphrase, order, format, length and added reasoning do not "
      "matter.\n"
      f"2. Judge the effect of the action: did the prediction get right what happens, e.g. "
      f"{_ENV_EFFECTS[env]}?\n"
      "3. Details that only the action itself reveals and that could not be known beforehand, "
      f"such as {_UNPREDICTABLE[env]}, need not match; do not penalise guessed specifics.\n"
      "4. Over-prediction is wrong: a prediction that adds events that did not happen, says the "
      "action worked when it failed (or the reverse), or states a wrong resulting place or state "
      "is INCORRECT.\n\n"
      "Write one sentence of justification, then end with a line that is exactly "
      "`VERDICT: CORRECT` or `VERDICT: INCORRECT`.")


_VERDICT = re.compile(r"verdict\W{0,6}(correct|incorrect)\b", re.IGNORECASE)


def parse_verdict(reply: str) -> bool | None:
  """True/False from the last `VERDICT: ...` in the reply (markdown-tolerant); None if absent."""
  found = _VERDICT.findall(reply or "")
  if not found:
    return None
  return found[-1].lower() == "correct"


@dataclasses.dataclass
class Verdict:
  correct: bool | None  # None: no verdict (failed call or unparsable reply)
  reply: str = ""
  error: str | None = None


@dataclasses.dataclass
class JudgeItem:
  env: str
  task: str
  obs: str
  action: str
  truth: str
  prediction: str | None  # None: the model gave no <next_state>; judged incorrect, no call


class LLMJudge:
  """Judges with any backend exposing `generate(conversations, params)` (one batched call)."""

  def __init__(self, backend, params: SamplingParams = SamplingParams(max_tokens=256,
                                                                       temperature=0.0)):
    self.backend, self.params = backend, params
    self.name = f"LLM judge ({getattr(backend, 'name', type(backend).__name__)})"

  def judge(self, items: Sequence[JudgeItem]) -> list[Verdict]:
    out: list[Verdict | None] = [None] * len(items)
    asks = []
    for i, it in enumerate(items):
      if it.prediction is None:
        out[i] = Verdict(False, error="no_prediction")
      else:
        asks.append(i)
    convs = [[{"role": "user", "content": judge_prompt(items[i].env, items[i].task, items[i].obs,
                                                       items[i].action, items[i].truth,
                                                       items[i].prediction)}] for i in asks]
    for i, c in zip(asks, self.backend.generate(convs, self.params) if convs else []):
      if c.error is not None:
        out[i] = Verdict(None, error=c.error)
      else:
        v = parse_verdict(c.text)
        out[i] = Verdict(v, reply=c.text, error=None if v is not None else "no_verdict")
    return out


_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an the of to in on at is are you and it its this that with from into your "
                  "there here be for as".split())
_FAIL = re.compile(r"nothing happens|no known action|can't|cannot|not (?:open|possible|sure|"
                   r"clear)|doesn't|does not|don't|is not|already|not a verb|any such thing",
                   re.IGNORECASE)


def _content(text: str) -> list[str]:
  return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


class RuleBasedJudge:
  """Offline heuristic: correct iff the prediction agrees on failure-vs-effect and its content
  words overlap the truth's with F1 >= `threshold` (0/1 words: exact match). Crude by design."""

  name = RULE_BASED_JUDGE_NAME

  def __init__(self, threshold: float = 0.5):
    self.threshold = threshold

  def judge(self, items: Sequence[JudgeItem]) -> list[Verdict]:
    return [self._one(it) for it in items]

  def _one(self, it: JudgeItem) -> Verdict:
    if it.prediction is None:
      return Verdict(False, error="no_prediction")
    if bool(_FAIL.search(it.truth)) != bool(_FAIL.search(it.prediction)):
      return Verdict(False, reply="failure status differs")
    truth, pred = _content(it.truth), _content(it.prediction)
    if not truth or not pred:
      return Verdict(truth == pred, reply="empty content")
    common = sum(min(truth.count(w), pred.count(w)) for w in set(truth))
    precision, recall = common / len(pred), common / len(truth)
    f1 = 0.0 if common == 0 else 2 * precision * recall / (precision + recall)
    return Verdict(f1 >= self.threshold, reply=f"content F1 {f1:.2f}")


def prediction_accuracy(verdicts: Sequence[Verdict]) -> dict:
  """PredAcc = 100 * mean(correct); verdict-less items count as incorrect and are reported."""
  n = len(verdicts)
  correct = sum(v.correct is True for v in verdicts)
  missing = sum(v.correct is None for v in verdicts)
  return {"n": n, "correct": correct, "no_verdict": missing,
          "accuracy": 100.0 * correct / n if n else float("nan")}
