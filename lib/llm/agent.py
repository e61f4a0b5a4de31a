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

Host-loop environments follow the STYLE.md text-env convention, `reset(seed) -> (obs, info)` and
`step(action) -> (obs, reward, terminated, truncated, info)`; `JaxEnvAdapter` wraps a gymnax-style
JAX env into that shape (one instance, jitted step) and exposes the current `state`.
"""
import dataclasses
from typing import Any, Protocol

import jax
import numpy as np

from lib.llm.backend import Completion, Conversation, SamplingParams


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
    ...

  def next(self) -> ModelRequest | Act:
    ...

  def consume(self, completion: Completion) -> None:
    ...

  def observe(self, obs: Any, reward: float, terminated: bool, truncated: bool,
              info: dict) -> None:
    ...


class HostEnv(Protocol):

  def reset(self, seed: int) -> tuple[Any, dict]:
    ...

  def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
    ...


class JaxEnvAdapter:
  """One instance of a gymnax-style env behind the host-loop `reset(seed)`/`step(action)` API.

  Uses `step_env` (no auto-reset: the loop ends the episode itself) and the env's own truncation
  rule; `self.state` is the current env state for agents/comparators that read ground truth.
  Jitted functions are cached per env object, so many adapters over one env compile once.
  """

  _JIT_CACHE: dict[int, tuple] = {}

  def __init__(self, env, params=None):
    self.env = env
    self.params = env.default_params if params is None else params
    cached = self._JIT_CACHE.get(id(env))
    if cached is None or cached[0] is not env:
      cached = (env, jax.jit(env.reset_env), jax.jit(env.step_env), jax.jit(env.is_truncated))
      self._JIT_CACHE[id(env)] = cached
    _, self._reset, self._step, self._truncated = cached
    self.state = None
    self._key = None
    self._t = 0

  def reset(self, seed: int):
    key = jax.random.PRNGKey(seed)
    self._key, sub = jax.random.split(key)
    obs, self.state = self._reset(sub, self.params)
    self._t = 0
    return obs, {}

  def step(self, action):
    self._t += 1
    sub = jax.random.fold_in(self._key, self._t)
    obs, self.state, reward, terminated, info = self._step(sub, self.state, action, self.params)
    truncated = bool(self._truncated(self.state, self.params)) and not bool(terminated)
    return obs, float(reward), bool(terminated), truncated, dict(info)


def scalar_info(info: dict) -> dict:
  """The JSON-able scalar entries of an env info dict (for transcripts)."""
  out = {}
  for k, v in (info or {}).items():
    if isinstance(v, (str, bool, int, float)) or v is None:
      out[k] = v
    elif hasattr(v, "shape") and getattr(v, "shape", None) == ():
      out[k] = np.asarray(v).item()
  return out
