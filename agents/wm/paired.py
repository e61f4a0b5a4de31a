"""Paired comparisons of the study's conditions over tasks, with seeds (the audit's conventions).

Inputs per (env, regime): `counts[seed][condition][task] = (n, c)` (n attempts, c successes;
`agents.wm.passk.counts_from_rows` per seed).

  comparisons(conditions)   the family tested: every condition against BASE, GRPO-GT against each
                            of its controls (GRPO-MIS, GRPO-COIN, GT-PERM), GRPO-MIS against
                            MIS-PERM, OPSD-GT against OPSD-MIS (those present)
  mcnemar_rows              coverage: per task solved = c > 0 in its n attempts (pass@n, the
                            audit's pass@64); two-sided exact McNemar on the discordant tasks
                            (lib.report.stats.mcnemar_exact), one test per comparison and seed pair,
                            Holm-adjusted over the whole family (all comparisons x seed pairs)
  passk_differences         selection and coverage: per task the unbiased pass@k of a minus b,
                            averaged over seed pairs; mean over tasks with a paired bootstrap 95%
                            interval resampling tasks (lib.report.stats.paired_bootstrap_ci)

Seed pairs: seed s of a against seed s of b; a condition with a single seed (e.g. an untrained
BASE evaluated once) is paired with every seed of the other. Tasks are those both sides hold.
"""
from typing import Mapping, Sequence

import numpy as np

from lib.report import stats

Counts = Mapping[object, Mapping[str, Mapping[str, tuple[int, int]]]]
CONTROLS = (("GRPO-GT", "GRPO-MIS"), ("GRPO-GT", "GRPO-COIN"), ("GRPO-GT", "GT-PERM"),
            ("GRPO-MIS", "MIS-PERM"), ("OPSD-GT", "OPSD-MIS"))


def comparisons(conditions: Sequence[str], reference: str = "BASE") -> list[tuple[str, str]]:
  """(a, b) pairs, a the trained or treated side; only conditions present."""
  present = set(conditions)
  out = [(c, reference) for c in conditions if c != reference and reference in present]
  return out + [p for p in CONTROLS if p[0] in present and p[1] in present]


def seed_pairs(seeds_a: Sequence, seeds_b: Sequence) -> list[tuple]:
  """Seed s of a with seed s of b; a single-seed side pairs with every seed of the other."""
  seeds_a, seeds_b = sorted(seeds_a), sorted(seeds_b)
  if len(seeds_a) == 1:
    return [(seeds_a[0], s) for s in seeds_b]
  if len(seeds_b) == 1:
    return [(s, seeds_b[0]) for s in seeds_a]
  return [(s, s) for s in seeds_a if s in seeds_b]


def _seeds(counts: Counts, cond: str) -> list:
  return [s for s in counts if cond in counts[s]]


def mcnemar_rows(counts: Counts, pairs: Sequence[tuple[str, str]]) -> list[dict]:
  """One row per (comparison, seed pair): solved tasks, discordant counts, p, Holm p.

  Raises ValueError when a compared pair's tasks have different numbers of attempts (the k of
  pass@k would differ).
  """
  rows = []
  for a, b in pairs:
    for sa, sb in seed_pairs(_seeds(counts, a), _seeds(counts, b)):
      ca, cb = counts[sa][a], counts[sb][b]
      tasks = sorted(set(ca) & set(cb))
      ns = {ca[t][0] for t in tasks} | {cb[t][0] for t in tasks}
      if len(ns) > 1:
        raise ValueError(f"{a} vs {b}: tasks have different attempt counts {sorted(ns)}")
      xa = np.array([ca[t][1] > 0 for t in tasks], dtype=bool)
      xb = np.array([cb[t][1] > 0 for t in tasks], dtype=bool)
      only_a, only_b = int(np.sum(xa & ~xb)), int(np.sum(~xa & xb))
      rows.append({"a": a, "b": b, "seed_a": sa, "seed_b": sb, "tasks": len(tasks),
                   "k": ns.pop() if ns else None, "solved_a": int(xa.sum()),
                   "solved_b": int(xb.sum()), "only_a": only_a, "only_b": only_b,
                   "p": stats.mcnemar_exact(only_a, only_b) if tasks else None})
  tested = [r for r in rows if r["p"] is not None]
  for r, p in zip(tested, stats.holm([r["p"] for r in tested]) if tested else ()):
    r["p_holm"] = float(p)
  for r in rows:
    r.setdefault("p_holm", None)
  return rows


def per_task_passk(counts: Counts, cond: str, seeds: Sequence, tasks: Sequence[str],
                   k: int) -> np.ndarray:
  """[tasks] unbiased pass@k of `cond` averaged over `seeds` (each seed's n >= k)."""
  return np.array([np.mean([stats.pass_at_k(*counts[s][cond][t], k) for s in seeds])
                   for t in tasks])


def passk_differences(counts: Counts, pairs: Sequence[tuple[str, str]], ks: Sequence[int],
                      n_resamples: int = 10_000, seed: int = 0) -> list[dict]:
  """One row per (comparison, k): mean over tasks of pass@k(a) - pass@k(b) (percentage points)
  with its paired task-bootstrap 95% interval; None where k exceeds the attempts or no task is
  shared."""
  rows = []
  for a, b in pairs:
    sp = seed_pairs(_seeds(counts, a), _seeds(counts, b))
    tasks = sorted(set.intersection(*[set(counts[sa][a]) & set(counts[sb][b]) for sa, sb in sp])
                   if sp else set())
    n_min = min([counts[sa][a][t][0] for sa, _ in sp for t in tasks]
                + [counts[sb][b][t][0] for _, sb in sp for t in tasks], default=0)
    for k in ks:
      row = {"a": a, "b": b, "k": k, "tasks": len(tasks), "seed_pairs": len(sp),
             "diff": None, "lo": None, "hi": None}
      if tasks and k <= n_min:
        va = np.mean([per_task_passk(counts, a, [sa], tasks, k) for sa, _ in sp], axis=0)
        vb = np.mean([per_task_passk(counts, b, [sb], tasks, k) for _, sb in sp], axis=0)
        lo, hi = stats.paired_bootstrap_ci(list(va), list(vb), n_resamples=n_resamples, seed=seed)
        # rounded to 1e-9 pp: a bootstrap quantile of exact zeros can come out as -2e-16
        row.update(diff=round(100.0 * float(np.mean(va - vb)), 9), lo=round(100.0 * lo, 9),
                   hi=round(100.0 * hi, 9))
      rows.append(row)
  return rows
