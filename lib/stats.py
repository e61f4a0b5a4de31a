"""Statistics shared by every experiment: pass@k family, cluster bootstrap, exact tests.

Conventions: `successes` is a 1-D array of 0/1 outcomes of independent attempts at one task;
`values_by_cluster` is a sequence (or dict) of 1-D arrays, one per cluster (task, semantic
cluster, instance), and bootstrap resampling draws whole clusters with replacement so that
correlated attempts inside a cluster are not counted as independent evidence.
"""
import math
from typing import Callable, Mapping, Sequence

import numpy as np

ArrayLike = Sequence[float] | np.ndarray


def pass_at_k(n: int, c: int, k: int) -> float:
  """Unbiased pass@k: 1 - C(n-c, k) / C(n, k) (Chen et al., 2021).

  Evaluated as 1 - prod_{i=n-c+1}^{n} (1 - k/i), which stays finite for n in the thousands where
  the binomials overflow floating point.
  """
  if not 0 <= c <= n or not 1 <= k <= n:
    raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
  if n - c < k:
    return 1.0
  i = np.arange(n - c + 1, n + 1, dtype=np.float64)
  return float(1.0 - np.prod(1.0 - k / i))


def pass_hat_k(successes: ArrayLike, k: int) -> float:
  """pass^k: probability that k attempts drawn without replacement all succeed, C(c,k)/C(n,k)."""
  s = np.asarray(successes)
  n, c = s.size, int(np.sum(s != 0))
  if not 1 <= k <= n:
    raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
  if c < k:
    return 0.0
  i = np.arange(k, dtype=np.float64)
  return float(np.prod((c - i) / (n - i)))


def avg_at_k(successes: ArrayLike) -> float:
  """avg@k: the mean success over the k attempts of one task."""
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
  """Percentile CI of `statistic(pooled values)` resampling clusters with replacement."""
  stats = _resample(_clusters(values_by_cluster), statistic, n_resamples, seed)
  alpha = (1.0 - level) / 2.0
  lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
  return float(lo), float(hi)


def paired_bootstrap_ci(a_by_cluster, b_by_cluster, statistic: Callable = np.mean,
                        n_resamples: int = 10_000, seed: int = 0,
                        level: float = 0.95) -> tuple[float, float]:
  """CI of the mean paired difference a - b, resampling clusters (pairs stay together)."""
  a, b = _clusters(a_by_cluster), _clusters(b_by_cluster)
  if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b)):
    raise ValueError("paired bootstrap needs the same clusters with the same sizes")
  return bootstrap_ci([x - y for x, y in zip(a, b)], statistic, n_resamples, seed, level)


def clopper_pearson(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
  """Exact (Clopper-Pearson) two-sided 1-alpha interval for a binomial proportion."""
  from scipy.stats import beta  # scipy is a core dependency; imported here to keep import light
  if not 0 <= successes <= n or n == 0:
    raise ValueError(f"need 0 <= successes <= n and n > 0, got {successes}/{n}")
  lo = 0.0 if successes == 0 else beta.ppf(alpha / 2, successes, n - successes + 1)
  hi = 1.0 if successes == n else beta.ppf(1 - alpha / 2, successes + 1, n - successes)
  return float(lo), float(hi)


def mcnemar_exact(b: int, c: int) -> float:
  """Two-sided exact McNemar p-value from the discordant counts b and c.

  Under H0 the discordant pairs split Binomial(b + c, 1/2); p = min(1, 2 P[X <= min(b, c)]).
  """
  n = b + c
  if n == 0:
    return 1.0
  tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2.0**n
  return float(min(1.0, 2.0 * tail))


def holm(pvalues: ArrayLike) -> np.ndarray:
  """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
  p = np.asarray(pvalues, dtype=np.float64)
  order = np.argsort(p)
  m = p.size
  adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
  out = np.empty_like(p)
  out[order] = np.minimum(adjusted, 1.0)
  return out
