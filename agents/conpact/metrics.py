"""Metrics over results rows of ConPAct runs (host-loop rows with the agent's `records`).

A metric without inputs is None (null in summary.json), never NaN or 0, and reports its coverage.

Assertions and coverage (records: "pair" = a planner/actor check about one frame, "step"/"single"
= an actor-only assertion):
  coverage_<role>    share of that role's asserting calls whose reply held a parseable assertion
                     block (initial assertions; discussion replies are not counted)
  fields_<role>      mean share of the schema's fields that role stated (parseable, not unknown)
  comparable_checks  share of checks in which at least one field was stated by BOTH roles
Mismatch D, over COMPARABLE checks only (a role that states nothing cannot contradict, and must
not look consistent for it):
  D_step / initial_D  contradicted checks / comparable checks (before any discussion)
  D_traj              rollouts with >= 1 contradicted check / rollouts with >= 1 comparable check
  residual_D          contradicted checks still contradicted after discussion / contradicted checks
  residual_D_traj     rollouts with a contradiction left unresolved / rollouts with a contradiction
  discussion rate     contradicted checks that were discussed; repair rate: discussed -> resolved
Correctness: per role, stated applicable fields equal to ground truth / stated applicable fields
(initial assertions; pair checks for planner and actor, single-role asserts count as actor).
Performance per instance (cluster) with k rollouts: avg@k, unbiased pass@k, pass^k; success rate,
return, steps. Cost: calls/episode, output tokens/episode (rollouts with usage), calls/action,
usage coverage = rollouts whose every call reported token usage. CIs resample instances.
Failure attribution, sub-goal adherence and CC/CW: attribution.py.
"""
import collections

import numpy as np

from lib.report import stats

ASSERTING = ("pair", "step", "single")  # record kinds that hold an initial actor assertion


def records(row, kind=None) -> list[dict]:
  """The agent's records in a results row (all, or those of one `kind`)."""
  recs = (row.get("agent") or {}).get("records") or []
  return [r for r in recs if kind is None or r["kind"] == kind]


def ratio(num, den):
  """num / den, or None when there was nothing to divide by."""
  return num / den if den else None


def comparable_fields(check: dict) -> list[str]:
  """Fields of a pair record that both roles stated (a value that is not unknown)."""
  p, a = check["planner"]["values"], check["actor"]["values"]
  return [k for k, v in p.items() if v is not None and a.get(k) is not None]


def is_comparable(check: dict) -> bool:
  """A check can show a contradiction only when both roles stated some field."""
  return bool(check["conflicts"]) or bool(comparable_fields(check))


def _correct(values: dict, truth: dict | None) -> tuple[int, int]:
  if truth is None:
    return 0, 0
  ok = n = 0
  for k, v in values.items():
    if v is None or truth.get(k) is None:
      continue
    n += 1
    ok += v == truth[k]  # JSON forms: sets were written as sorted lists, so order is canonical
  return ok, n


def mismatch(rows) -> dict:
  """Mismatch D (initial/residual, per step/trajectory) over comparable checks; see module doc."""
  checks = comparable = conflicted = discussed = repaired = residual = 0
  traj, traj_residual = [], []
  for row in rows:
    pairs = records(row, "pair")
    checks += len(pairs)
    judged = [p for p in pairs if is_comparable(p)]
    if not judged:
      continue
    comparable += len(judged)
    hit = [p for p in judged if p["conflicts"]]
    traj.append(bool(hit))
    left = 0
    for p in hit:
      conflicted += 1
      d = p.get("discussion")
      if d is None:
        left += 1
        continue
      discussed += 1
      repaired += bool(d["repaired"])
      left += not d["repaired"]
    residual += left
    if hit:
      traj_residual.append(left > 0)
  return {"checks": checks, "comparable": comparable, "contradicted": conflicted,
          "comparable_checks": ratio(comparable, checks),
          "D_step": ratio(conflicted, comparable), "initial_D": ratio(conflicted, comparable),
          "D_traj": ratio(sum(traj), len(traj)), "residual_D": ratio(residual, conflicted),
          "residual_D_traj": ratio(sum(traj_residual), len(traj_residual)),
          "discussion_rate": ratio(discussed, conflicted), "repair_rate": ratio(repaired, discussed)}


def coverage(rows) -> dict:
  """Per role: share of asserting calls with a parseable block, mean share of fields stated."""
  found = {"planner": [], "actor": []}
  stated = {"planner": [], "actor": []}
  for row in rows:
    for rec in records(row):
      if rec["kind"] not in ASSERTING:
        continue
      for role in ("planner", "actor") if rec["kind"] == "pair" else ("actor",):
        a = rec[role]
        values = a["values"]
        found[role].append(bool(a.get("found", True)))
        known = sum(v is not None for v in values.values())
        stated[role].append(known / len(values) if values else 0.0)
  out = {}
  for role in ("planner", "actor"):
    out[f"coverage_{role}"] = ratio(sum(found[role]), len(found[role]))
    out[f"fields_{role}"] = float(np.mean(stated[role])) if stated[role] else None
    out[f"asserting_calls_{role}"] = len(found[role])
  return out


def correctness(rows) -> dict:
  tot = {"planner": [0, 0], "actor": [0, 0]}
  for row in rows:
    for rec in records(row):
      if rec["kind"] not in ASSERTING:
        continue
      roles = ("planner", "actor") if rec["kind"] == "pair" else ("actor",)
      for role in roles:
        ok, n = _correct(rec[role]["values"], rec["truth"])
        tot[role][0] += ok
        tot[role][1] += n
  return {f"{r}_correct": ratio(ok, n) for r, (ok, n) in tot.items()}


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
                                 if covered else None),
          "calls/action": ratio(calls, actions),
          "usage_coverage": len(covered) / len(rows),
          "backend_errors": sum(r["status"] == "backend_error" for r in rows)}


def success_ci(rows, n_resamples: int = 2000, seed: int = 0, cluster: str = "instance"):
  return stats.bootstrap_ci(by_instance(rows, "success", cluster), n_resamples=n_resamples, seed=seed)


def mismatch_ci(rows, n_resamples: int = 2000, seed: int = 0, cluster: str = "instance"):
  """CI of per-trajectory D, resampling instances (rollouts without comparable checks are left
  out); None when no rollout had one."""
  per = collections.defaultdict(list)
  for r in rows:
    judged = [p for p in records(r, "pair") if is_comparable(p)]
    if judged:
      per[r[cluster]].append(float(any(p["conflicts"] for p in judged)))
  if not per:
    return None
  return stats.bootstrap_ci({k: np.asarray(v) for k, v in per.items()}, n_resamples=n_resamples,
                            seed=seed)


def summarize(rows, k: int, n_resamples: int = 2000, seed: int = 0) -> dict:
  """Every metric of this module for one method/condition.

  Args:
    rows: results rows of one env and condition (k rollouts per instance).
    k: rollouts per instance, for avg@k / pass@k / pass^k.
    n_resamples, seed: cluster bootstrap settings.
  Returns:
    metric name -> value; None where a metric had no inputs (CIs: (low, high) or None).
  """
  out = {"episodes": len(rows), **performance(rows, k), **mismatch(rows), **coverage(rows),
         **correctness(rows), **cost(rows)}
  out["success_ci"] = success_ci(rows, n_resamples, seed)
  out["D_traj_ci"] = mismatch_ci(rows, n_resamples, seed)
  return out
