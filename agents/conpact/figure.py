"""The ConPAct demo figure: per env, success per condition with CIs, and initial vs residual D.

One row of two panels per env, drawn with `lib.report.plots.bar_with_ci` (CI error bars, n and the
value above every bar, zero bars visible): (left) success rate (= avg@k, equal rollouts per
instance) per condition with its 95% cluster-bootstrap CI, n = episodes; (right) initial D (share of
comparable checks with a contradiction, n = comparable checks) and residual D (share of contradicted
checks still contradicted after discussion, n = contradicted checks), for the conditions that ran
planner-actor checks; a condition without a comparable check has no D: its bars read "n=0".
"""
import math
from typing import Sequence

from matplotlib.figure import Figure

from lib.report import plots


def _pct(v) -> float:
  return math.nan if v is None else 100.0 * v


def plot_demo(table: Sequence[dict], path: str, title: str, k: int) -> str:
  """Writes the demo figure as a PNG.

  Args:
    table: summary rows (metrics.summarize + env, condition): success, success_ci (lo, hi),
      episodes, checks, D_step, comparable, residual_D, contradicted.
    path: output PNG path.
    title: figure title (says whether numbers come from a scripted policy or a model).
    k: rollouts per instance (success rate = avg@k).
  Returns:
    `path`.
  """
  envs = list(dict.fromkeys(r["env"] for r in table))
  fig = Figure(figsize=(13, 4.2 * len(envs)), dpi=plots.DPI)
  axes = fig.subplots(len(envs), 2, squeeze=False)
  for (ax_s, ax_d), env in zip(axes, envs):
    rows = [r for r in table if r["env"] == env]
    names = [r["condition"] for r in rows]
    success = plots.Bars(None, [_pct(r["success"]) for r in rows],
                         [_pct(r["success_ci"][0]) for r in rows],
                         [_pct(r["success_ci"][1]) for r in rows], [r["episodes"] for r in rows])
    plots.bar_with_ci(ax_s, names, [success], ylabel=f"success = avg@{k} (% of episodes)",
                      title=f"{env}: task success (95% cluster-bootstrap CI, n = episodes)")
    checked = [r for r in rows if r["checks"]] or rows  # one-role methods have no checks
    no_ci = [math.nan] * len(checked)
    initial = plots.Bars("initial D (% of comparable checks)",
                         [_pct(r["D_step"]) for r in checked], no_ci, no_ci,
                         [r["comparable"] for r in checked])
    residual = plots.Bars("residual D (% of contradicted checks)",
                          [_pct(r["residual_D"]) for r in checked], no_ci, no_ci,
                          [r["contradicted"] for r in checked])
    plots.bar_with_ci(ax_d, [r["condition"] for r in checked], [initial, residual],
                      ylabel="mismatch D (% of checks)",
                      title=f"{env}: planner-actor mismatch (conditions with checks)")
  fig.suptitle(title, fontsize=10)
  return plots.save(fig, path)
