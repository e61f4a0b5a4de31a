"""Statistics shared by every experiment: pass@k family, cluster bootstrap, exact tests.

Conventions: `successes` is a 1-D array of 0/1 outcomes of independent attempts at one task;
`values_by_cluster` is a sequence (or dict) of 1-D arrays, one per cluster (task, semantic
cluster, instance), and bootstrap resampling draws whole clusters with replacement so that
correlated attempts inside a cluster are not counted as independent evidence.
"""
import math
from typing import Callable, Mapping, Sequence

import numpy as np
from scipy.stats import beta

ArrayLike = Sequence[float] | np.ndarray


def pass_at_k(n: int, c: int, k: int) -> float:
  """Unbiased pass@k of one task from n attempts with c successes (Chen et al., 2021).

      pass@k = 1 - C(n-c, k) / C(n, k)

  Evaluated as 1 - prod_{i=n-c+1}^{n} (1 - k/i), which stays finite for n in the thousands where
  the binomials overflow floating point.

  Args:
    n: number of attempts, n >= 1.
    c: number of successful attempts, 0 <= c <= n.
    k: attempts allowed by the metric, 1 <= k <= n.
  Returns:
    float in [0, 1]; exactly 1.0 when n - c < k.
  """
  if not 0 <= c <= n or not 1 <= k <= n:
    raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
  if n - c < k:
    return 1.0
  i = np.arange(n - c + 1, n + 1, dtype=np.float64)
  return float(1.0 - np.prod(1.0 - k / i))


def pass_hat_k(successes: ArrayLike, k: int) -> float:
  """pass^k: probability that k attempts drawn without replacement all succeed.

      pass^k = C(c, k) / C(n, k) = prod_{i=0}^{k-1} (c - i) / (n - i)

  Args:
    successes: [n] outcomes of one task's attempts; any non-zero entry counts as a success.
    k: attempts drawn, 1 <= k <= n.
  Returns:
    float in [0, 1]; exactly 0.0 when c < k.
  """
  s = np.asarray(successes)
  n, c = s.size, int(np.sum(s != 0))
  if not 1 <= k <= n:
    raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
  if c < k:
    return 0.0
  i = np.arange(k, dtype=np.float64)
  return float(np.prod((c - i) / (n - i)))


def avg_at_k(successes: ArrayLike) -> float:
  """avg@k: the mean success over the k attempts of one task.

  Args:
    successes: [k] 0/1 (or any numeric) outcomes, k >= 1.
  Returns:
    float mean (computed in float64).
  """
  s = np.asarray(successes, dtype=np.float64)
  if s.size == 0:
    raise ValueError("avg_at_k of no attempts")
  return float(s.mean())


def _clusters(values_by_cluster) -> list[np.ndarray]:
  if isinstance(values_by_cluster, Mapping):
    values_by_cluster = [values_by_cluster[k] for k in sorted(values_by_cluster)]
  out = [np.atleast_1d(np.asarray(v, dtype=np.float64)) for v in values_by_cluster]
  if not out or any(v.size == 0 for v in out):
    raise ValueError("bootstrap needs at least one cluster and no empty clusters")
  return out


def _resample(clusters: list[np.ndarray], statistic: Callable, n_resamples: int,
              seed: int) -> np.ndarray:
  rng = np.random.default_rng(seed)
  idx = rng.integers(0, len(clusters), size=(n_resamples, len(clusters)))
  if statistic is np.mean:
    # Mean of the pooled resample = sum of drawn cluster sums / sum of drawn cluster sizes.
    sums = np.array([c.sum() for c in clusters])
    sizes = np.array([c.size for c in clusters], dtype=np.float64)
    return sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
  return np.array([statistic(np.concatenate([clusters[j] for j in row])) for row in idx])


def bootstrap_ci(values_by_cluster, statistic: Callable = np.mean, n_resamples: int = 10_000,
                 seed: int = 0, level: float = 0.95) -> tuple[float, float]:
  """Percentile CI of `statistic(pooled values)` resampling clusters with replacement.

  Each resample draws as many clusters as there are, with replacement, concatenates their values
  and evaluates `statistic`; the CI is the ((1-level)/2, 1-(1-level)/2) quantile pair of the
  n_resamples statistics.

  Args:
    values_by_cluster: sequence of [n_i] arrays, one per cluster, or a dict cluster -> [n_i]
      array (taken in sorted-key order); scalars count as [1]; no cluster may be empty.
    statistic: [sum of drawn n_i] float64 -> float. `np.mean` itself takes an exact fast path
      (sum of drawn cluster sums / sum of drawn cluster sizes).
    n_resamples: number of bootstrap resamples.
    seed: seed of the `np.random.default_rng` that draws the clusters.
    level: two-sided coverage in (0, 1).
  Returns:
    (lo, hi) floats.
  """
  stats = _resample(_clusters(values_by_cluster), statistic, n_resamples, seed)
  alpha = (1.0 - level) / 2.0
  lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
  return float(lo), float(hi)


def paired_bootstrap_ci(a_by_cluster, b_by_cluster, statistic: Callable = np.mean,
                        n_resamples: int = 10_000, seed: int = 0,
                        level: float = 0.95) -> tuple[float, float]:
  """CI of `statistic` of the paired differences a - b (default: their mean), resampling clusters
  (pairs stay together); `bootstrap_ci` on the per-cluster differences.

  Args:
    a_by_cluster, b_by_cluster: the same clusters in the same order (dicts: the same keys), as in
      `bootstrap_ci`, with equal sizes; element j of a's cluster i pairs with element j of b's.
    statistic, n_resamples, seed, level: as in `bootstrap_ci`.
  Returns:
    (lo, hi) floats.
  """
  a, b = _clusters(a_by_cluster), _clusters(b_by_cluster)
  if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b)):
    raise ValueError("paired bootstrap needs the same clusters with the same sizes")
  return bootstrap_ci([x - y for x, y in zip(a, b)], statistic, n_resamples, seed, level)


def clopper_pearson(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
  """Exact (Clopper-Pearson) two-sided 1-alpha interval for a binomial proportion.

      lo = Beta.ppf(alpha/2; x, n-x+1),  hi = Beta.ppf(1-alpha/2; x+1, n-x),  x = successes

  Args:
    successes: number of successes x, 0 <= x <= n.
    n: number of trials, n > 0.
    alpha: total two-sided error rate.
  Returns:
    (lo, hi) floats; lo = 0 when x = 0 and hi = 1 when x = n.
  """
  if not 0 <= successes <= n or n == 0:
    raise ValueError(f"need 0 <= successes <= n and n > 0, got {successes}/{n}")
  lo = 0.0 if successes == 0 else beta.ppf(alpha / 2, successes, n - successes + 1)
  hi = 1.0 if successes == n else beta.ppf(1 - alpha / 2, successes + 1, n - successes)
  return float(lo), float(hi)


def mcnemar_exact(b: int, c: int) -> float:
  """Two-sided exact McNemar p-value from the discordant counts b and c.

  Under H0 the discordant pairs split Binomial(b + c, 1/2); p = min(1, 2 P[X <= min(b, c)]).

  Args:
    b: pairs where system A succeeded and B failed.
    c: pairs where B succeeded and A failed (the test is symmetric in b and c).
  Returns:
    float p-value in [0, 1]; 1.0 when there are no discordant pairs.
  """
  n = b + c
  if n == 0:
    return 1.0
  tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2.0**n
  return float(min(1.0, 2.0 * tail))


def holm(pvalues: ArrayLike) -> np.ndarray:
  """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1).

      p_adj_(j) = min(1, max_{i <= j} (m - i + 1) p_(i))    p_(1) <= ... <= p_(m) sorted, 1-based

  Args:
    pvalues: [m] raw p-values.
  Returns:
    [m] float64 adjusted p-values, in the input order.
  """
  p = np.asarray(pvalues, dtype=np.float64)
  order = np.argsort(p)
  m = p.size
  adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
  out = np.empty_like(p)
  out[order] = np.minimum(adjusted, 1.0)
  return out
