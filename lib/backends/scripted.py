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

from lib.backends.protocol import Backend, Completion, Conversation, SamplingParams


class ScriptedPolicy(Protocol):
  """A programmatic model: anything with `respond(messages, rng) -> str`."""

  def respond(self, messages: Conversation, rng: np.random.Generator) -> str:
    """The reply to a conversation; may depend only on `messages` and `rng`.

    Args:
      messages: the conversation, a list of {"role", "content"} dicts.
      rng: the per-request generator from `ScriptedBackend.request_rng`.
    Returns:
      the reply text.
    """
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
    """The configured probability of noise `name`.

    Args:
      name: a noise name; KeyError when it is not configured.
    Returns:
      float in [0, 1].
    """
    if name not in self.rates:
      raise KeyError(f"noise {name!r} is not configured; configured: {sorted(self.rates)}")
    return float(self.rates[name])

  def fires(self, name: str, rng: np.random.Generator) -> bool:
    """True with probability rate(name); draws one uniform from `rng` whatever the outcome.

    Args:
      name: a configured noise name.
      rng: the request's generator.
    Returns:
      whether the noise fires.
    """
    # Always draw, so whether noise fired does not shift the rest of the random stream.
    return bool(rng.random() < self.rate(name))

  def corrupt(self, name: str, value: Any, choices: Sequence[Any], rng: np.random.Generator):
    """With probability rate(name), a uniformly drawn *different* element of `choices`.

    Consumes the same draws from `rng` whether or not the noise fires.

    Args:
      name: a configured noise name.
      value: the correct value.
      choices: candidate values (compared with `!=`; `value` need not be among them).
      rng: the request's generator.
    Returns:
      `value`, or on firing an element of `choices` != value (`value` when there is none).
    """
    fire = self.fires(name, rng)
    others = [c for c in choices if c != value]
    pick = others[int(rng.integers(len(others)))] if others else value
    return pick if fire else value


class FunctionPolicy:
  """Adapts `fn(messages, rng) -> str` to the policy protocol."""

  def __init__(self, fn: Callable[[Conversation, np.random.Generator], str]):
    self.fn = fn

  def respond(self, messages: Conversation, rng: np.random.Generator) -> str:
    """Returns fn(messages, rng).

    Args:
      messages, rng: as in `ScriptedPolicy.respond`.
    Returns:
      the reply text.
    """
    return self.fn(messages, rng)


def conversation_digest(messages: Conversation) -> int:
  """A stable 64-bit digest of a conversation (Python's hash() is salted per process).

  Args:
    messages: a JSON-serialisable conversation.
  Returns:
    int in [0, 2**64): blake2b of its key-sorted JSON.
  """
  blob = json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()
  return int.from_bytes(hashlib.blake2b(blob, digest_size=8).digest(), "little")


def apply_stop(text: str, stop: Sequence[str]) -> tuple[str, str]:
  """Cuts `text` before the earliest stop string; returns (text, finish_reason).

  Args:
    text: the full reply.
    stop: stop strings; empty ones are ignored.
  Returns:
    (cut, "stop"): the text before the earliest stop string (all of it when none occurs);
    the reason is "stop" either way, as a scripted reply always ends by itself.
  """
  cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
  return (text[:cut], "stop") if cut >= 0 else (text, "stop")


class ScriptedBackend(Backend):
  """Answers each conversation with `policy.respond`, seeded per request.

  Token usage is not reported (None): scripted replies have no tokenizer, and inventing counts
  would contaminate usage metrics. `max_tokens` and `regex` are not applied; stop strings are.
  """

  name = "scripted"

  def __init__(self, policy: ScriptedPolicy, seed: int = 0):
    super().__init__()
    if not hasattr(policy, "respond"):
      raise TypeError("policy needs a respond(messages, rng) -> str method")
    self.policy = policy
    self.seed = int(seed)

  def request_rng(self, messages: Conversation, params: SamplingParams) -> np.random.Generator:
    """The request's generator, seeded by (backend seed, request seed, conversation digest).

    Args:
      messages: the conversation.
      params: its SamplingParams; seed None and any seed >= 0 give different streams.
    Returns:
      np.random.Generator.
    """
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
