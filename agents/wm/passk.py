"""pass@k curves with task-bootstrap bands, pairwise coverage tests, and the pass@k plot.

Inputs are per-task attempt counts: `counts[condition][task_id] = (n, c)` (n attempts, c
successes). All conditions must hold the same tasks, since curves, bands and tests pair by task.

  curves = pass_at_k_curves(counts, ks)                 mean over tasks of unbiased pass@k
  bands = bootstrap_bands(counts, ks, n_resamples=10_000, seed=0)
      resamples tasks with replacement; the SAME task draws serve every condition (the audit's
      bands), each draw recomputes mean pass@k, the band is the central `level` of the draws
  tests = coverage_tests(counts)
      per task solved = solved at least once in its n attempts (pass@n, the audit's pass@64 with
      n = 64); pairwise two-sided exact McNemar on solved/unsolved, Holm-adjusted
  plot_pass_at_k(curves, bands, path, n_tasks=T)       PNG (lib/report/plots.py): log2 k axis,
      shaded bands, n tasks in the legend
"""
import itertools
from typing import Mapping, Sequence

import numpy as np
from lib.report import plots, stats

DEFAULT_KS = (1, 2, 4, 8, 16, 32, 64)
Counts = Mapping[str, Mapping[str, tuple[int, int]]]


def _tasks(counts: Counts) -> list[str]:
  task_sets = [set(v) for v in counts.values()]
  if not task_sets:
    raise ValueError("no conditions")
  if any(s != task_sets[0] for s in task_sets):
    raise ValueError("all conditions must cover the same tasks (curves and tests pair by task)")
  return sorted(task_sets[0])


def counts_from_rows(rows: Sequence[dict], condition_key: str = "condition",
                     task_key: str = "task_id", success_key: str = "success") -> dict:
  """Per-condition, per-task (n, c) from episode rows."""
  out: dict[str, dict[str, list[int]]] = {}
  for r in rows:
    nc = out.setdefault(str(r[condition_key]), {}).setdefault(str(r[task_key]), [0, 0])
    nc[0] += 1
    nc[1] += int(bool(r[success_key]))
  return {cond: {t: (n, c) for t, (n, c) in tasks.items()} for cond, tasks in out.items()}


def _matrix(counts: Mapping[str, tuple[int, int]], tasks: Sequence[str],
            ks: Sequence[int]) -> np.ndarray:
  """[tasks, ks] per-task unbiased pass@k."""
  return np.array([[stats.pass_at_k(*counts[t], k) for k in ks] for t in tasks])


def pass_at_k_curves(counts: Counts, ks: Sequence[int] = DEFAULT_KS) -> dict[str, np.ndarray]:
  """condition -> [len(ks)] mean pass@k over tasks (fractions, not percent)."""
  tasks = _tasks(counts)
  return {cond: _matrix(c, tasks, ks).mean(axis=0) for cond, c in counts.items()}


def bootstrap_bands(counts: Counts, ks: Sequence[int] = DEFAULT_KS, n_resamples: int = 10_000,
                    seed: int = 0, level: float = 0.95) -> dict[str, np.ndarray]:
  """condition -> [2, len(ks)] (lo, hi) task-bootstrap band; identical task draws across
  conditions (drawn once from `seed`)."""
  tasks = _tasks(counts)
  idx = np.random.default_rng(seed).integers(0, len(tasks), size=(n_resamples, len(tasks)))
  alpha = (1.0 - level) / 2.0
  out = {}
  for cond, c in counts.items():
    per_task = _matrix(c, tasks, ks)                     # [T, K]
    draws = per_task[idx].mean(axis=1)                   # [R, K]
    out[cond] = np.quantile(draws, [alpha, 1.0 - alpha], axis=0)
  return out


def solved(counts: Mapping[str, tuple[int, int]], tasks: Sequence[str]) -> np.ndarray:
  """Per-task indicator: solved at least once (c > 0) among its attempts."""
  return np.array([counts[t][1] > 0 for t in tasks])


def coverage_tests(counts: Counts) -> list[dict]:
  """Pairwise exact McNemar tests on per-task solved/unsolved at pass@n, Holm-adjusted over all
  pairs. Every task of every condition must have the same n (the k of "pass@k" tested).

  only_a counts tasks solved by condition a only, only_b by b only.
  """
  tasks = _tasks(counts)
  ns = {n for c in counts.values() for n, _ in c.values()}
  if len(ns) != 1:
    raise ValueError(f"coverage tests need the same number of attempts everywhere, got {sorted(ns)}")
  k = ns.pop()
  rows = []
  for a, b in itertools.combinations(list(counts), 2):
    sa, sb = solved(counts[a], tasks), solved(counts[b], tasks)
    only_a, only_b = int(np.sum(sa & ~sb)), int(np.sum(~sa & sb))
    rows.append({"a": a, "b": b, "k": k, "solved_a": int(sa.sum()), "solved_b": int(sb.sum()),
                 "only_a": only_a, "only_b": only_b, "p": stats.mcnemar_exact(only_a, only_b)})
  if rows:
    for r, p_adj in zip(rows, stats.holm([r["p"] for r in rows])):
      r["p_holm"] = float(p_adj)
  return rows


def plot_pass_at_k(curves: Mapping[str, np.ndarray], bands: Mapping[str, np.ndarray] | None,
                   path: str, ks: Sequence[int] = DEFAULT_KS, title: str = "",
                   n_tasks: int | None = None) -> str:
  """Writes a PNG of pass@k (percent) against k (log2 axis) with shaded bands; returns `path`.

  Args:
    curves: condition -> [len(ks)] mean pass@k (fractions).
    bands: condition -> [2, len(ks)] (lo, hi) band (fractions), or None for no bands.
    path: the PNG file to write.
    ks: the k of each curve point.
    title: the figure title.
    n_tasks: tasks behind every point (written in the legend).
  """
  fig, ax = plots.figure(5.5, 3.8)
  for cond, curve in curves.items():
    band = None if bands is None or cond not in bands else 100 * np.asarray(bands[cond])
    plots.curve_with_band(ax, list(ks), 100 * np.asarray(curve),
                          None if band is None else band[0], None if band is None else band[1],
                          label=cond, n=n_tasks)
  ax.set_xscale("log", base=2)
  ax.set_xticks(list(ks), [str(k) for k in ks])
  ax.minorticks_off()
  ax.set_xlabel("attempts per task k (log scale)")
  ax.set_ylabel("pass@k (% of tasks)")
  ax.set_ylim(-3, 103)        # a curve at 0% or 100% stays visible off the axis spines
  band_note = "shaded: 95% task-bootstrap band" if bands is not None else ""
  ax.set_title("\n".join(t for t in (title, band_note) if t), fontsize=9)
  ax.grid(alpha=0.3)
  ax.legend(fontsize=7, frameon=False, loc="best",
            title="condition (n = tasks)" if n_tasks else None,
            title_fontsize=7)
  return plots.save(fig, path)


def domain_pass_at_1(counts: Mapping[str, tuple[int, int]], domain_of) -> dict[str, float]:
  """Mean pass@1 (percent) per domain; `domain_of(task_id) -> str`."""
  by: dict[str, list[float]] = {}
  for t, (n, c) in counts.items():
    by.setdefault(domain_of(t), []).append(stats.pass_at_k(n, c, 1))
  return {d: 100.0 * float(np.mean(v)) for d, v in sorted(by.items())}
