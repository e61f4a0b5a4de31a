"""The audit's acting agent on the `lib.hostloop.agent.Agent` protocol (driven by `HostLoop`).

Each step: one user message built by `agents.wm.prompts.agent_prompt` (list regime when the env
reports admissible actions and `regime == "list"`, else no-list), one reply, one action. A reply
without a parsable action makes the agent send the env's harmless fallback action ("look" /
"look around") tagged `parse_failure`, so the step is counted as a step without an executed
action and the episode goes on, as in the audit's evaluator.
"""
from lib.backends.protocol import Completion, SamplingParams
from lib.hostloop.agent import Act, ModelRequest

from agents.wm.prompts import agent_prompt, parse_action, parse_think
from agents.wm.trajectory import PARSE_FAILURE_TAG

REGIMES = ("list", "no-list")
FALLBACK = {"alfworld": "look", "textworld": "look", "scienceworld": "look around"}


class WorldModelAuditAgent:
  """ReAct-style agent with the audit's prompt; `history_window` recent steps in the prompt."""

  def __init__(self, env: str, regime: str, params: SamplingParams | None = None,
               history_window: int = 5):
    if regime not in REGIMES:
      raise ValueError(f"unknown regime {regime!r}; valid: {REGIMES}")
    if env not in FALLBACK:
      raise ValueError(f"unknown env {env!r}; valid: {sorted(FALLBACK)}")
    if history_window < 0:
      raise ValueError(f"history_window must be >= 0, got {history_window}")
    self.env, self.regime, self.params, self.history_window = env, regime, params, history_window

  def reset(self, obs, info) -> None:
    self.task = info.get("task", "")
    self.obs, self.info = obs, info
    self.history: list[tuple[str, str | None]] = []
    self.pending: Act | None = None
    self.last_action: str | None = None
    self.parse_failures, self.replies, self.think_chars = 0, 0, 0

  def _admissible(self):
    if self.regime == "list":
      return self.info.get("admissible_actions")
    return None

  def next(self):
    if self.pending is not None:
      act, self.pending = self.pending, None
      return act
    window = self.history[-self.history_window:] if self.history_window else []
    prompt = agent_prompt(self.env, self.task, window, self.obs, len(self.history),
                          self._admissible())
    return ModelRequest([{"role": "user", "content": prompt}], self.params, tag="actor")

  def consume(self, completion: Completion) -> None:
    self.replies += 1
    text = completion.text or ""
    self.think_chars += len(parse_think(text))
    action = parse_action(text, self._admissible())
    self.last_action = action
    if action is None:
      self.parse_failures += 1
      self.pending = Act(FALLBACK[self.env], tag=PARSE_FAILURE_TAG)
    else:
      self.pending = Act(action, tag="actor")

  def observe(self, obs, reward, terminated, truncated, info) -> None:
    del reward, terminated, truncated
    self.history.append((self.obs, self.last_action))
    self.obs, self.info = obs, info

  def summary(self) -> dict:
    return {"replies": self.replies, "parse_failures": self.parse_failures,
            "think_chars": self.think_chars, "regime": self.regime}
