"""Metrics on hand-built rows, against direct combinatorics and hand counts."""
import math

import numpy as np
import pytest

from agents.conpact import metrics


def row(inst, success, checks=(), actions=10, calls=12, with_usage=12, out_tokens=100, ret=1.0):
  recs = []
  for c in checks:  # c: (conflicted, discussed, repaired)
    conflicted, discussed, repaired = c
    recs.append({"kind": "pair", "conflicts": [{"field": "player"}] if conflicted else [],
                 "discussion": {"repaired": repaired} if discussed else None, "truth": None,
                 "planner": {"values": {}}, "actor": {"values": {}}})
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


def test_correctness_and_cost():
  r = row("a", 1)
  r["agent"]["records"] = [
      {"kind": "pair", "truth": {"player": [1, 1], "boxes": [[2, 2]], "n": None},
       "planner": {"values": {"player": [1, 1], "boxes": [[2, 3]], "n": 4}},
       "actor": {"values": {"player": [1, 1], "boxes": None, "n": 1}}, "conflicts": []},
      {"kind": "single", "truth": {"player": [0, 0]}, "actor": {"values": {"player": [0, 1]}}}]
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
