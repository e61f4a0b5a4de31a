"""lib.report.stats against independent computations: exact combinatorics, brute force and scipy."""
import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from lib.report import stats


@pytest.mark.parametrize("n,c,k", [(10, 3, 1), (10, 3, 5), (10, 0, 4), (10, 10, 10), (64, 7, 16),
                                   (200, 1, 64), (20, 15, 8)])
def test_pass_at_k_matches_exact_binomials(n, c, k):
  exact = 1 - math.comb(n - c, k) / math.comb(n, k)
  assert stats.pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-12, abs=1e-15)


def test_pass_at_k_brute_force_subsets():
  # pass@k = fraction of k-subsets of the n attempts containing at least one success.
  outcomes = [1, 0, 0, 1, 0, 0, 0]
  n, c = len(outcomes), sum(outcomes)
  for k in range(1, n + 1):
    subsets = list(itertools.combinations(outcomes, k))
    brute = np.mean([any(s) for s in subsets])
    assert stats.pass_at_k(n, c, k) == pytest.approx(brute)


def test_pass_at_k_stable_for_large_n():
  n, c, k = 1000, 3, 500
  exact = 1 - math.comb(n - c, k) / math.comb(n, k)  # Python ints: exact.
  assert stats.pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-10)
  assert 0.0 <= stats.pass_at_k(1000, 1, 1) <= 1.0


def test_pass_hat_k_brute_force_and_avg():
  outcomes = [1, 1, 0, 1, 0, 1]
  for k in range(1, len(outcomes) + 1):
    brute = np.mean([all(s) for s in itertools.combinations(outcomes, k)])
    assert stats.pass_hat_k(outcomes, k) == pytest.approx(brute)
  assert stats.avg_at_k(outcomes) == pytest.approx(4 / 6)
  assert stats.pass_hat_k(outcomes, 1) == pytest.approx(stats.avg_at_k(outcomes))


def test_pass_at_k_rejects_bad_arguments():
  with pytest.raises(ValueError):
    stats.pass_at_k(5, 6, 1)
  with pytest.raises(ValueError):
    stats.pass_at_k(5, 1, 6)


def test_clopper_pearson_matches_scipy():
  for s, n in [(0, 10), (3, 10), (10, 10), (37, 128), (60, 60)]:
    ref = sps.binomtest(s, n).proportion_ci(confidence_level=0.95, method="exact")
    lo, hi = stats.clopper_pearson(s, n)
    assert lo == pytest.approx(ref.low, abs=1e-10)
    assert hi == pytest.approx(ref.high, abs=1e-10)


def test_mcnemar_exact_matches_scipy_binomtest():
  for b, c in [(0, 5), (3, 9), (10, 10), (1, 0), (25, 7)]:
    ref = sps.binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    assert stats.mcnemar_exact(b, c) == pytest.approx(ref, rel=1e-9)
  assert stats.mcnemar_exact(0, 0) == 1.0


def test_holm_matches_hand_computation():
  p = [0.01, 0.04, 0.03, 0.5]
  # Sorted: .01*4=.04, .03*3=.09, .04*2=.08 -> monotone max .09, .5*1=.5
  np.testing.assert_allclose(stats.holm(p), [0.04, 0.09, 0.09, 0.5])


def test_bootstrap_ci_resamples_clusters_like_a_loop():
  rng = np.random.default_rng(1)
  clusters = [rng.random(rng.integers(1, 6)) for _ in range(12)]
  lo, hi = stats.bootstrap_ci(clusters, n_resamples=2000, seed=3)
  # Independent reference: an explicit loop over the same resampling indices.
  idx = np.random.default_rng(3).integers(0, 12, size=(2000, 12))
  ref = [np.mean(np.concatenate([clusters[j] for j in row])) for row in idx]
  ref_lo, ref_hi = np.quantile(ref, [0.025, 0.975])
  assert (lo, hi) == pytest.approx((ref_lo, ref_hi), rel=1e-12)
  # The generic-statistic path gives the same numbers for np.median vs the loop.
  lo_m, hi_m = stats.bootstrap_ci(clusters, statistic=np.median, n_resamples=500, seed=3)
  idx = np.random.default_rng(3).integers(0, 12, size=(500, 12))
  ref = [np.median(np.concatenate([clusters[j] for j in row])) for row in idx]
  assert (lo_m, hi_m) == pytest.approx(tuple(np.quantile(ref, [0.025, 0.975])))


def test_bootstrap_ci_covers_mean_and_shrinks_with_more_clusters():
  rng = np.random.default_rng(0)
  small = [rng.random(4) < 0.6 for _ in range(10)]
  big = [rng.random(4) < 0.6 for _ in range(400)]
  lo_s, hi_s = stats.bootstrap_ci(small, seed=0)
  lo_b, hi_b = stats.bootstrap_ci(big, seed=0)
  assert lo_b < 0.6 < hi_b
  assert hi_b - lo_b < hi_s - lo_s


def test_paired_bootstrap_ci_of_constant_difference_is_degenerate():
  a = [np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.array([0.0, 1.0])]
  b = [x - 0.25 for x in a]
  lo, hi = stats.paired_bootstrap_ci(a, b, n_resamples=500)
  assert lo == pytest.approx(0.25) and hi == pytest.approx(0.25)
  with pytest.raises(ValueError):
    stats.paired_bootstrap_ci(a, b[:2])
