"""Metrics rows and condition tables checked against SciPy's bootstrap and exact binomial CI."""
import numpy as np
import pytest
from scipy import stats as sps

from agents.gencoord import metrics, protocol, suites
from agents.gencoord.policies import registry as policies


@pytest.fixture(scope="module")
def rows():
  eps = suites.forward("intervention")
  program = policies.make("program")
  return {c: [metrics.episode_row(r) for r in protocol.run_forward(eps, program, c)]
          for c in ("true", "removed", "alternative")}


def test_episode_row_fields(rows):
  ok = rows["true"][0]
  assert ok["success"] and ok["commitment_valid"] and ok["handoff_verified"]
  assert ok["failure_code"] == "" and ok["binding_committed"] == ok["binding_true"]
  assert ok["fields"]["handoff_count"] > 0 and ok["fields"]["goal_count"] > 0
  removed = rows["removed"]
  for r in removed:
    formed = r["failure_code"] in ("", "EXECUTION_FAILURE", "HANDOFF_FAILURE",
                                   "TERMINAL_FAILURE")
    assert r["commitment_valid"] == formed
    assert r["wire_bytes"] == 0 and r["model_calls"] == 2


def test_condition_row_against_scipy(rows):
  r = rows["removed"]
  row = metrics.condition_row("removed", r, n_resamples=4000, seed=3)
  assert row["success_%"] == 50.0 and row["episodes"] == 320 and row["clusters"] == 160
  lo, hi = (float(x) for x in row["ci95_%"].strip("[]").split(","))
  cluster_means = np.array([np.mean(v) for v in metrics.by_cluster(r).values()])
  ref = sps.bootstrap((cluster_means,), np.mean, n_resamples=4000, method="percentile",
                      random_state=np.random.default_rng(0)).confidence_interval
  assert abs(lo - 100 * ref.low) < 2.0 and abs(hi - 100 * ref.high) < 2.0
  wins = sum(x["success"] for x in r)
  exact = sps.binomtest(wins, len(r)).proportion_ci(method="exact")
  cp_lo, cp_hi = (float(x) for x in row["clopper_pearson_%"].strip("[]").split(","))
  assert abs(cp_lo - 100 * exact.low) < 0.06 and abs(cp_hi - 100 * exact.high) < 0.06
  assert row["strict"] == "80/160"


def test_paired_rows(rows):
  p = metrics.paired_row("alternative", "true", rows["true"], rows["alternative"], 2000, 1)
  assert p["delta_pp"] == 100.0 and p["ci95_pp"] == "[100.0, 100.0]"
  p = metrics.paired_row("removed", "true", rows["true"], rows["removed"], 2000, 1)
  assert p["delta_pp"] == 50.0
  lo, hi = (float(x) for x in p["ci95_pp"].strip("[]").split(","))
  assert 35 < lo < 50 < hi < 65
  with pytest.raises(ValueError):
    metrics.paired_row("x", "true", rows["true"], rows["removed"][:10], 100, 0)
