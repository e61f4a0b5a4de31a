"""Scripted policies: programmatic "models" with an explicit, seeded noise model, as a Backend.

They let the agent machinery (prompting, parsing, comparators, the host loop) be tested and
demonstrated on CPU without a language model. Numbers produced with them are mechanics, not model
results: `ScriptedBackend.name` is "scripted", and reports should carry that label.

A policy is any object with `respond(messages, rng) -> str`. The reply may depend only on the
conversation and on `rng`, which the backend derives from (backend seed, request seed, a hash of
the conversation) -- so the same episode gets the same replies whatever else shares its batch, and
two rollouts of one instance differ when the host loop gives them different request seeds.
"""
import dataclasses
import hashlib
import json
import time
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

from lib.llm.backend import Backend, Completion, Conversation, SamplingParams


class ScriptedPolicy(Protocol):

  def respond(self, messages: Conversation, rng: np.random.Generator) -> str:
    ...


@dataclasses.dataclass(frozen=True)
class NoiseModel:
  """Named corruption probabilities, e.g. {"perception": 0.2, "action": 0.05}.

  A policy asks `noise.fires("perception", rng)` at each point where it may err; asking for a name
  that was not configured raises, so a typo cannot silently mean "no noise".
  """
  rates: Mapping[str, float] = dataclasses.field(default_factory=dict)

  def __post_init__(self):
    bad = {k: v for k, v in self.rates.items() if not 0.0 <= float(v) <= 1.0}
    if bad:
      raise ValueError(f"noise rates must lie in [0, 1]: {bad}")

  def rate(self, name: str) -> float:
    if name not in self.rates:
      raise KeyError(f"noise {name!r} is not configured; configured: {sorted(self.rates)}")
    return float(self.rates[name])

  def fires(self, name: str, rng: np.random.Generator) -> bool:
    # Always draw, so whether noise fired does not shift the rest of the random stream.
    return bool(rng.random() < self.rate(name))

  def corrupt(self, name: str, value: Any, choices: Sequence[Any], rng: np.random.Generator):
    """With probability rate(name), a uniformly drawn *different* element of `choices`."""
    fire = self.fires(name, rng)
    others = [c for c in choices if c != value]
    pick = others[int(rng.integers(len(others)))] if others else value
    return pick if fire else value


class FunctionPolicy:
  """Adapts `fn(messages, rng) -> str` to the policy protocol."""

  def __init__(self, fn: Callable[[Conversation, np.random.Generator], str]):
    self.fn = fn

  def respond(self, messages: Conversation, rng: np.random.Generator) -> str:
    return self.fn(messages, rng)


def conversation_digest(messages: Conversation) -> int:
  """A stable 64-bit digest of a conversation (Python's hash() is salted per process)."""
  blob = json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()
  return int.from_bytes(hashlib.blake2b(blob, digest_size=8).digest(), "little")


def apply_stop(text: str, stop: Sequence[str]) -> tuple[str, str]:
  """Cuts `text` before the earliest stop string; returns (text, finish_reason)."""
  cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
  return (text[:cut], "stop") if cut >= 0 else (text, "stop")


class ScriptedBackend(Backend):
  """Answers each conversation with `policy.respond`, seeded per request.

  Token usage is not reported (None): scripted replies have no tokenizer, and inventing counts
  would contaminate usage metrics. `max_tokens` is not applied; stop strings are.
  """

  name = "scripted"

  def __init__(self, policy: ScriptedPolicy, seed: int = 0):
    super().__init__()
    if not hasattr(policy, "respond"):
      raise TypeError("policy needs a respond(messages, rng) -> str method")
    self.policy = policy
    self.seed = int(seed)

  def request_rng(self, messages: Conversation, params: SamplingParams) -> np.random.Generator:
    request_seed = -1 if params.seed is None else int(params.seed)
    # SeedSequence takes non-negative ints; shift the "no seed" marker into range.
    return np.random.default_rng([self.seed, request_seed + 1, conversation_digest(messages)])

  def _generate(self, conversations, params):
    out = []
    for messages, p in zip(conversations, params):
      start = time.perf_counter()
      text = self.policy.respond(messages, self.request_rng(messages, p))
      if not isinstance(text, str):
        raise TypeError(f"scripted policy returned {type(text).__name__}, expected str")
      text, reason = apply_stop(text, p.stop)
      out.append(Completion(text=text, latency_s=time.perf_counter() - start,
                            finish_reason=reason))
    return out
