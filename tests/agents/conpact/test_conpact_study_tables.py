"""Tables 20-22 analogues on hand-built results rows: exact values, paired tests, null when inputs
are missing, strict JSON (agents/conpact/study_tables.py)."""
import json

import pytest

from agents.conpact import study_tables

TRUTH = {"player": [1, 1]}
WRONG = {"player": [1, 2]}


def _assertion(values):
  return {"values": values, "found": True, "invalid": [], "extra": []}


def _row(instance, rollout, success, conflicted, repaired=None):
  """One episode with one comparable check; conflicted: the actor misreads the player."""
  discussion = None
  if repaired is not None:
    final = WRONG if not repaired else TRUTH
    discussion = {"repaired": repaired, "rounds": [], "planner": _assertion(TRUTH),
                  "actor": _assertion(final)}
  rec = {"kind": "pair", "truth": TRUTH, "planner": _assertion(TRUTH),
         "actor": _assertion(WRONG if conflicted else TRUTH),
         "conflicts": [{"field": "player"}] if conflicted else [], "discussion": discussion,
         "calls": {"planner": 0, "actor": 1}}
  return {"instance": instance, "rollout": rollout, "success": success, "return": float(success),
          "actions": 3, "agent": {"records": [rec]}}


def rows_by_model():
  base = [_row("i1", 0, True, False), _row("i1", 1, False, True),
          _row("i2", 0, False, True), _row("i2", 1, False, False)]
  full = [_row("i1", 0, True, False), _row("i1", 1, True, True, repaired=True),
          _row("i2", 0, True, False), _row("i2", 1, False, False)]
  silent = [{**r, "agent": {"records": []}} for r in full]  # never asserts
  return {"baseline": base, "full": full, "no_sup": [], "silent": silent}


@pytest.fixture(scope="module")
def tables():
  return study_tables.study_tables(rows_by_model(), k=2, baseline="baseline",
                                   curate_of={"full": {"reconciliation_supervision": True,
                                                       "reconciliation_replay": True}},
                                   extra_pairs=[("full", "silent")], n_resamples=500, seed=0)


def _by_model(rows):
  return {r["model"]: r for r in rows}


def test_table20_exact_values_and_paired_test(tables):
  t = _by_model(tables["table20"][0])
  assert t["baseline"]["avg@2"] == 0.25 and t["full"]["avg@2"] == 0.75
  assert t["baseline"]["pass@2"] == 0.5 and t["full"]["pass@2"] == 1.0
  assert t["baseline"]["pass^2"] == 0.0 and t["full"]["pass^2"] == 0.5
  assert t["baseline"]["initial_D"] == 0.5 and t["full"]["initial_D"] == 0.25
  assert t["baseline"]["residual_D"] == 1.0 and t["full"]["residual_D"] == 0.0
  # episodes (i1,1) and (i2,0) succeed only with `full`: McNemar b=2, c=0 -> p = 2 * 2**-2
  assert t["full"]["diff_pp"] == 50.0 and t["full"]["p_mcnemar"] == 0.5
  lo, hi = t["full"]["ci95_pp"]
  assert 0.0 <= lo <= 50.0 <= hi <= 100.0
  assert t["baseline"]["diff_pp"] is None


def test_holm_over_every_comparison(tables):
  tests = {(r["model"], r["against"]): r for r in tables["tests"][0]}
  assert set(tests) == {("full", "baseline"), ("no_sup", "baseline"), ("silent", "baseline"),
                        ("full", "silent")}
  assert tests[("no_sup", "baseline")]["p_mcnemar"] is None  # no rows: not tested
  assert tests[("full", "silent")]["p_mcnemar"] == 1.0  # same outcomes
  # three tested p-values 0.5, 0.5, 1.0 -> Holm: 1.0, 1.0, 1.0
  assert [tests[k]["p_holm"] for k in (("full", "baseline"), ("silent", "baseline"))] == [1.0, 1.0]


def test_table21_deltas_in_points(tables):
  t = _by_model(tables["table21"][0])
  assert t["full"]["initial_D_delta_pp"] == -25.0
  assert t["baseline"]["planner_correct"] == 1.0 and t["baseline"]["actor_correct"] == 0.5
  assert t["full"]["actor_correct_delta_pp"] == 25.0 and t["full"]["planner_correct_delta_pp"] == 0
  assert t["baseline"]["initial_D_delta_pp"] is None


def test_table22_discussion_and_cc_cw(tables):
  t = _by_model(tables["table22"][0])
  assert (t["full"]["sup"], t["full"]["replay"], t["baseline"]["sup"]) == (True, True, None)
  assert t["full"]["discussion_rate"] == 1.0 and t["baseline"]["discussion_rate"] == 0.0
  assert t["full"]["CC"] == 0.75 and t["full"]["D_field"] == 0.25 and t["full"]["CW"] == 0.0
  assert t["full"]["CC_delta_pp"] == 25.0 and t["full"]["D_field_delta_pp"] == -25.0
  assert t["baseline"]["CC_delta_pp"] == 0.0


def test_missing_inputs_are_null_never_zero(tables):
  for name in ("table20", "table21", "table22"):
    t = _by_model(tables[name][0])
    assert all(v is None for k, v in t["no_sup"].items() if k != "model")
    assert t["silent"]["initial_D"] is None  # nothing comparable: D is null, not 0
  t20 = _by_model(tables["table20"][0])
  assert t20["silent"]["success"] == 0.75 and t20["silent"]["diff_pp"] == 50.0
  md = tables["table20"][1]
  assert "| no_sup | – | – |" in md and "n/a" in md and "nan" not in md.lower()


def test_strict_json_and_readable_markdown(tables):
  for rows, md in tables.values():
    json.loads(json.dumps(rows, allow_nan=False))
    assert md.startswith("### ") and "| model |" in md
  assert "| full | 4 | 75.0 | 100.0 | 50.0 | 75.0 | 25.0 | 0.0 | +50.0 |" in tables["table20"][1]


def test_too_few_rollouts_gives_null_at_k_metrics():
  m = study_tables.model_metrics(rows_by_model()["full"][:3], k=2)
  assert m["avg@2"] is None and m["success"] == 1.0
