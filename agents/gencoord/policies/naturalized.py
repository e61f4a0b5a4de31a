"""Naturalized-fact references (S8.1): the private binding arrives as a note in words.

- `frozen_parser`: keyword rule fitted once on training notes.
- `surface_table`: exact note string -> binding lookup.
- `oracle_factors`: the true binding, handed in from outside the agent's view.
Each composes the branch from the public codebook like `rule_minimal_request`.
"""
import re

from agents.gencoord.policies.composer import Composer, ExplicitFactorComposer

_WORD = re.compile(r"[A-Za-z0-9_]+")


def _words(text: str) -> set:
  return set(_WORD.findall(text.lower()))


class FrozenFactorParser(Composer):
  """Keyword rule fitted once on training notes: words seen with exactly one binding of a
  template vote for it; no vote (unseen wording) gives no proposal."""
  name = "frozen_parser"

  def __init__(self, rows=()):
    seen: dict = {}
    for ctx, b in rows:        # (sender context with a private note, binding)
      seen.setdefault(ctx.observation["template"], {}).setdefault(b, set()).update(
          _words(ctx.observation.get("private_note", "")))
    self.keywords = {t: {b: w - set().union(*(o for c, o in per.items() if c != b))
                         for b, w in per.items()} for t, per in seen.items()}

  def sender_binding(self, ctx):
    words = _words(ctx.observation.get("private_note", ""))
    votes = {b: len(words & kw)
             for b, kw in self.keywords.get(ctx.observation["template"], {}).items()}
    best = max(votes.values(), default=0)
    winners = [b for b, v in votes.items() if v == best]
    return winners[0] if best > 0 and len(winners) == 1 else None


class SurfaceTable(Composer):
  """Complete surface table: the exact training note string -> its binding."""
  name = "surface_table"

  def __init__(self, rows=()):
    self.table = {(ctx.observation["template"], ctx.observation.get("private_note")): b
                  for ctx, b in rows}

  def sender_binding(self, ctx):
    return self.table.get((ctx.observation["template"], ctx.observation.get("private_note")))


class OracleFactors(ExplicitFactorComposer):
  """Receives the true binding (canonical factors) from outside the agent's view."""
  name = "oracle_factors"

  def __init__(self, truth=None):
    self.truth = dict(truth or {})

  def sender_binding(self, ctx):
    return self.truth.get(ctx.episode_id)
