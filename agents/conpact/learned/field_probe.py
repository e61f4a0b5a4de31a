"""Field probe: given a demonstration row's own prompt, does a trained role state each field of
the frame as the demonstration did, and as the truth is?

A closed-loop episode mixes two failures: a role that cannot read a frame, and a frame the role
never saw in training (its own earlier moves led there). The probe removes the second: it feeds
the role the prompts of rows it was trained on (or held-out rows of the same generator), decodes
greedily, parses the `<state>` block and compares each schema field with the row's `meta.belief`
(what the demonstrator stated: the training target) and `meta.truth`. Initial-assertion rows only
(discussion rows carry a teammate's claim and are probed by the online evaluation).

Per (env schema, field): rows probed, `stated` (parseable, not unknown), `as_demonstrated`
(stated and equal to the target) and `correct` (stated and equal to the truth), as shares of the
rows probed, and `correct_of_stated` (the online metrics' per-role correctness: correct / stated);
null where nothing was probed or stated.
"""
import collections
import random
from typing import Sequence

from agents.conpact import demonstrations, parse, schemas
from lib.backends.protocol import Backend, SamplingParams


def initial_rows(rows: Sequence[dict], per_env: int, seed: int) -> list[dict]:
  """Up to `per_env` initial-assertion rows of each env schema, drawn with a seeded generator."""
  by_env = collections.defaultdict(list)
  for r in rows:
    if "discussion" not in r["meta"] and "<state>" in r["target"]:
      by_env[demonstrations.schema_name(r["meta"]["env"])].append(r)
  rng, out = random.Random(seed), []
  for env in sorted(by_env):
    pool = by_env[env]
    out += rng.sample(pool, min(per_env, len(pool)))
  return out


def _canonical(schema: schemas.Schema, raw: dict) -> dict:
  return {f.name: None if raw.get(f.name) is None else schemas.canonical(f, raw[f.name])
          for f in schema.fields}


def probe(rows: Sequence[dict], backend: Backend, max_tokens: int = 96) -> list[dict]:
  """Per (env schema, field) shares over `rows` (see the module doc); one batched greedy call.

  Args:
    rows: demonstration rows ({"messages", "target", "meta": {env, belief, truth}}).
    backend: the trained role.
    max_tokens: the reply budget (the state block comes first in every reply format).
  Returns:
    [{env, field, rows, stated, as_demonstrated, correct}], sorted by env and schema order.
  """
  replies = backend.generate([r["messages"] for r in rows],
                             SamplingParams(max_tokens=max_tokens, temperature=0.0))
  counts = collections.defaultdict(lambda: collections.Counter())
  order = {}
  for r, reply in zip(rows, replies):
    env = demonstrations.schema_name(r["meta"]["env"])
    schema = schemas.get(env)
    stated = parse.parse_assertion(reply.text or "", schema).values
    target, truth = _canonical(schema, r["meta"]["belief"]), _canonical(schema, r["meta"]["truth"])
    for i, f in enumerate(schema.fields):
      order[(env, f.name)] = i
      c = counts[(env, f.name)]
      c["rows"] += 1
      if stated[f.name] is not None:
        c["stated"] += 1
        c["as_demonstrated"] += stated[f.name] == target[f.name]
        c["correct"] += stated[f.name] == truth[f.name]
  out = []
  for (env, name), c in sorted(counts.items(), key=lambda kv: (kv[0][0], order[kv[0]])):
    n = c["rows"]
    out.append({"env": env, "field": name, "rows": n,
                **{k: (c[k] / n if n else None) for k in ("stated", "as_demonstrated",
                                                          "correct")},
                "correct_of_stated": c["correct"] / c["stated"] if c["stated"] else None})
  return out
