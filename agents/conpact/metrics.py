"""Metrics over results rows of ConPAct runs (host-loop rows with the agent's `records`).

Mismatch (per comparator check = a planner/actor assertion pair about the same frame):
  D per step         fraction of checks with >= 1 contradiction (before any discussion: initial D)
  D per trajectory   fraction of rollouts (with >= 1 check) that had a contradiction
  residual D         fraction of contradicted checks still contradicted after discussion
  discussion rate    contradicted checks that were discussed; repair rate: discussed -> resolved
Correctness: per role, stated applicable fields equal to ground truth / stated applicable fields
(initial assertions; pair checks for planner and actor, single-role asserts count as actor).
Performance per instance (cluster) with k rollouts: avg@k, unbiased pass@k, pass^k; success rate,
return, steps. Cost: calls/episode, output tokens/episode (rollouts with usage), calls/action,
usage coverage = rollouts whose every call reported token usage. CIs resample instances.
"""
import collections
import math

import numpy as np

from lib import stats


def _records(row, kind=None):
  recs = (row.get("agent") or {}).get("records") or []
  return [r for r in recs if kind is None or r["kind"] == kind]


def _correct(values: dict, truth: dict | None) -> tuple[int, int]:
  if truth is None:
    return 0, 0
  ok = n = 0
  for k, v in values.items():
    if v is None or truth.get(k) is None:
      continue
    n += 1
    ok += _same(v, truth[k])
  return ok, n


def _same(a, b) -> bool:
  """Equality of JSON forms (sets were written as sorted lists, so order is already canonical)."""
  return a == b


def mismatch(rows) -> dict:
  checks = conflicted = discussed = repaired = residual = 0
  traj = []
  for row in rows:
    pairs = _records(row, "pair")
    if not pairs:
      continue
    hit = [bool(p["conflicts"]) for p in pairs]
    traj.append(any(hit))
    checks += len(pairs)
    for p, h in zip(pairs, hit):
      if not h:
        continue
      conflicted += 1
      d = p.get("discussion")
      if d is None:
        residual += 1
        continue
      discussed += 1
      repaired += bool(d["repaired"])
      residual += not d["repaired"]
  div = lambda a, b: a / b if b else math.nan
  return {"checks": checks, "D_step": div(conflicted, checks), "D_traj": div(sum(traj), len(traj)),
          "initial_D": div(conflicted, checks), "residual_D": div(residual, conflicted),
          "discussion_rate": div(discussed, conflicted), "repair_rate": div(repaired, discussed)}


def correctness(rows) -> dict:
  tot = {"planner": [0, 0], "actor": [0, 0]}
  for row in rows:
    for rec in _records(row):
      roles = ("planner", "actor") if rec["kind"] == "pair" else ("actor",)
      for role in roles:
        ok, n = _correct(rec[role]["values"], rec["truth"])
        tot[role][0] += ok
        tot[role][1] += n
  return {f"{r}_correct": ok / n if n else math.nan for r, (ok, n) in tot.items()}


def by_instance(rows, field: str = "success", cluster: str = "instance") -> dict[str, np.ndarray]:
  out = collections.defaultdict(list)
  for r in rows:
    out[r[cluster]].append(float(r[field]))
  return {k: np.asarray(v) for k, v in sorted(out.items())}


def performance(rows, k: int, cluster: str = "instance") -> dict:
  succ = by_instance(rows, "success", cluster)
  if any(v.size < k for v in succ.values()):
    raise ValueError(f"every instance needs >= {k} rollouts for @{k} metrics")
  return {
      f"avg@{k}": float(np.mean([stats.avg_at_k(v) for v in succ.values()])),
      f"pass@{k}": float(np.mean([stats.pass_at_k(v.size, int(v.sum()), k) for v in succ.values()])),
      f"pass^{k}": float(np.mean([stats.pass_hat_k(v, k) for v in succ.values()])),
      "success": float(np.mean([r["success"] for r in rows])),
      "return": float(np.mean([r["return"] for r in rows])),
      "steps": float(np.mean([r["actions"] for r in rows])),
  }


def cost(rows) -> dict:
  calls = sum(r["calls"] for r in rows)
  actions = sum(r["actions"] for r in rows)
  covered = [r for r in rows if r["calls"] and r["calls_with_usage"] == r["calls"]]
  return {"calls/episode": calls / len(rows),
          "out_tokens/episode": (float(np.mean([r["output_tokens"] for r in covered]))
                                 if covered else math.nan),
          "calls/action": calls / actions if actions else math.nan,
          "usage_coverage": len(covered) / len(rows),
          "backend_errors": sum(r["status"] == "backend_error" for r in rows)}


def success_ci(rows, n_resamples: int = 2000, seed: int = 0, cluster: str = "instance"):
  return stats.bootstrap_ci(by_instance(rows, "success", cluster), n_resamples=n_resamples, seed=seed)


def mismatch_ci(rows, n_resamples: int = 2000, seed: int = 0, cluster: str = "instance"):
  """CI of per-trajectory D, resampling instances (rollouts without checks are left out)."""
  per = collections.defaultdict(list)
  for r in rows:
    pairs = _records(r, "pair")
    if pairs:
      per[r[cluster]].append(float(any(p["conflicts"] for p in pairs)))
  if not per:
    return (math.nan, math.nan)
  return stats.bootstrap_ci({k: np.asarray(v) for k, v in per.items()}, n_resamples=n_resamples,
                            seed=seed)


def summarize(rows, k: int, n_resamples: int = 2000, seed: int = 0) -> dict:
  """Every metric for one method/condition."""
  out = {"rollouts": len(rows), **performance(rows, k), **mismatch(rows), **correctness(rows),
         **cost(rows)}
  out["success_ci"] = success_ci(rows, n_resamples, seed)
  out["D_traj_ci"] = mismatch_ci(rows, n_resamples, seed)
  return out
