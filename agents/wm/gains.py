"""Where the gains come from: the audit's content-vs-optimisation (world knowledge vs coverage /
exploration) attribution, made an explicit decomposition.

The audit (sections 3.1-3.2, 6) reads its controls as follows: GT - BASE is the overall training
gain; MIS keeps the prediction task, reward form and optimiser but breaks the content, so
MIS - BASE is what training does without correct world knowledge and GT - MIS is what correct
observation content adds; COIN removes environment information from the reward altogether, so
COIN - BASE is the zero-information training effect; PERM breaks the score-to-prediction pairing.
It reports these at pass@1 ("selection") and at pass@64 ("coverage") and concludes that content
mainly improves selection while coverage expands without it. The paper gives no formula; ours:

For a metric m (mean over tasks of the unbiased pass@k; pass@1 = selection, pass@K = coverage with
K the largest k every task allows) and a family (GRPO: GT = GRPO-GT, MIS = GRPO-MIS; OPSD:
GT = OPSD-GT, MIS = OPSD-MIS):

  total       = m(GT)  - m(BASE)
  training    = m(MIS) - m(BASE)      optimisation / exploration without correct content
  knowledge   = m(GT)  - m(MIS)       world knowledge: what correct content adds
              total = training + knowledge  (exactly, by construction)
  zero-info   = m(GRPO-COIN) - m(BASE)        (GRPO family only)
  pairing     = m(GRPO-GT) - m(GT-PERM)       (GRPO family only: score-prediction pairing)
  knowledge share = knowledge / total         (null when an input is missing, or when the 95%
                                              interval of total contains 0: a ratio over a
                                              total indistinguishable from 0 is noise)

Every difference is in percentage points with a paired task-bootstrap 95% interval
(`agents.wm.paired.passk_differences`: seeds paired, tasks resampled). A missing condition gives
null, never 0.
"""
from typing import Mapping, Sequence

from matplotlib.ticker import MaxNLocator

from agents.wm import paired
from lib.report import plots

FAMILIES = {"GRPO": ("GRPO-GT", "GRPO-MIS"), "OPSD": ("OPSD-GT", "OPSD-MIS")}
EFFECTS = ("total", "training", "knowledge", "zero-info", "pairing")


def _pairs(family: str, reference: str = "BASE") -> dict[str, tuple[str, str]]:
  gt, mis = FAMILIES[family]
  out = {"total": (gt, reference), "training": (mis, reference), "knowledge": (gt, mis)}
  if family == "GRPO":
    out.update({"zero-info": ("GRPO-COIN", reference), "pairing": ("GRPO-GT", "GT-PERM")})
  return out


def decompose(counts: paired.Counts, ks: Sequence[int], n_resamples: int = 10_000,
              seed: int = 0, reference: str = "BASE") -> list[dict]:
  """Rows {"family", "k", "metric", "effect", "a", "b", "diff", "lo", "hi", "tasks"} for each
  family, each k in `ks` (typically (1, K)) and each effect, plus a "knowledge share" row (diff =
  knowledge / total as a fraction, no interval).

  Args:
    counts: seed -> condition -> task -> (n, c), one (env, regime).
    ks: the pass@k levels to decompose.
    n_resamples, seed: the task bootstrap.
    reference: the untrained condition.
  """
  present = {c for s in counts.values() for c in s}
  out = []
  for family in FAMILIES:
    effects = _pairs(family, reference)
    todo = [p for p in effects.values() if set(p) <= present]
    diffs = {(r["a"], r["b"], r["k"]): r
             for r in paired.passk_differences(counts, todo, ks, n_resamples, seed)}
    for k in ks:
      metric = "selection" if k == 1 else "coverage"
      got = {}
      for effect, (a, b) in effects.items():
        r = diffs.get((a, b, k), {})
        got[effect] = r.get("diff")
        out.append({"family": family, "k": k, "metric": metric, "effect": effect, "a": a,
                    "b": b, "diff": r.get("diff"), "lo": r.get("lo"), "hi": r.get("hi"),
                    "tasks": r.get("tasks")})
      tot = diffs.get((*effects["total"], k), {})
      total, know = got["total"], got["knowledge"]
      share = None
      if total is not None and know is not None and total != 0:
        share = None if tot["lo"] <= 0 <= tot["hi"] else know / total
      out.append({"family": family, "k": k, "metric": metric, "effect": "knowledge share",
                  "a": None, "b": None, "diff": share, "lo": None, "hi": None,
                  "tasks": tot.get("tasks")})
  return out


def plot_decomposition(rows: Sequence[Mapping], path: str, title: str = "") -> str:
  """Bars of each measured effect (percentage points, 95% task-bootstrap error bars, n = tasks)
  per family x metric; effects without their conditions are left out (listed under the panel),
  panels without any measured effect are dropped. Returns `path`."""
  shown = [r for r in rows if r["effect"] in EFFECTS]
  groups = sorted({(r["family"], r["k"], r["metric"]) for r in shown if r["diff"] is not None},
                  key=lambda g: (g[0], g[1]))
  fig, axes = plots.figure(4.0 * max(len(groups), 1), 3.6, ncols=max(len(groups), 1))
  axes = [axes] if len(groups) <= 1 else list(axes)
  for ax, (family, k, metric) in zip(axes, groups):
    part = [r for r in shown if (r["family"], r["k"], r["metric"]) == (family, k, metric)]
    sel = [r for r in part if r["diff"] is not None]
    missing = [r["effect"] for r in part if r["diff"] is None]
    bars = plots.Bars(None, [r["diff"] for r in sel], [r["lo"] for r in sel],
                      [r["hi"] for r in sel], [r["tasks"] for r in sel])
    span = max([abs(v) for r in sel for v in (r["lo"], r["hi"], r["diff"])] + [1.0])
    plots.bar_with_ci(ax, [r["effect"] for r in sel], [bars], value_format="{:+.1f}",
                      ylabel="pass@k difference (pp)", ymax=span,
                      xlabel=f"not measured: {', '.join(missing)}" if missing else "",
                      title=f"{family}: pass@{k} ({metric})")
    ax.set_ylim(-span * 1.35, span * 1.35)
    ax.yaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
    ax.axhline(0, color="0.3", linewidth=0.8)
  if title:
    fig.suptitle(title + "; error bars: paired task-bootstrap 95%, n = tasks", fontsize=9)
  return plots.save(fig, path)
