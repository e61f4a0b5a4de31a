"""Commitment backends: model-visible local contexts in, Short DSL (or other surface) text out.

A backend never sees the world, the episode or the other agent's private facts; it sees only
`LocalContext`s. `generate` takes a list so learned backends can batch one stage across many
episodes; the closed loop (parse -> check -> resolve -> materialize -> compile -> execute ->
verify) is identical whichever backend produced the text. `learned_calls` is the number of
model calls one generation costs (0 for deterministic rules, 1 for a learned model).
"""
from typing import Protocol, Sequence

from agents.gencoord.episode import LocalContext

NO_PROPOSAL = "SELF -\nREQ -"      # a legal program with no commitment content


class Backend(Protocol):
  name: str
  learned_calls: int

  def generate(self, contexts: Sequence[LocalContext]) -> list[str]:
    """One output text per context, in order."""
    ...


_REGISTRY: dict = {}


def register(name: str, factory) -> None:
  """Adds a backend factory (e.g. learned backends from a later module); duplicates raise."""
  if name in _REGISTRY:
    raise ValueError(f"backend {name!r} is already registered")
  _REGISTRY[name] = factory


def make(name: str, **kwargs) -> Backend:
  if name not in _REGISTRY:
    # Importing the rule module registers the model-free backends on first use.
    from agents.gencoord import backends_rule  # noqa: F401
  if name not in _REGISTRY:
    raise KeyError(f"unknown backend {name!r}; valid: {', '.join(sorted(_REGISTRY))}")
  return _REGISTRY[name](**kwargs)


def names() -> list[str]:
  from agents.gencoord import backends_rule  # noqa: F401
  return sorted(_REGISTRY)
