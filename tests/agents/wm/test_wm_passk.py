"""pass@k curves, shared-draw task-bootstrap bands, McNemar+Holm coverage tests, the PNG plot."""
import math

import numpy as np
import pytest
from scipy.stats import binomtest

from agents.wm import passk


def comb_pass_at_k(n, c, k):  # independent: the binomial formula itself
  return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def counts_example(n=8):
  rng = np.random.default_rng(3)
  tasks = [f"t{i}" for i in range(12)]
  return {cond: {t: (n, int(rng.binomial(n, p))) for t in tasks}
          for cond, p in (("BASE", 0.1), ("GT", 0.4), ("COIN", 0.3))}


def test_curves_match_the_binomial_formula():
  counts = counts_example()
  ks = (1, 2, 4, 8)
  curves = passk.pass_at_k_curves(counts, ks)
  for cond, per_task in counts.items():
    expected = [np.mean([comb_pass_at_k(n, c, k) for n, c in per_task.values()]) for k in ks]
    np.testing.assert_allclose(curves[cond], expected, rtol=1e-12)
    assert np.all(np.diff(curves[cond]) >= -1e-12)   # pass@k grows with k


def test_bands_share_task_draws_across_conditions():
  counts = counts_example()
  counts["GT_copy"] = dict(counts["GT"])
  bands = passk.bootstrap_bands(counts, (1, 2, 4, 8), n_resamples=2000, seed=0)
  np.testing.assert_array_equal(bands["GT"], bands["GT_copy"])   # same draws, same band
  curves = passk.pass_at_k_curves(counts, (1, 2, 4, 8))
  for cond in counts:
    lo, hi = bands[cond]
    assert np.all(lo <= curves[cond] + 1e-12) and np.all(curves[cond] <= hi + 1e-12)
  # an independent resampler with the same seed reproduces one band
  tasks = sorted(counts["GT"])
  idx = np.random.default_rng(0).integers(0, len(tasks), size=(2000, len(tasks)))
  per = np.array([comb_pass_at_k(*counts["GT"][t], 1) for t in tasks])
  assert bands["GT"][0][0] == pytest.approx(np.quantile(per[idx].mean(1), 0.025))


def test_coverage_tests_mcnemar_and_holm():
  tasks = [f"t{i}" for i in range(10)]
  counts = {"A": {t: (4, 1) for t in tasks},                              # solves all 10
            "B": {t: (4, 1 if i < 3 else 0) for i, t in enumerate(tasks)},  # solves 3
            "C": {t: (4, 1 if i < 9 else 0) for i, t in enumerate(tasks)}}  # solves 9
  rows = {(r["a"], r["b"]): r for r in passk.coverage_tests(counts)}
  ab = rows[("A", "B")]
  assert (ab["only_a"], ab["only_b"], ab["k"]) == (7, 0, 4)
  assert ab["p"] == pytest.approx(binomtest(0, 7, 0.5).pvalue)
  assert rows[("B", "C")]["p"] == pytest.approx(binomtest(0, 6, 0.5).pvalue)
  ps = sorted(r["p"] for r in rows.values())
  adjusted = sorted(r["p_holm"] for r in rows.values())
  assert adjusted[0] == pytest.approx(min(1, 3 * ps[0]))
  with pytest.raises(ValueError):
    passk.coverage_tests({"A": {"t": (4, 1)}, "B": {"t": (8, 1)}})
  with pytest.raises(ValueError):
    passk.pass_at_k_curves({"A": {"t": (4, 1)}, "B": {"u": (4, 1)}})


def test_counts_from_rows_and_domains():
  rows = [{"condition": "GT", "task_id": "sw/boil/0", "success": s} for s in (1, 0, 0, 1)]
  rows += [{"condition": "GT", "task_id": "sw/melt/0", "success": 0}] * 4
  counts = passk.counts_from_rows(rows)
  assert counts == {"GT": {"sw/boil/0": (4, 2), "sw/melt/0": (4, 0)}}
  dom = passk.domain_pass_at_1(counts["GT"], lambda t: t.split("/")[1])
  assert dom == {"boil": 50.0, "melt": 0.0}


def test_plot_writes_png(tmp_path):
  counts = counts_example()
  curves = passk.pass_at_k_curves(counts, (1, 2, 4, 8))
  bands = passk.bootstrap_bands(counts, (1, 2, 4, 8), n_resamples=200)
  path = passk.plot_pass_at_k(curves, bands, str(tmp_path / "p.png"), ks=(1, 2, 4, 8),
                              title="CPU scale")
  with open(path, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"
