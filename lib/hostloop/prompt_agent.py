"""A minimal one-role agent on the host-loop protocol: observation -> one request -> one action.

It is the reference implementation of `lib.hostloop.agent.Agent` (ReAct, Plan-Act and ConPAct build
richer state machines on the same five methods) and drives the tiny-model and served-model demos:
each step it shows the model the last `window` rendered observations, parses the reply into an
action, and falls back to `fallback_action` (counted in `summary()`) when the reply does not parse.
"""
from typing import Any, Callable

from lib.backends.protocol import Completion, SamplingParams
from lib.hostloop.agent import Act, ModelRequest


class PromptAgent:

  def __init__(self, system: str, render: Callable[[Any], str],
               parse: Callable[[str], Any | None], fallback_action: Any,
               params: SamplingParams | None = None, window: int = 1, tag: str = "actor"):
    if window < 1:
      raise ValueError(f"window must be >= 1, got {window}")
    self.system, self.render, self.parse = system, render, parse
    self.fallback_action, self.params, self.window, self.tag = fallback_action, params, window, tag

  def reset(self, obs, info) -> None:
    """Starts an episode: the rendered `obs` is the only frame, counters at zero.

    Args:
      obs: the first observation (passed to `render`).
      info: ignored.
    """
    del info
    self.frames = [self.render(obs)]
    self.action = None
    self.parse_failures = 0
    self.replies = 0

  def next(self):
    """The parsed action if a reply is pending (Act), else a ModelRequest with the system prompt
    and the last `window` rendered observations."""
    if self.action is not None:
      action, self.action = self.action, None
      return Act(action, tag=self.tag)
    frames = self.frames[-self.window:]
    user = "\n\n".join(f"Observation {i + 1}/{len(frames)}:\n{f}" for i, f in enumerate(frames))
    return ModelRequest([{"role": "system", "content": self.system},
                         {"role": "user", "content": user}], self.params, tag=self.tag)

  def consume(self, completion: Completion) -> None:
    """Parses the reply into the next action (`fallback_action` when `parse` returns None).

    Args:
      completion: the model's reply.
    """
    self.replies += 1
    action = self.parse(completion.text)
    if action is None:
      self.parse_failures += 1
      action = self.fallback_action
    self.action = action

  def observe(self, obs, reward, terminated, truncated, info) -> None:
    """Appends the rendered `obs` to the frames; the other arguments are ignored.

    Args:
      obs: the new observation.
      reward: ignored.
      terminated: ignored.
      truncated: ignored.
      info: ignored.
    """
    del reward, terminated, truncated, info
    self.frames.append(self.render(obs))

  def summary(self) -> dict:
    """{"replies": model replies consumed, "parse_failures": replies that did not parse}."""
    return {"replies": self.replies, "parse_failures": self.parse_failures}
