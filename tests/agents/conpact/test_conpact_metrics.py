"""Metrics on hand-built rows, against direct combinatorics and hand counts."""
import json
import math

import numpy as np
import pytest

from agents.conpact import metrics


def assertion(values, found=True):
  return {"values": values, "found": found, "invalid": [], "extra": []}


def row(inst, success, checks=(), actions=10, calls=12, with_usage=12, out_tokens=100, ret=1.0):
  recs = []
  for c in checks:  # c: (conflicted, discussed, repaired); both roles state "player"
    conflicted, discussed, repaired = c
    recs.append({"kind": "pair", "conflicts": [{"field": "player"}] if conflicted else [],
                 "discussion": {"repaired": repaired} if discussed else None, "truth": None,
                 "planner": assertion({"player": [1, 1]}),
                 "actor": assertion({"player": [1, 2] if conflicted else [1, 1]})})
  return {"instance": inst, "success": success, "return": ret, "actions": actions, "calls": calls,
          "calls_with_usage": with_usage, "output_tokens": out_tokens, "status": "success",
          "agent": {"records": recs}}


def brute_pass_at_k(n, c, k):
  return 1 - math.comb(n - c, k) / math.comb(n, k)


def test_performance_matches_combinatorics():
  rows = [row("a", s) for s in (1, 0, 1, 1)] + [row("b", s) for s in (0, 0, 0, 1)]
  m = metrics.performance(rows, k=2)
  assert m["avg@2"] == pytest.approx(np.mean([0.75, 0.25]))
  assert m["pass@2"] == pytest.approx(np.mean([brute_pass_at_k(4, 3, 2), brute_pass_at_k(4, 1, 2)]))
  assert m["pass^2"] == pytest.approx(np.mean([math.comb(3, 2) / math.comb(4, 2), 0.0]))
  with pytest.raises(ValueError):
    metrics.performance(rows, k=5)


def test_mismatch_rates_by_hand():
  rows = [row("a", 1, [(True, True, True), (False, False, False)]),
          row("a", 0, [(True, True, False), (True, False, False)]),
          row("b", 1, [(False, False, False)]),
          row("b", 1, [])]  # no checks: excluded from per-trajectory D
  m = metrics.mismatch(rows)
  assert m["checks"] == 5 and m["D_step"] == pytest.approx(3 / 5)
  assert m["D_traj"] == pytest.approx(2 / 3)
  assert m["discussion_rate"] == pytest.approx(2 / 3)
  assert m["repair_rate"] == pytest.approx(1 / 2)
  assert m["residual_D"] == pytest.approx(2 / 3)  # one unrepaired + one undiscussed of three
  assert m["residual_D_traj"] == pytest.approx(1 / 2)  # row 1 repaired its only contradiction
  assert m["comparable_checks"] == 1.0


def pair(planner: dict, actor: dict, conflicts=(), truth=None, actor_found=True, discussion=None):
  return {"kind": "pair", "planner": assertion(planner), "actor": assertion(actor, actor_found),
          "conflicts": [{"field": f} for f in conflicts], "truth": truth, "discussion": discussion}


FIELDS = ("player", "boxes", "boxes_on_targets", "blocked_moves")


def blank(**stated):
  return {f: stated.get(f) for f in FIELDS}


def test_actor_that_never_asserts_gives_null_d_and_zero_coverage():
  """A silent actor cannot contradict anyone: D is null (not 0) and its coverage is 0."""
  r = row("a", 0)
  r["agent"]["records"] = [pair(blank(player=[1, 1], boxes=[[2, 2]]), blank(), actor_found=False)
                           for _ in range(3)]
  r["agent"]["records"].append({"kind": "step", "truth": None,
                                "actor": assertion(blank(), found=False)})
  m = {**metrics.mismatch([r]), **metrics.coverage([r])}
  assert m["checks"] == 3 and m["comparable"] == 0 and m["comparable_checks"] == 0.0
  for k in ("D_step", "initial_D", "D_traj", "residual_D", "residual_D_traj"):
    assert m[k] is None, k
  assert m["coverage_actor"] == 0.0 and m["fields_actor"] == 0.0
  assert m["coverage_planner"] == 1.0 and m["fields_planner"] == pytest.approx(2 / 4)
  assert metrics.mismatch_ci([r]) is None
  full = metrics.summarize([r, row("a", 1)], k=2, n_resamples=50)
  json.dumps(full, allow_nan=False)  # strict JSON: no NaN anywhere


def test_one_known_contradiction_gives_exact_d():
  """Four checks: one contradicted, two agreeing, one where the roles stated disjoint fields
  (not comparable) -> D_step = 1/3, comparable share 3/4; per trajectory 1 of 2."""
  r1 = row("a", 0)
  r1["agent"]["records"] = [
      pair(blank(player=[1, 1], boxes=[[2, 2]]), blank(player=[1, 2], boxes=[[2, 2]]),
           conflicts=["player"]),
      pair(blank(player=[1, 1]), blank(player=[1, 1], boxes=[[3, 3]])),
      pair(blank(player=[1, 1]), blank(boxes=[[3, 3]]))]  # disjoint: no field stated by both
  r2 = row("b", 1)
  r2["agent"]["records"] = [pair(blank(boxes_on_targets=1), blank(boxes_on_targets=1))]
  m = metrics.mismatch([r1, r2])
  assert m["checks"] == 4 and m["comparable"] == 3 and m["contradicted"] == 1
  assert m["D_step"] == pytest.approx(1 / 3) and m["comparable_checks"] == pytest.approx(3 / 4)
  assert m["D_traj"] == pytest.approx(1 / 2)
  assert m["residual_D"] == 1.0 and m["discussion_rate"] == 0.0 and m["repair_rate"] is None

def test_correctness_and_cost():
  r = row("a", 1)
  r["agent"]["records"] = [
      {"kind": "pair", "truth": {"player": [1, 1], "boxes": [[2, 2]], "n": None},
       "planner": assertion({"player": [1, 1], "boxes": [[2, 3]], "n": 4}),
       "actor": assertion({"player": [1, 1], "boxes": None, "n": 1}), "conflicts": []},
      {"kind": "single", "truth": {"player": [0, 0]}, "actor": assertion({"player": [0, 1]})}]
  c = metrics.correctness([r])
  assert c["planner_correct"] == pytest.approx(1 / 2)  # n has no truth here: not scored
  assert c["actor_correct"] == pytest.approx(1 / 2)
  rows = [row("a", 1, calls=10, with_usage=10, out_tokens=50, actions=5),
          row("b", 0, calls=6, with_usage=3, out_tokens=999, actions=3)]
  k = metrics.cost(rows)
  assert k["calls/episode"] == 8 and k["calls/action"] == pytest.approx(16 / 8)
  assert k["usage_coverage"] == 0.5 and k["out_tokens/episode"] == 50


def test_cluster_bootstrap_ci_brackets_mean():
  rows = [row(f"i{i}", s) for i in range(6) for s in ((1, 1, 0) if i % 2 else (0, 0, 1))]
  lo, hi = metrics.success_ci(rows, n_resamples=500)
  assert lo <= 0.5 <= hi and lo < hi
