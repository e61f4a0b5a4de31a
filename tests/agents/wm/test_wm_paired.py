"""Paired comparisons with seeds: McNemar + Holm against scipy, pass@k differences by hand."""
import numpy as np
import pytest
from scipy.stats import binomtest

from agents.wm import paired
from lib.report import stats

ALL = ["BASE", "GRPO-GT", "GRPO-MIS", "GRPO-COIN", "GT-PERM", "MIS-PERM", "OPSD-GT", "OPSD-MIS"]


def test_comparison_family():
  assert paired.comparisons(ALL) == [
      ("GRPO-GT", "BASE"), ("GRPO-MIS", "BASE"), ("GRPO-COIN", "BASE"), ("GT-PERM", "BASE"),
      ("MIS-PERM", "BASE"), ("OPSD-GT", "BASE"), ("OPSD-MIS", "BASE"),
      ("GRPO-GT", "GRPO-MIS"), ("GRPO-GT", "GRPO-COIN"), ("GRPO-GT", "GT-PERM"),
      ("GRPO-MIS", "MIS-PERM"), ("OPSD-GT", "OPSD-MIS")]
  assert paired.comparisons(["GRPO-GT", "GRPO-COIN"]) == [("GRPO-GT", "GRPO-COIN")]
  assert paired.comparisons(["BASE", "GRPO-COIN"]) == [("GRPO-COIN", "BASE")]


def test_seed_pairs():
  assert paired.seed_pairs([0, 1, 2], [0, 1, 2]) == [(0, 0), (1, 1), (2, 2)]
  assert paired.seed_pairs([0], [2, 1]) == [(0, 1), (0, 2)]
  assert paired.seed_pairs([1, 0], [5]) == [(0, 5), (1, 5)]
  assert paired.seed_pairs([0, 1], [1, 2]) == [(1, 1)]


def _counts():
  # 10 tasks, 4 attempts each. Seed 0: A solves tasks 0-7, B solves 0-1 -> b = 6, c = 0.
  # Seed 1: A solves 0-4, B solves 3-9 -> b = 3, c = 5.
  t = [f"t{i}" for i in range(10)]
  a0 = {x: (4, 2 if i < 8 else 0) for i, x in enumerate(t)}
  b0 = {x: (4, 1 if i < 2 else 0) for i, x in enumerate(t)}
  a1 = {x: (4, 4 if i < 5 else 0) for i, x in enumerate(t)}
  b1 = {x: (4, 3 if i >= 3 else 0) for i, x in enumerate(t)}
  return {0: {"GRPO-GT": a0, "BASE": b0}, 1: {"GRPO-GT": a1, "BASE": b1}}


def test_mcnemar_matches_scipy_binomtest_and_holm():
  rows = paired.mcnemar_rows(_counts(), [("GRPO-GT", "BASE")])
  assert [(r["seed_a"], r["only_a"], r["only_b"], r["solved_a"], r["solved_b"], r["k"])
          for r in rows] == [(0, 6, 0, 8, 2, 4), (1, 3, 5, 5, 7, 4)]
  for r in rows:
    n = r["only_a"] + r["only_b"]
    want = binomtest(min(r["only_a"], r["only_b"]), n, 0.5).pvalue   # two-sided exact
    assert r["p"] == pytest.approx(want, rel=1e-12)
  p = np.array([r["p"] for r in rows])          # 0.03125, 0.7265625
  assert p[0] == pytest.approx(2 / 64)
  want_holm = [min(1.0, 2 * p[0]), min(1.0, max(2 * p[0], p[1]))]
  assert [r["p_holm"] for r in rows] == pytest.approx(want_holm)


def test_single_seed_reference_pairs_with_every_seed():
  c = _counts()
  c[1].pop("BASE")
  rows = paired.mcnemar_rows(c, [("GRPO-GT", "BASE")])
  assert [(r["seed_a"], r["seed_b"]) for r in rows] == [(0, 0), (1, 0)]


def test_unequal_attempts_refused_in_one_line():
  c = _counts()
  c[0]["BASE"]["t0"] = (5, 1)
  with pytest.raises(ValueError, match="different attempt counts"):
    paired.mcnemar_rows(c, [("GRPO-GT", "BASE")])


def test_passk_differences_by_hand():
  c = _counts()
  rows = paired.passk_differences(c, [("GRPO-GT", "BASE")], [1, 2, 8], n_resamples=2000)
  by_k = {r["k"]: r for r in rows}
  tasks = sorted(c[0]["BASE"])
  for k in (1, 2):
    per_task = [np.mean([stats.pass_at_k(*c[s]["GRPO-GT"][t], k)
                         - stats.pass_at_k(*c[s]["BASE"][t], k) for s in (0, 1)])
                for t in tasks]
    assert by_k[k]["diff"] == pytest.approx(100 * np.mean(per_task))
    lo, hi = stats.bootstrap_ci(per_task, n_resamples=2000)
    assert (by_k[k]["lo"], by_k[k]["hi"]) == pytest.approx((100 * lo, 100 * hi))
    assert by_k[k]["tasks"] == 10 and by_k[k]["seed_pairs"] == 2
  # pass@1 by hand: seed 0: mean(c/n) = (8*0.5 - 2*0.25)/10, seed 1: (5*1 - 7*0.75)/10
  assert by_k[1]["diff"] == pytest.approx(100 * ((4 - 0.5) / 10 + (5 - 5.25) / 10) / 2)
  # k above the 4 attempts: no estimate, null rather than 0
  assert by_k[8]["diff"] is None and by_k[8]["lo"] is None
  none = paired.passk_differences({0: {"A": {}, "B": {}}}, [("A", "B")], [1])
  assert none[0]["diff"] is None and none[0]["tasks"] == 0
