"""Independent labels for the comparator's precision/recall on scripted runs.

The comparator reads assertions from reply TEXT (tolerant parsing, canonicalisation, unknown
handling). The labels here come from the other side: the scripted policy is deterministic given
(conversation, request seed), so replaying it on the logged conversation yields the structured
assertion it intended before rendering. A (check, field) pair is labelled a contradiction when both
roles intended a value for the field and the two values differ (compared as plain Python data,
not through the comparator's code). Also counted: how many labelled contradictions are decidable
from ground truth alone (exactly one role's intended value equals the true state).
"""
from agents.conpact import schemas
from lib.backends.protocol import SamplingParams
from lib.backends.scripted import ScriptedBackend


def _plain(v):
  """Order-free plain form: lists of cells/words become sorted tuples, dicts sorted items."""
  if isinstance(v, dict):
    return tuple(sorted((k, _plain(x)) for k, x in v.items()))
  if isinstance(v, (list, tuple)):
    items = [_plain(x) for x in v]
    if items and all(isinstance(x, tuple) for x in items) or all(isinstance(x, str) for x in items):
      return tuple(sorted(items))
    return tuple(items)
  return v


def replay_intended(policy, backend_seed: int, call: dict) -> dict:
  """The structured assertion the scripted policy meant in one logged call."""
  rng = ScriptedBackend(policy, seed=backend_seed).request_rng(
      call["messages"], SamplingParams(seed=call["params"]["seed"]))
  return policy.intended(call["messages"], rng) or {}


def comparator_confusion(rows, policy, backend_seed: int, schema: schemas.Schema) -> dict:
  """TP/FP/FN/TN over (check, field) pairs of every initial planner-actor check in `rows`."""
  tp = fp = fn = tn = decidable = 0
  for row in rows:
    if not row["agent"]:   # the episode ended before its agent existed (its env never reset)
      continue
    calls = [e for e in row["transcript"] if e["type"] == "call"]
    for rec in row["agent"]["records"]:
      if rec["kind"] != "pair":
        continue
      p = replay_intended(policy, backend_seed, calls[rec["calls"]["planner"]])
      a = replay_intended(policy, backend_seed, calls[rec["calls"]["actor"]])
      flagged = {c["field"] for c in rec["conflicts"]}
      for f in schema.names:
        label = (p.get(f) is not None and a.get(f) is not None
                 and _plain(p[f]) != _plain(a[f]))
        truth = (rec["truth"] or {}).get(f)
        if label and truth is not None:
          decidable += (_plain(p[f]) == _plain(truth)) != (_plain(a[f]) == _plain(truth))
        hit = f in flagged
        tp += label and hit
        fp += hit and not label
        fn += label and not hit
        tn += not label and not hit
  return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "truth_decidable": decidable,
          "precision": tp / (tp + fp) if tp + fp else None,  # None: nothing flagged / labelled
          "recall": tp / (tp + fn) if tp + fn else None}
