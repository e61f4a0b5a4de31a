"""The protocol between the host loop and an agent, and the host-loop environment protocol.

An agent is a small state machine the loop drives; it never calls a model itself, it *asks*:

  agent.reset(obs, info)          a new episode starts with this observation
  agent.next() -> ModelRequest    "answer this conversation for me" (the loop batches it with the
                | Act               requests of every other live episode), or "take this action"
  agent.consume(completion)       the reply to the last ModelRequest
  agent.observe(obs, reward, terminated, truncated, info)   the result of the last Act
  agent.summary() -> dict         JSON-able per-episode extras for the results row (optional)

A ReAct agent alternates request/act; Plan-Act issues a planner request, then actor requests, and
re-plans on sub-goal completion; ConPAct inserts comparator checks and discussion requests between
them. Several requests may precede one action and the loop enforces the model-call budget C and the
action budget A, so agents need no budget logic of their own.

Host-loop environments follow the text-env convention of CONTRIBUTING.md, `reset(seed) -> (obs,
info)` and `step(action) -> (obs, reward, terminated, truncated, info)`;
`envs.host_adapter.JaxEnvAdapter` puts a gymnax-style JAX env into that shape (optionally with its
family's text view).
"""
import dataclasses
from typing import Any, Protocol

import numpy as np

from lib.backends.protocol import Completion, Conversation, SamplingParams


@dataclasses.dataclass
class ModelRequest:
  """A conversation the agent wants answered; `params` None means the loop's default. `tag` names
  the role asking ("planner", "actor", ...) in transcripts."""
  messages: Conversation
  params: SamplingParams | None = None
  tag: str = ""


@dataclasses.dataclass
class Act:
  action: Any
  tag: str = ""


class Agent(Protocol):

  def reset(self, obs: Any, info: dict) -> None:
    """Must start a new episode from its first observation, dropping any earlier episode's state.

    Args:
      obs: the env's first observation (text envs: a string).
      info: the env's reset info dict.
    """
    ...

  def next(self) -> ModelRequest | Act:
    """Must return what the agent wants next: a ModelRequest (answered via `consume`) or an Act
    (its result arrives via `observe`); called again after each reply or observation."""
    ...

  def consume(self, completion: Completion) -> None:
    """Must take in the reply to the last ModelRequest (never a failed one: the loop ends the
    episode with backend_error instead).

    Args:
      completion: the backend's answer; `completion.text` holds the reply.
    """
    ...

  def observe(self, obs: Any, reward: float, terminated: bool, truncated: bool,
              info: dict) -> None:
    """Must take in the env's result of the last Act (called after every Act, the last too).

    Args:
      obs: the new observation.
      reward: the step's reward.
      terminated: whether the env ended the episode.
      truncated: whether the env's time limit cut it.
      info: the step's info dict.
    """
    ...


class HostEnv(Protocol):

  def reset(self, seed: int) -> tuple[Any, dict]:
    """Must start an episode determined by `seed`.

    Args:
      seed: the episode's seed (same seed, same episode).
    Returns:
      (obs, info): the first observation and an info dict.
    """
    ...

  def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
    """Must apply `action` to the current episode.

    Args:
      action: the agent's action (the type is the env's).
    Returns:
      (obs, reward, terminated, truncated, info); info may hold "success".
    """
    ...


def scalar_info(info: dict) -> dict:
  """The JSON-able scalar entries of an env info dict (for transcripts).

  Args:
    info: an env info dict, or None.
  Returns:
    The str/bool/int/float/None entries, and 0-d arrays as Python scalars; others dropped.
  """
  out = {}
  for k, v in (info or {}).items():
    if isinstance(v, (str, bool, int, float)) or v is None:
      out[k] = v
    elif hasattr(v, "shape") and getattr(v, "shape", None) == ():
      out[k] = np.asarray(v).item()
  return out
