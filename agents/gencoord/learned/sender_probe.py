"""The sender's obtain quantity as a task of its own: need − holding of the path's item.

The quickstart's models learn every receiver row and fail the sender's `q` on new instances
(configs/gencoord/README.md). This task keeps only what that number depends on, in the text form
of the real observation, so a tiny model can be trained on it in minutes and the number of
examples, the width or the number tokens varied:

  prompt  template=<name> goal_count=<k> inventory={"<item>":<count>,...}
  target  q=<k * p - held>

with <name> one of the eight core templates, p and the item the template's sender obtains per
order (`facts.obtain_needs` at k = 1: the smaller of its bindings' quantities, as the holding of
a real world stays below both), `held` uniform in [0, k * p) (the item absent at 0), and
0-2 distractor items of `facts.SPARE_POOL` the template never names, 1-16 each; entries in item
order, as in the observation's JSON.
"""
import json

import numpy as np

from agents.gencoord import facts, suites, templates


def _template_table() -> list:
  """(template, item, per-order quantity, distractor items) for each core template."""
  out = []
  for name in suites.CORE:
    bindings = templates.get(name).bindings
    item, p = sorted(facts.obtain_needs(name, bindings, 1).items())[0]
    spares = tuple(s for s in facts.SPARE_POOL if s not in facts.touched(name))
    out.append((name, item, p, spares))
  return out


def example(rng: np.random.Generator, table: list) -> tuple[str, str]:
  """One (prompt, target) pair drawn from `rng`."""
  name, item, p, spares = table[int(rng.integers(len(table)))]
  k = int(rng.integers(1, 5))
  need = k * p
  held = int(rng.integers(0, need))
  inv = {item: held} if held else {}
  for s in rng.choice(spares, size=min(int(rng.integers(0, 3)), len(spares)), replace=False):
    inv[str(s)] = int(rng.integers(1, 17))
  prompt = (f"template={name} goal_count={k} "
            f"inventory={json.dumps(dict(sorted(inv.items())), separators=(',', ':'))}")
  return prompt, f"q={need - held}"


def sequences(n: int, seed: int, exclude=frozenset()) -> list[tuple[str, str]]:
  """`n` distinct pairs, none of whose prompts is in `exclude`, drawn from a seeded generator."""
  rng, table = np.random.default_rng(seed), _template_table()
  out, seen = [], set(exclude)
  for _ in range(1000 * n):
    prompt, target = example(rng, table)
    if prompt not in seen:
      seen.add(prompt)
      out.append((prompt, target))
      if len(out) == n:
        return out
  raise RuntimeError(f"only {len(out)} distinct sequences in {1000 * n} draws")
