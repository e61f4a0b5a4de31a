"""Pairwise action-distribution overlap at shared decision points, from hand-built rows."""
import pytest

from agents.wm import overlap, probes

R = "<think>t</think><action>x</action>"


def test_sampled_actions_keyed_by_exact_prompt(make_row):
  rows = [make_row("A", [(R, "go north", "N"), (R, "take key", "K")], "action_budget"),
          make_row("A", [(R, "go north", "N"), (R, "go south", "S")], "action_budget",
                   sample=1),
          make_row("A", [("?", None, "X")], "action_budget", sample=2)]
  acts = overlap.sampled_actions(rows)
  first = [p for p in acts if "This is step 1." in p[2]]
  assert len(first) == 1 and first[0][:2] == ("textworld", "list")
  assert sorted(acts[first[0]], key=str) == [None, "go north", "go north"]
  # the second steps share a prompt (same history), so they are one decision point
  second = [p for p in acts if "This is step 2." in p[2]]
  assert len(second) == 1 and sorted(acts[second[0]]) == ["go south", "take key"]


def test_pairwise_exact_means_seed_pairing_and_nulls():
  p1 = {"x": 1.0}
  p2 = {"x": 0.5, "y": 0.5}
  p3 = {"y": 1.0}
  dists = {"BASE": {0: {"a": p1, "b": p1}},                 # one seed: pairs with every seed
           "GT": {0: {"a": p2, "b": p1}, 1: {"a": p3}},
           "MIS": {0: {"a": p2}, 1: {"a": p2, "c": p3}},
           "LONE": {0: {"z": p1}}}
  rows = {(r["a"], r["b"]): r for r in overlap.pairwise(dists, "sampled", n_resamples=500)}
  # BASE-GT: point a: seeds (0,0) -> 0.5, (0,1) -> 0 => 0.25; point b: (0,0) -> 1 => mean 0.625
  r = rows[("BASE", "GT")]
  assert r["overlap"] == pytest.approx(0.625) and r["points"] == 2
  assert r["group"] == "BASE–trained" and r["kind"] == "sampled"
  assert r["lo"] <= r["overlap"] <= r["hi"]
  # GT-MIS: seed 0 with 0, 1 with 1: point a: overlap(p2,p2) = 1, overlap(p3,p2) = 0.5
  r = rows[("GT", "MIS")]
  assert r["overlap"] == pytest.approx(0.75) and r["points"] == 1
  assert r["group"] == "trained–trained"
  assert r["lo"] == pytest.approx(0.75) and r["hi"] == pytest.approx(0.75)   # one point
  # no shared point: null, not 0
  r = rows[("BASE", "LONE")]
  assert r["overlap"] is None and r["lo"] is None and r["points"] == 0
  assert len(rows) == 6          # every pair of the 4 conditions


def test_sampled_distributions_min_samples(make_row):
  rows = [make_row("A", [(R, a, "N")], "action_budget", sample=i)
          for i, a in enumerate(["go north", "go north", "take key"])]
  d = overlap.sampled_distributions({("A", 0): rows}, min_samples=3)
  (point, dist), = d["A"][0].items()
  assert dist == pytest.approx({"go north": 2 / 3, "take key": 1 / 3})
  assert overlap.sampled_distributions({("A", 0): rows}, min_samples=4)["A"][0] == {}


def test_direct_as_dists_and_group_rows():
  direct = {"BASE": [{"a": 0.8, "b": 0.2}, {"a": 0.5, "b": 0.5}],
            "GT": [{"a": 0.2, "b": 0.8}, {"a": 0.5, "b": 0.5}],
            "MIS": [{"a": 0.3, "b": 0.7}, {"a": 0.4, "b": 0.6}]}
  rows = overlap.pairwise(overlap.direct_as_dists(direct), "direct", n_resamples=200)
  got = {(r["a"], r["b"]): r["overlap"] for r in rows}
  assert got[("BASE", "GT")] == pytest.approx((0.4 + 1.0) / 2)
  assert got[("BASE", "MIS")] == pytest.approx((0.5 + 0.9) / 2)
  assert got[("GT", "MIS")] == pytest.approx((probes.overlap(direct["GT"][0], direct["MIS"][0])
                                              + 0.9) / 2)
  (g,) = overlap.group_rows(rows)
  assert g["BASE–trained"] == pytest.approx(0.7)
  assert g["trained–trained"] == pytest.approx(0.9)        # 0.9 at both points
  assert g["delta"] == pytest.approx(0.2)
  (g,) = overlap.group_rows([r for r in rows if r["group"] == "BASE–trained"])
  assert g["trained–trained"] is None and g["delta"] is None
