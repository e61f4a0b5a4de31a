"""The ConPAct demo figure: per env, success per condition with CIs, and initial vs residual D.

One row of two panels per env: (left) success rate (= avg@k, equal rollouts per instance) per
condition with its 95% cluster-bootstrap CI and the number of episodes per bar; (right) initial D
(share of comparable checks with a contradiction) and residual D (share of contradicted checks
still contradicted after discussion), each bar labelled with its value and n; conditions without a
comparable check show "n/a". Horizontal bars so condition names stay readable; every bar carries a
text label, so zero bars are visible.
"""
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure


def _label(ax, y, value, n: int, right_of: float | None = None) -> None:
  """Value and n beside a bar (right of its error bar when given); a zero bar gets a visible tick
  at 0 so it reads as measured-zero, not missing."""
  text = "n/a" if value is None else f"{100 * value:.0f}% (n={n})"
  x = 0.0 if value is None else 100 * value
  if value == 0:
    ax.plot([0], [y], marker="|", markersize=9, markeredgewidth=2, color="black")
  ax.text(max(x, right_of or 0.0) + 1.5, y, text, va="center", fontsize=7)


def plot_demo(table: Sequence[dict], path: str, title: str, k: int) -> str:
  """Writes the demo figure as a PNG.

  Args:
    table: summary rows (metrics.summarize + env, condition): success, success_ci (lo, hi),
      rollouts, D_step, comparable, residual_D, contradicted.
    path: output PNG path.
    title: figure title (says whether numbers come from a scripted policy or a model).
    k: rollouts per instance (success rate = avg@k).
  Returns:
    `path`.
  """
  envs = list(dict.fromkeys(r["env"] for r in table))
  height = max(len([r for r in table if r["env"] == e]) for e in envs)
  fig = Figure(figsize=(12, 0.45 * height * len(envs) + 1.6 * len(envs)), layout="constrained")
  axes = fig.subplots(len(envs), 2, squeeze=False)
  for (ax_s, ax_d), env in zip(axes, envs):
    rows = [r for r in table if r["env"] == env]
    names = [r["condition"] for r in rows]
    y = np.arange(len(rows))
    succ = np.array([100 * r["success"] for r in rows])
    lo = np.array([100 * r["success_ci"][0] for r in rows])
    hi = np.array([100 * r["success_ci"][1] for r in rows])
    ax_s.barh(y, succ, xerr=[succ - lo, hi - succ], color="tab:blue", capsize=3,
              edgecolor="black", linewidth=0.5)
    for i, r in enumerate(rows):
      _label(ax_s, i, r["success"], r["rollouts"], right_of=hi[i])
    ax_s.set(yticks=y, yticklabels=names, xlim=(0, 130), title=f"{env}: task success",
             xlabel=f"success rate = avg@{k} (% of episodes, n per bar; 95% cluster-bootstrap CI)")
    ax_s.invert_yaxis()
    h = 0.38
    init = [r["D_step"] for r in rows]
    resid = [r["residual_D"] for r in rows]
    ax_d.barh(y - h / 2, [100 * v if v is not None else 0 for v in init], h, color="tab:orange",
              edgecolor="black", linewidth=0.5, label="initial D (of comparable checks)")
    ax_d.barh(y + h / 2, [100 * v if v is not None else 0 for v in resid], h, color="tab:gray",
              edgecolor="black", linewidth=0.5, label="residual D (of contradicted checks)")
    for i, r in enumerate(rows):
      _label(ax_d, i - h / 2, r["D_step"], r["comparable"])
      _label(ax_d, i + h / 2, r["residual_D"], r["contradicted"])
    ax_d.set(yticks=y, yticklabels=names, xlim=(0, 130), title=f"{env}: planner-actor mismatch",
             xlabel="mismatch D (% of checks, n per bar)")
    ax_d.invert_yaxis()
    ax_d.legend(loc="upper right", fontsize=7)
  fig.suptitle(title)
  fig.savefig(path, dpi=120)
  return path
