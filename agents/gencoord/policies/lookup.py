"""Baselines fitted on training rows: they look training cases up instead of composing.

- `case_table`: complete-case lookup of training targets; an unseen case yields no proposal.
- `tfidf_nn`: nearest training context under TF-IDF cosine similarity, then the composer.
"""
import collections
import json
import math
import re

import numpy as np

from agents.gencoord.policies.base import NO_PROPOSAL
from agents.gencoord.policies.composer import Composer
from agents.gencoord.prompt import render


def case_key(ctx) -> tuple:
  """A complete case: stage and the whole observation (template, goal count, inventory, the
  private facts) and the incoming message, with agent names replaced by roles so role
  permutations share a case. The inventory is part of the case: the sender's obtain step is
  net of it."""
  text = json.dumps(dict(ctx.observation), sort_keys=True, default=list) + "|" + (
      ctx.incoming or "")
  text = text.replace(ctx.agent, "<self>").replace(ctx.peer, "<peer>")
  return ctx.stage, text


class CaseTable:
  """Complete-case lookup table over training (context, target) rows (a `CommitmentPolicy`)."""
  name = "case_table"
  learned_calls = 0
  surface = "dsl"

  def __init__(self, rows=()):
    self.table = {}
    for ctx, target in rows:
      self.table[case_key(ctx)] = target.replace(ctx.agent, "<self>").replace(ctx.peer,
                                                                                "<peer>")

  def generate(self, contexts):
    """The memorised target of each context's case, or no proposal for an unseen case."""
    out = []
    for ctx in contexts:
      hit = self.table.get(case_key(ctx))
      out.append(NO_PROPOSAL if hit is None else
                 hit.replace("<self>", ctx.agent).replace("<peer>", ctx.peer))
    return out


_TOKEN = re.compile(r"[A-Za-z0-9_]+")


class TfidfNearest(Composer):
  """Nearest training context (TF-IDF cosine over rendered prompts) -> its binding."""
  name = "tfidf_nn"

  def __init__(self, rows=()):
    rows = list(rows)          # (context, binding) pairs of sender-stage training rows
    self.bindings = [b for _, b in rows]
    self.templates = np.array([c.observation["template"] for c, _ in rows])
    docs = [collections.Counter(_TOKEN.findall(render(c))) for c, _ in rows]
    vocab = sorted({w for d in docs for w in d})
    self.index = {w: i for i, w in enumerate(vocab)}
    df = np.zeros(len(vocab))
    for d in docs:
      for w in d:
        df[self.index[w]] += 1
    self.idf = np.log((1 + len(docs)) / (1 + df)) + 1.0
    self.matrix = np.stack([self._vec(d) for d in docs]) if docs else np.zeros((0, len(vocab)))

  def _vec(self, counts) -> np.ndarray:
    v = np.zeros(len(self.index))
    for w, n in counts.items():
      if w in self.index:
        v[self.index[w]] = (1 + math.log(n)) * self.idf[self.index[w]]
    norm = np.linalg.norm(v)
    return v / norm if norm else v

  def sender_binding(self, ctx):
    if not len(self.bindings):
      return None
    scores = self.matrix @ self._vec(collections.Counter(_TOKEN.findall(render(ctx))))
    # Only neighbours of the same public template name an admissible branch.
    scores = np.where(self.templates == ctx.observation["template"], scores, -np.inf)
    return self.bindings[int(np.argmax(scores))] if np.isfinite(scores.max()) else None
