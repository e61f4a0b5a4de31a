"""What the closed loops (agents/gencoord/protocol.py) read from a commitment policy.

A commitment policy never sees the world, the episode or the other agent's private facts; it sees
only `LocalContext`s, one stage of many episodes at a time (so learned models batch). The loop after
generation (parse -> check -> resolve -> materialize -> compile -> execute -> verify) is identical
whichever policy wrote the text. Not to be confused with `lib.backends.protocol.Backend` (a chat
model): a learned commitment policy wraps one.
"""
from typing import Protocol, Sequence

from agents.gencoord.episode import LocalContext

NO_PROPOSAL = "SELF -\nREQ -"      # a legal program with no commitment content


class PolicyIdentity(Protocol):
  """What every policy declares about itself.

  Attributes:
    name: the policy's name in result rows.
    learned_calls: model calls one generation costs (0 for a deterministic rule, 1 for a learned
      model or a reference that stands in for one).
    surface: what the policy writes before conversion to Short DSL: "dsl" for every model-free
      policy; a policy on "json" / "factor" / "freeform" is a `RawTextPolicy` as well, so the
      loop can see what crossed the agent boundary.
  """
  name: str
  learned_calls: int
  surface: str


class CommitmentPolicy(PolicyIdentity, Protocol):
  """Local contexts in, Short DSL out."""

  def generate(self, contexts: Sequence[LocalContext]) -> list[str]:
    """One stage's generations.

    Args:
      contexts: the local contexts of one stage, one per episode.
    Returns:
      One Short DSL text per context, in order.
    """
    ...


class RawTextPolicy(PolicyIdentity, Protocol):
  """A policy whose outputs stay on its `surface` until the loop decodes them: text generators
  on non-DSL surfaces (the forward loop reads their raw sender outputs for the wire payload) and
  free-form dialogue speakers (`protocol.run_dialogue` reads only raw turns)."""

  def generate_raw(self, contexts: Sequence[LocalContext]) -> list[str]:
    """One stage's (or dialogue turn's) outputs on `surface`, unconverted.

    Args:
      contexts: the local contexts of one stage, one per episode.
    Returns:
      One output text per context, in order.
    """
    ...
